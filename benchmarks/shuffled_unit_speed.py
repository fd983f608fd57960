"""How long ``privspec --no-cache render`` takes for shuffled DP-SGD whose unit holds
k > 1 records, next to the same spec with k = 1.

The report of a unit adds a row to its group table for each of 1, 2, 4, … records, and
the shuffled-batch caveat compares with what Poisson accounting would claim; that claim
for a whole unit (a mixture of Gaussians) took 30 to 60 s, so the caveat now gives one
record's.  Runs whole processes in alternating order, several times each, and prints
the medians and the ratios to k = 1::

    python benchmarks/shuffled_unit_speed.py            # 5 runs of each
    python benchmarks/shuffled_unit_speed.py --runs 9

The machine may be busy: compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = """privspec: 1
title: Shuffled DP-SGD, a unit of {records} records
unit: one example
neighbouring: zero-out
records_per_unit: {records}
mechanism:
  dpsgd:
    noise_multiplier: 1.0
    batch_size: 60
    dataset_size: 60000
    steps: 1000
    sampling: shuffled
"""
RECORDS = (1, 4, 8)


def _seconds(spec: Path) -> float:
    """Wall time of one ``privspec --no-cache render`` of ``spec`` (which must succeed)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privspec", "--no-cache", "render", str(spec),
                    "-o", str(spec.with_suffix(".md"))], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each spec (≥ 3)")
    runs = max(3, parser.parse_args(argv).runs)
    with tempfile.TemporaryDirectory(prefix="privspec-shuffled-") as folder:
        specs = {k: Path(folder) / f"unit{k}.privspec.yaml" for k in RECORDS}
        for records, spec in specs.items():
            spec.write_text(SPEC.format(records=records), encoding="utf-8")
        times: dict[int, list[float]] = {k: [] for k in RECORDS}
        for run in range(runs):  # alternate the order, so that none gains from it
            for records in (RECORDS if run % 2 == 0 else tuple(reversed(RECORDS))):
                times[records].append(_seconds(specs[records]))
    medians = {k: statistics.median(seconds) for k, seconds in times.items()}
    print(f"{'privspec --no-cache render, shuffled DP-SGD':<46} {'median':>8} {'ratio':>6}")
    for records, seconds in medians.items():
        print(f"{f'records_per_unit: {records}':<46} {seconds:7.2f}s "
              f"{seconds / medians[1]:5.2f}x")
    print(f"(medians of {runs} alternating runs; ratio: to records_per_unit 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
