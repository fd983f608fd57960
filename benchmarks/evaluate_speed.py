"""How fast privspec is next to the work it cannot avoid: a script, not a test.

    python benchmarks/evaluate_speed.py [--repeats N]

Every number is a median of N repeats and every ratio compares two timings taken in the
same run, so the table travels between machines.  Targets (README.md): (b) ≤ 1.3,
(c) < 2 s, (d) ≤ 1.2, (e) < 1 GiB, (f) ≤ 1.3, (g) ≤ 0.3, (h) ≤ 3.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as plds
from scipy.special import ndtr

import privspec
from privspec.numerics.accounting import account
from privspec.numerics.curve import curve_from_pld
from privspec.numerics.gdp import mu_from_curve, regret
from privspec.spec.loader import load_spec
from privspec.spec.models import Spec

ROOT = Path(__file__).resolve().parent.parent
DPSGD = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
CENSUS = ROOT / "examples" / "census-dhc-2020.privspec.yaml"


def median_time(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired(fn: Callable[[], Any], baseline: Callable[[], Any], repeats: int) -> tuple[float, float, float]:
    """Median times of ``fn`` and ``baseline`` run alternately, and the median of the
    per-pair ratios: a slow spell of a shared machine then hits both sides of a pair."""
    times, bases, ratios = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        middle = time.perf_counter()
        baseline()
        end = time.perf_counter()
        times.append(middle - start)
        bases.append(end - middle)
        ratios.append((middle - start) / (end - middle))
    return statistics.median(times), statistics.median(bases), statistics.median(ratios)


def bare_dpsgd() -> Any:
    return plds.from_gaussian_mechanism(
        9.4, sampling_prob=16384 / 50000, use_connect_dots=True,
        value_discretization_interval=1e-4).self_compose(2000)


def many_gaussians(n: int) -> list[tuple[float, float]]:
    """n distinct (noise multiplier, rate) pairs."""
    rng = np.random.default_rng(0)
    return [(float(s), float(q)) for s, q in zip(rng.uniform(2.0, 6.0, n),
                                                  rng.uniform(0.001, 0.05, n), strict=True)]


def many_spec(pairs: list[tuple[float, float]]) -> Spec:
    return Spec.model_validate({
        "privspec": 1, "title": "many", "unit": "one example", "neighbouring": "add-or-remove",
        "mechanism": {"compose": [
            {"mechanism": {"poisson_sampled": {"sampling_rate": q, "mechanism": {
                "gaussian": {"noise_multiplier": s}}}}} for s, q in pairs]},
        "accounting": {"discretization": 1e-3},
    })


def many_direct(pairs: list[tuple[float, float]]) -> Any:
    result = None
    for s, q in pairs:
        part = plds.from_gaussian_mechanism(s, sampling_prob=q, use_connect_dots=True,
                                            value_discretization_interval=1e-3)
        result = part if result is None else result.compose(part)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--many", type=int, default=1000, help="mechanisms in case (d)")
    parser.add_argument("--no-stages", dest="stages", action="store_false",
                        help="skip case (g), whose baseline takes minutes")
    args = parser.parse_args()
    r = args.repeats
    rows: list[tuple[str, str, str, str]] = []

    # (a) exact regret on a large curve vs one ndtr pass over the same array.
    big = curve_from_pld(bare_dpsgd())
    assert big.alpha.size >= 200_000, big.alpha.size
    mu = mu_from_curve(big, 1e-12)
    t_regret = median_time(lambda: regret(big, mu), r)
    t_ndtr = median_time(lambda: ndtr(big.alpha), r)
    rows.append((f"(a) regret, {big.alpha.size:,} breakpoints", f"{t_regret:.4f} s",
                 f"{t_regret / t_ndtr:.1f}× one ndtr pass ({t_ndtr * 1e3:.2f} ms)", "—"))

    # (b) DP-SGD example end to end vs the bare dp-accounting composition.
    privspec.evaluate(DPSGD)  # warm imports
    t_eval, t_bare, ratio = paired(lambda: privspec.evaluate(DPSGD), bare_dpsgd, 2 * r + 1)
    rows.append(("(b) evaluate(DP-SGD example)", f"{t_eval:.3f} s",
                 f"{ratio:.2f}× bare composition ({t_bare:.3f} s)", "≤ 1.3"))
    # What privspec adds after its own composition (which builds the same PLD faster).
    spec = load_spec(DPSGD)
    t_eval, t_own, ratio = paired(lambda: privspec.evaluate(spec), lambda: account(spec), 2 * r + 1)
    rows.append(("(b′) the same, against privspec's own composition", f"{t_eval:.3f} s",
                 f"{ratio:.2f}× `privspec.numerics.accounting.account` ({t_own:.3f} s)", "—"))

    # (c) census example vs an interpreter start-up and vs the DP-SGD composition.
    t_census = median_time(lambda: privspec.evaluate(CENSUS), r)
    t_python = median_time(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), r)
    rows.append(("(c) evaluate(census DHC 2020, 80 queries)", f"{t_census:.3f} s",
                 f"{t_census / t_python:.1f}× `python -c pass` ({t_python:.3f} s); "
                 f"{t_census / t_bare:.2f}× DP-SGD composition", "< 2 s"))

    # (d) 1,000 distinct Poisson-subsampled Gaussians: privspec vs composing directly.
    pairs = many_gaussians(args.many)
    spec = many_spec(pairs)
    rd = max(1, r // 2)
    t_many, t_direct, ratio = paired(lambda: privspec.evaluate(spec), lambda: many_direct(pairs), rd)
    rows.append((f"(d) evaluate({args.many:,} distinct subsampled Gaussians, h = 1e-3)",
                 f"{t_many:.3f} s", f"{ratio:.2f}× direct compose ({t_direct:.3f} s)", "≤ 1.2"))

    # (f) issue 12's run written three ways, each against dp-accounting's bare composition.
    step = {"noise_multiplier": 1.1, "sampling_rate": 0.004}
    ways = {
        "one stage": {"dpsgd": {**step, "steps": 20000}},
        "2 × 10,000": {"compose": [{"name": n, "mechanism": {"dpsgd": {**step, "steps": 10000}}}
                                   for n in ("a", "b")]},
        "repeat 4 × 5,000": {"repeat": {"count": 4, "mechanism": {"dpsgd": {**step,
                                                                          "steps": 5000}}}},
    }

    def bare_long() -> Any:
        return plds.from_gaussian_mechanism(
            1.1, sampling_prob=0.004, use_connect_dots=True,
            value_discretization_interval=1e-4).self_compose(20000)

    for name, mechanism in ways.items():
        way = Spec.model_validate({"privspec": 1, "title": name, "unit": "one example",
                                   "neighbouring": "add-or-remove", "mechanism": mechanism})
        t_way, t_long, ratio = paired(lambda w=way: privspec.evaluate(w), bare_long, r)
        rows.append((f"(f) evaluate(z = 1.1, q = 0.004, 20,000 steps: {name})", f"{t_way:.3f} s",
                     f"{ratio:.2f}× bare composition ({t_long:.3f} s)", "≤ 1.3"))

    # (g) issue 19's 1,000 distinct DP-SGD stages at the spec's defaults (privspec picks the
    # discretization its memory budget allows) against dp-accounting composing them one
    # by one at h = 1e-4, as a user would; one run each (the baseline takes minutes).
    if args.stages:
        stages = Spec.model_validate({
            "privspec": 1, "title": "stages", "unit": "one example",
            "neighbouring": "add-or-remove", "mechanism": {"compose": [
                {"mechanism": {"dpsgd": {"noise_multiplier": 1 + i / 1000,
                                         "sampling_rate": 0.01, "steps": 10}}}
                for i in range(1000)]}})
        start = time.perf_counter()
        report = privspec.evaluate(stages)
        t_stages = time.perf_counter() - start

        def sequential() -> Any:
            result = None
            for i in range(1000):
                part = plds.from_gaussian_mechanism(
                    1 + i / 1000, sampling_prob=0.01, use_connect_dots=True,
                    value_discretization_interval=1e-4).self_compose(10)
                result = part if result is None else result.compose(part)
            return result

        start = time.perf_counter()
        eps = sequential().get_epsilon_for_delta(1e-5)
        t_seq = time.perf_counter() - start
        ours = report.epsilons[0].epsilon
        rows.append(("(g) evaluate(1,000 distinct DP-SGD stages, defaults)", f"{t_stages:.1f} s",
                     f"{t_stages / t_seq:.2f}× sequential dp-accounting at h = 1e-4 "
                     f"({t_seq:.0f} s); ε(1e-5) {ours:.4f} vs {eps:.4f}", "≤ 0.3"))

    # (h) issue 14's calibration of DP-SGD's noise multiplier: to a μ target against one
    # evaluate of the calibrated spec, and to an ε target against dp-accounting's own
    # calibrate_dp_mechanism (PLD accountant at the same h, its default tolerance).
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    from privspec.workflows.calibration import calibrate

    run = {"privspec": 1, "title": "calibrate", "unit": "one example",
           "neighbouring": "add-or-remove",
           "mechanism": {"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004,
                                   "steps": 10000}}}
    found = calibrate(run, "noise_multiplier", ["mu=1"])
    t_cal = median_time(lambda: calibrate(run, "noise_multiplier", ["mu=1"]), r)
    t_one = median_time(lambda: privspec.evaluate(found.data), r)
    rows.append(("(h) calibrate(DP-SGD noise multiplier to μ = 1)", f"{t_cal:.3f} s",
                 f"{t_cal / t_one:.2f}× one evaluate of the result ({t_one:.3f} s); "
                 f"{found.evaluations} + {found.rough_evaluations} coarse evaluations",
                 "< 10 evaluations"))

    # The same from a shell, as a user waits for it (interpreter start and imports included).
    import tempfile

    from privspec.spec.loader import dump_spec_data

    with tempfile.TemporaryDirectory() as folder:
        before, after = Path(folder) / "run.privspec.yaml", Path(folder) / "done.privspec.yaml"
        before.write_text(dump_spec_data(run), encoding="utf-8")
        after.write_text(dump_spec_data(found.data), encoding="utf-8")
        cli = [sys.executable, "-m", "privspec"]
        t_cli_cal = median_time(lambda: subprocess.run(
            [*cli, "calibrate", str(before), "--vary", "noise_multiplier", "-t", "mu=1"],
            check=True, capture_output=True), r)
        t_cli_one = median_time(lambda: subprocess.run(
            [*cli, "evaluate", str(after)], check=True, capture_output=True), r)
    rows.append(("(h) the same: `privspec calibrate` vs `privspec evaluate`", f"{t_cli_cal:.3f} s",
                 f"{t_cli_cal / t_cli_one:.2f}× `privspec evaluate` of the result "
                 f"({t_cli_one:.3f} s)", "≤ 3"))

    def event(sigma: float) -> Any:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
            0.004, dp_accounting.GaussianDpEvent(sigma)), 10000)

    def theirs() -> float:
        return float(dp_accounting.calibrate_dp_mechanism(
            lambda: pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4),
            event, 2.0, 1e-5, dp_accounting.LowerEndpointAndGuess(0.3, 1.0)))

    ours = calibrate(run, "noise_multiplier", ["epsilon@1e-5=2"]).value
    t_ours, t_theirs, ratio = paired(
        lambda: calibrate(run, "noise_multiplier", ["epsilon@1e-5=2"]), theirs, max(1, r // 2))
    rows.append(("(h′) calibrate to ε(1e-5) = 2", f"{t_ours:.3f} s",
                 f"{ratio:.2f}× dp-accounting calibrate_dp_mechanism ({t_theirs:.3f} s); "
                 f"σ {ours} vs {theirs():.5f}", "—"))

    # (e) peak memory of this whole process.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    rows.append(("(e) peak resident memory", f"{peak / 1024:.0f} MiB", "whole run", "< 1 GiB"))

    widths = [max(len(row[i]) for row in [("case", "time", "ratio", "target"), *rows])
              for i in range(4)]
    header = ("case", "time", "ratio", "target")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    print(f"\nmedian of {r} repeats; (b) and (d): median ratio of {2 * r + 1} and {rd} alternating "
          f"pairs; Python {sys.version.split()[0]}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
