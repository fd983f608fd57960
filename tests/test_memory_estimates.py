"""The memory estimate against what a process really takes (``numerics.cost``): never
below the measured peak, and not far above it (benchmarks/budgets.py prints the ratio
for a spread of specs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privspec.numerics import composition, cost
from privspec.numerics.curve import LossPMF

ROOT = Path(__file__).resolve().parent.parent

# The peak of this process's own memory (VmHWM): ru_maxrss would keep the peak of the
# test process it was forked from.
_MEASURE = """
import json, re, sys
from pathlib import Path
import privspec
from privspec.numerics import cost
privspec.evaluate(sys.argv[1], cache=False)
peak = re.search(r"VmHWM:\\s*(\\d+) kB", Path("/proc/self/status").read_text())
print(json.dumps({"estimate": cost.process_estimate(cost.last_peak()),
                  "peak": int(peak.group(1)) * 1024.0}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux's /proc")
def test_the_estimate_bounds_a_fresh_process_peak_closely() -> None:
    """The DP-SGD example in a process of its own: the estimate (the interpreter's share
    and the computation's largest) is at least the peak resident memory, and was 1.7
    times it (each tilt's window counted at 222 bytes a point over 30 standard
    deviations, before any tilt)."""
    example = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
    run = subprocess.run([sys.executable, "-c", _MEASURE, str(example)], check=True,
                         capture_output=True, text=True, cwd=ROOT)
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["peak"] <= got["estimate"] <= 1.5 * got["peak"]


def _pmf(size: int, seed: int) -> LossPMF:
    probs = np.random.default_rng(seed).random(size)
    probs /= probs.sum()
    return LossPMF(np.arange(size) * 1e-4, probs, 0.0, (1e-4, 0))


def test_a_composition_refused_for_its_time_never_counts_in_the_peak() -> None:
    """The peak is what ran: a tilted composition refused by the time budget (estimated
    after its memory) allocated nothing, and its memory forecast (528 MiB of FFT plans
    for DP-FedAvg at h = 2·10⁻⁵) used to count."""
    factors = [(_pmf(20_000, seed), 50) for seed in range(2)]
    with pytest.raises(cost.CostError) as refused, cost.budget(2.0**30, seconds=1e-6):
        composition.compose_directions([factors], 1e-4, 1e-15)
    assert refused.value.resource == "time"
    job = composition._Job.of(factors)
    assert job.lattice is not None
    forecast = composition.estimated_memory(job.lattice, composition._extent(job.lattice, 1e-15))
    # What ran: the lattice's copies of the releases (56 bytes an entry as they are built).
    assert cost.last_peak() == pytest.approx(56 * 40_000) and forecast > 50 * cost.last_peak()


def test_a_mixture_of_gaussians_is_estimated_at_its_bisections_cost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """dp-accounting inverts a mixture's losses point by point (about 10⁻⁴ s a point
    here): 16 records at h = 10⁻⁴ (180,000 points, 14 s) were estimated at 0.4 s and
    built within a 3 s budget."""
    from dp_accounting.pld import privacy_loss_distribution

    from privspec.numerics.portable_pld import mixture_gaussian_pld

    def built(*_: object, **__: object) -> None:
        raise AssertionError("built beyond the time budget")

    monkeypatch.setattr(privacy_loss_distribution, "from_mixture_gaussian_mechanism", built)
    with cost.budget(2.0**30, 3.0), pytest.raises(cost.CostError, match="grid points"):
        mixture_gaussian_pld(2.0, 16, 0.01, discretization=1e-4, log_tail_mass=-50.0)
