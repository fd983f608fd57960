"""How long an audit of 10⁶ scores takes, next to numpy sorting them.

Times, alternating and several times each: ``np.sort`` of the 10⁶ scores; the audit's
statistics (thresholds, boxes, bounds, contradictions against a certified curve); and
the audit as the command runs it without the evaluation (reading an NPZ file and a CSV
file, hashing, statistics). Prints medians and ratios to the sort (issue 31's target
for the statistics: at most 3), and the files' ratios on one line::

    python benchmarks/audit_speed.py            # 7 runs of each
    python benchmarks/audit_speed.py --runs 11

The machine may be busy: compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from privspec.numerics.audit import CertifiedCurve, audit
from privspec.numerics.gdp import gaussian_tpr
from privspec.workflows.audit import read_scores

SCORES = 1_000_000
TARGET = 3.0


def _seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each (≥ 5)")
    runs = max(5, parser.parse_args(argv).runs)
    rng = np.random.default_rng(0)
    members, non_members = rng.normal(1.0, 1.0, SCORES // 2), rng.normal(0.0, 1.0, SCORES // 2)
    pooled = np.concatenate([members, non_members])
    alpha = np.logspace(-12, 0, 312)
    certified = CertifiedCurve(alpha, gaussian_tpr(alpha, 1.0), 1.0, 1e-12)
    folder = Path(tempfile.mkdtemp())
    np.savez(folder / "scores.npz", **{"in": members, "out": non_members})
    lines = [f"{x!r},1" for x in members.tolist()] + [f"{x!r},0" for x in non_members.tolist()]
    (folder / "scores.csv").write_text("score,member\n" + "\n".join(lines) + "\n")

    def statistics_only() -> None:
        audit(members, non_members).contradictions(certified)

    def from_file(name: str) -> Callable[[], None]:
        def run() -> None:
            scores = read_scores(str(folder / name))
            audit(scores.members, scores.non_members).contradictions(certified)
        return run

    work = {"np.sort of the scores": lambda: np.sort(pooled),
            "audit statistics": statistics_only,
            "audit of an NPZ file (read, hash, statistics)": from_file("scores.npz"),
            "audit of a CSV file (read, hash, statistics)": from_file("scores.csv")}
    times: dict[str, list[float]] = {name: [] for name in work}
    for run in range(runs):
        order = list(work) if run % 2 == 0 else list(reversed(work))
        for name in order:
            times[name].append(_seconds(work[name]))
    medians = {name: statistics.median(seconds) for name, seconds in times.items()}
    base = medians["np.sort of the scores"]
    print(f"{SCORES:,} scores, medians of {runs} alternating runs")
    for name, seconds in medians.items():
        print(f"{name:<48} {seconds * 1000:8.1f}ms  {seconds / base:6.2f}x")
    ratio = medians["audit statistics"] / base
    print(f"audit statistics / np.sort: {ratio:.2f}x (target <= {TARGET})")
    files = {form: medians[f"audit of a{'n' if form == 'NPZ' else ''} {form} file (read, hash, "
                           "statistics)"] / base for form in ("NPZ", "CSV")}
    print(f"audit of a file / np.sort: CSV {files['CSV']:.1f}x, NPZ {files['NPZ']:.1f}x "
          "(CSV: numpy's parser, one correctly rounded conversion per score)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
