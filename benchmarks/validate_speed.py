"""How long ``privspec validate`` takes as a whole process, next to importing what it
cannot do without (pydantic and PyYAML).

Runs both commands in alternating order, several times each, and prints the median of
each and their ratio (issue 29's target: at most 1.5)::

    python benchmarks/validate_speed.py            # 9 runs of each
    python benchmarks/validate_speed.py --runs 21

The machine may be busy: compare the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"

BASELINE = [sys.executable, "-c", "import pydantic, yaml"]
VALIDATE = [sys.executable, "-m", "privspec.cli", "validate", "-q", str(EXAMPLE)]
TARGET = 1.5


def _seconds(command: list[str]) -> float:
    """Wall time of one run of ``command`` (which must succeed)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (≥ 7)")
    runs = max(7, parser.parse_args(argv).runs)
    _seconds(BASELINE), _seconds(VALIDATE)  # warm the file cache
    baseline: list[float] = []
    validate: list[float] = []
    for run in range(runs):  # alternate which goes first, so neither gains from order
        pair = ((BASELINE, baseline), (VALIDATE, validate))
        for command, times in pair if run % 2 == 0 else reversed(pair):
            times.append(_seconds(command))
    base, own = statistics.median(baseline), statistics.median(validate)
    print(f"{'command':<44} {'median':>8}")
    for name, seconds in (("python -c 'import pydantic, yaml'", base),
                          ("privspec validate (CIFAR-10 example)", own)):
        print(f"{name:<44} {seconds * 1000:6.0f}ms")
    print(f"validate / import pydantic, yaml: {own / base:.2f}x "
          f"(medians of {runs} alternating runs; target <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
