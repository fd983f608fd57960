"""``privspec sweep`` on a 16-point DP-SGD grid: --workers 2 against --workers 1, and the
pool's cost per point against evaluating the same points in one process.  A script, not
a test.

    python benchmarks/sweep_speed.py [--repeats N]

Every run is a whole process with the report cache off (``PRIVSPEC_NO_CACHE=1``); the
in-process baseline evaluates the 16 points one after the other in one process with one
BLAS/OpenMP thread (as the pool's workers have), timed from the start of the process
and, separately, from after its imports.  Medians of the ratios of N repeats (a shared
machine's slow spells then hit both sides of a ratio).  Targets (issue 33): speed-up
≥ 1.7, overhead ≤ 10 %.

Also printed, the ceilings of the speed-up: the machine's (two plain processes of 8
points against one of 16) and Amdahl's (what ``--workers 1`` spends outside the
evaluations, chiefly importing the numerical stack, which every worker needs before its
first point, cannot be parallelised).
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
DPSGD = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
GRID = ["--vary", "noise_multiplier=1.0,1.2,1.5,2.0", "--vary", "batch_size=512,1024,2048,4096"]
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                     "MKL_NUM_THREADS")}
IN_PROCESS = """
import sys, time
from privspec.spec.loader import load_yaml_text
from privspec.workflows.sweep import evaluate_point, parse_axes, points
import privspec.report.evaluation  # the numerical stack, imported before the clock starts
data = load_yaml_text(open(sys.argv[1]).read())
part, parts = int(sys.argv[2]), int(sys.argv[3])
grid = points(data, parse_axes(data, sys.argv[4:]), (None, None))[part::parts]
start = time.perf_counter()
rows = [evaluate_point(point, (None, None), cache=False) for point in grid]
assert all(row["status"] == "ok" for row in rows), rows
print(time.perf_counter() - start)
"""


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PRIVSPEC_NO_CACHE": "1"}


def sweep_seconds(workers: int, folder: str) -> float:
    """Wall time of ``privspec sweep --workers N`` on the grid, as a process."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privspec", "--quiet", "sweep", str(DPSGD), *GRID,
                    "-o", os.path.join(folder, f"w{workers}.csv"), "--workers", str(workers)],
                   env=_environment(), check=True)
    return time.perf_counter() - start


def _in_process(part: int, parts: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", IN_PROCESS, str(DPSGD), str(part),
                             str(parts), *GRID[1::2]], env={**_environment(), **ONE_THREAD},
                            stdout=subprocess.PIPE, text=True)


def in_process_seconds() -> tuple[float, float]:
    """The 16 evaluations in one process (one thread): its wall time, and the
    evaluations' alone (after the imports)."""
    start = time.perf_counter()
    out, _ = _in_process(0, 1).communicate()
    return time.perf_counter() - start, float(out)


def machine_seconds() -> float:
    """Two such processes of 8 points each, side by side: what this machine gives two
    processes at this moment, without privspec's pool (the speed-up's ceiling)."""
    start = time.perf_counter()
    halves = [_in_process(part, 2) for part in (0, 1)]
    for half in halves:
        half.communicate()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    one, two, whole, alone, speedups, overheads, ceilings, amdahl = [], [], [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):  # each repeat's ratios compare runs a minute apart at most
            process, evaluations = in_process_seconds()
            one.append(sweep_seconds(1, folder))
            two.append(sweep_seconds(2, folder))
            whole.append(process)
            alone.append(evaluations)
            speedups.append(one[-1] / two[-1])
            overheads.append((one[-1] - process) / evaluations)
            ceilings.append(process / machine_seconds())
            # Amdahl: what --workers 1 spends outside the evaluations (start, imports,
            # pool) stays serial; the evaluations at best halve.
            amdahl.append(one[-1] / (one[-1] - evaluations + evaluations / 2))
    print(f"16 in-process evaluations (1 thread)   {statistics.median(whole):6.2f} s as a "
          f"process, {statistics.median(alone):6.2f} s after its imports")
    print(f"privspec sweep --workers 1             {statistics.median(one):6.2f} s")
    print(f"privspec sweep --workers 2             {statistics.median(two):6.2f} s")
    print(f"speed-up --workers 2 / --workers 1:    {statistics.median(speedups):.2f}x "
          "(target >= 1.7)")
    print(f"the machine's own: 2 processes x 8 points / 1 x 16: {statistics.median(ceilings):.2f}x"
          " (no pool: the ceiling of the speed-up now)")
    print(f"Amdahl's bound: --workers 1's time outside the evaluations kept, the evaluations "
          f"halved: {statistics.median(amdahl):.2f}x (the most two perfect cores could give)")
    print(f"pool overhead per point, vs the in-process run as a process: "
          f"{statistics.median(overheads):+.1%} (target <= 10 %)")
    print(f"medians of the ratios of {repeats} repeats; report cache off; each ratio: "
          + ", ".join(f"{a:.2f}x/{b:+.0%}" for a, b in zip(speedups, overheads, strict=True)))


if __name__ == "__main__":
    main()
