"""How long ``privspec validate`` takes to start, next to a bare interpreter.

Runs each command several times, interleaved so that all see the same machine
state, and prints the best and median wall time and the ratio to
``python -c pass`` measured in the same run::

    python benchmarks/import_time.py            # 15 rounds
    python benchmarks/import_time.py --rounds 50

``privspec validate`` must not import numpy, scipy or dp-accounting; the last
row (importing the numerical stack) shows what that saves.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import privspec.cli": [sys.executable, "-c", "import privspec.cli"],
    "privspec validate (one example)": [
        sys.executable, "-m", "privspec.cli", "validate", "-q", str(EXAMPLE)],
    "import numpy, scipy.stats, dp_accounting": [
        sys.executable, "-c", "import numpy, scipy.stats, dp_accounting"],
}


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="runs of each command")
    args = parser.parse_args(argv)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for command in COMMANDS.values():  # warm the file cache
        with contextlib.suppress(subprocess.CalledProcessError):
            _time(command)
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            try:
                samples[name].append(_time(command))
            except subprocess.CalledProcessError:
                samples[name] = []
    base = min(samples["python -c pass"])
    print(f"{'command':<42} {'best':>8} {'median':>8} {'best / python -c pass':>22}")
    for name, times in samples.items():
        if not times:
            print(f"{name:<42} {'failed':>8}")
            continue
        best, median = min(times), statistics.median(times)
        print(f"{name:<42} {best * 1000:7.0f}ms {median * 1000:7.0f}ms {best / base:21.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
