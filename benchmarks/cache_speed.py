"""A command on an unchanged spec, reading the report cache, next to the same command
evaluating the spec (issue 29: at most 0.2×).

Runs ``privspec render`` of the CIFAR-10 example as whole processes, in alternating
pairs (``--no-cache``, then with a warm cache in a temporary ``PRIVSPEC_CACHE_DIR``), and
prints each median and the median of the pairs' ratios: the ratio, measured in one run,
is what to compare across machines::

    python benchmarks/cache_speed.py            # 5 pairs
    python benchmarks/cache_speed.py --pairs 11
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
TARGET = 0.2


def _seconds(arguments: list[str], environment: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privspec.cli", *arguments], check=True,
                   env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="alternating runs of each")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        environment = {**os.environ, "PRIVSPEC_CACHE_DIR": folder, "PYTHONPATH": str(ROOT)}
        environment.pop("PRIVSPEC_NO_CACHE", None)
        render = ["render", str(EXAMPLE), "-o", str(Path(folder) / "report.md")]
        _seconds(render, environment)  # fills the cache, warms the file cache
        uncached, cached = [], []
        for _ in range(args.pairs):
            uncached.append(_seconds(["--no-cache", *render], environment))
            cached.append(_seconds(render, environment))
    ratio = statistics.median(c / u for c, u in zip(cached, uncached, strict=True))
    print(f"{'privspec render (CIFAR-10 example)':<42} {'median':>8}")
    print(f"{'  evaluating the spec (--no-cache)':<42} {statistics.median(uncached):7.2f}s")
    print(f"{'  reading the report cache':<42} {statistics.median(cached):7.2f}s")
    print(f"cached / uncached: {ratio:.2f}x (median of {args.pairs} pairs; target <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
