"""Do the budgets bound?  A script, not a test.

    python benchmarks/budgets.py [--only NAME] [--skip-large]

Each spec is evaluated in a fresh Python process, so that its peak resident memory
(``resource.getrusage``'s ``ru_maxrss`` of that process) is its own.  For each it prints
the CPU time of ``privspec.evaluate`` against the time budget (target: at most 2), and the
memory estimate (``privspec.numerics.cost.process_estimate``: the interpreter and
libraries, plus the largest estimate of the computation's last attempt) against the
measured peak (target: 1.0 to 1.5; below 1 the budget would not be a bound).  Both
ratios are taken within the same run, so they travel between machines; reading and
validating the spec is timed apart (the budgets cover the evaluation).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HEAD = {"privspec": 1, "unit": "one person", "neighbouring": "add-or-remove"}


def _compose(stages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"compose": [{"mechanism": stage} for stage in stages]}


def _dpsgd(z: float, batch: int, size: int, steps: int) -> dict[str, Any]:
    return {"dpsgd": {"noise_multiplier": z, "batch_size": batch, "dataset_size": size,
                      "steps": steps}}


def _discrete_laplace(count: int) -> dict[str, Any]:
    """Issue 27's distinct discrete Laplace stages: scale about 9 × 10⁵, Δ = 999,999."""
    return _compose([{"discrete_laplace": {"scale": 900_000.0 + 17 * i,
                                           "sensitivity": 999_999}} for i in range(count)])


def _sampled_laplace(rate: float, steps: int) -> dict[str, Any]:
    return {"repeat": {"count": steps, "mechanism": {"poisson_sampled": {
        "sampling_rate": rate, "mechanism": {"laplace": {"scale": 1.0}}}}}}


def _example(name: str) -> dict[str, Any]:
    from privspec.spec.loader import load_yaml_text

    return load_yaml_text((ROOT / "examples" / name).read_text(encoding="utf-8"))


#: (name, spec data or example file, memory budget GiB, time budget s, large)
CASES: list[tuple[str, Any, float, float, bool]] = [
    ("DP-SGD example (CIFAR-10)", "cifar10-dpsgd-eps8.privspec.yaml", 1, 60, False),
    ("census DHC 2020 (80 discrete Gaussians)", "census-dhc-2020.privspec.yaml", 1, 60, False),
    ("mixed pipeline example", "mixed-pipeline.privspec.yaml", 1, 60, False),
    ("user-level DP-FedAvg (z 1, 100 of 342,477, 1,000 rounds)",
     _dpsgd(1.0, 100, 342_477, 1000), 1, 60, False),
    ("the same, --memory-budget 8", _dpsgd(1.0, 100, 342_477, 1000), 8, 60, False),
    ("sampled Laplace (q 0.001, 10,000 steps)", _sampled_laplace(0.001, 10_000), 1, 60, False),
    ("sampled discrete Gaussian (σ 2,000, Δ 1,000, q 0.01, 100 steps)",
     {"repeat": {"count": 100, "mechanism": {"poisson_sampled": {"sampling_rate": 0.01,
      "mechanism": {"discrete_gaussian": {"sigma": 2000.0, "sensitivity": 1000}}}}}},
     1, 60, False),
    ("5 discrete Laplace stages, --time-budget 1", _discrete_laplace(5), 1, 1, False),
    ("30 discrete Laplace stages, --time-budget 1", _discrete_laplace(30), 1, 1, False),
    ("30 discrete Laplace stages, defaults", _discrete_laplace(30), 1, 60, False),
    ("12,000 discrete Laplace stages, --time-budget 1", _discrete_laplace(12_000), 1, 1,
     True),
    ("400 DP-SGD stages, distinct rates (z 0.8, 100 steps)",
     _compose([_dpsgd(0.8, 600 + 10 * i, 60_000, 100) for i in range(400)]), 1, 60, True),
    ("400 DP-SGD stages, distinct rates, --time-budget 5",
     _compose([_dpsgd(0.8, 600 + 10 * i, 60_000, 100) for i in range(400)]), 1, 5, True),
]


def child(name: str) -> None:
    """Evaluate one case in this process and print what was measured, as JSON."""
    import privspec
    from privspec.errors import EvaluationError
    from privspec.numerics import cost
    from privspec.spec.loader import load_spec_text

    _, data, memory, seconds, _ = next(case for case in CASES if case[0] == name)
    data = _example(data) if isinstance(data, str) else {**HEAD, "title": name,
                                                           "mechanism": data}
    start = time.process_time()
    spec = load_spec_text(json.dumps(data))  # (JSON is YAML, and compact: 12,000 stages fit)
    read = time.process_time() - start
    start = time.process_time()
    try:
        report = privspec.evaluate(spec, memory_budget=memory, time_budget=seconds,
                                  cache=False)  # (a cached report computes nothing)
        outcome = (f"h = {report.accounting.discretization:g}; "
                   + (", ".join(w.code for w in report.warnings) or "no caveat"))
    except EvaluationError as error:
        outcome = f"refused: {error}"[:80]
    used = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0  # (KiB on Linux)
    print(json.dumps({"read": read, "seconds": used, "budget": seconds,
                      "estimate": cost.process_estimate(cost.last_peak()), "peak": peak,
                      "outcome": outcome}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--only", help="run the cases whose name contains this")
    parser.add_argument("--skip-large", action="store_true",
                        help="skip the cases marked large (12,000 and 400 stages)")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    print("| case | read s | CPU s | time / budget | estimate MiB | peak MiB "
          "| estimate / peak | outcome |")
    print("|---|---|---|---|---|---|---|---|")
    for name, _, _, _, large in CASES:
        if (args.only and args.only not in name) or (large and args.skip_large):
            continue
        run = subprocess.run([sys.executable, __file__, "--child", name], check=True,
                             capture_output=True, text=True)
        got = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"| {name} | {got['read']:.2f} | {got['seconds']:.2f} "
              f"| {got['seconds'] / got['budget']:.2f} | {got['estimate'] / 2**20:,.0f} "
              f"| {got['peak'] / 2**20:,.0f} | {got['estimate'] / got['peak']:.2f} "
              f"| {got['outcome']} |", flush=True)


if __name__ == "__main__":
    main()
