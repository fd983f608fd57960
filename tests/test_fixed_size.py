"""Fixed-size sampling without replacement under replace-one (Dong, Roth & Su, Thm 4.2).

One step of a mechanism that is f-DP under replace-one, run on a batch of b of n
records, is C_p(f)-DP with p = b/n, C_p(f) = min(f_p, f_p⁻¹)** and
f_p = p·f + (1 − p)·Id.  Steps compose as C_p(f)^{⊗k}: never the two directions
separately (Lebeda et al. 2024 show that shortcut is optimistic).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as plds
from scipy.stats import norm

import privspec
from privspec.numerics.accounting import pmfs_from_spec
from privspec.numerics.curve import curve_from_pld, curve_from_pmfs
from privspec.numerics.gdp import mu_from_curve
from privspec.report.model import Report
from privspec.spec.models import Spec


def spec(mechanism: dict[str, object], h: float = 1e-4) -> Spec:
    return Spec.model_validate({
        "privspec": 1, "title": "fixed-size batches", "unit": "one example",
        "neighbouring": "replace-one", "mechanism": mechanism,
        "accounting": {"discretization": h},
    })


def wor(noise_multiplier: float, batch: int, n: int, steps: int = 1) -> dict[str, object]:
    step = {"fixed_size_sampled": {"batch_size": batch, "dataset_size": n,
                                   "mechanism": {"gaussian": {"noise_multiplier": noise_multiplier}}}}
    return step if steps == 1 else {"repeat": {"count": steps, "mechanism": step}}


def lower_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Andrew's monotone chain, written here independently of privspec.numerics.curve."""
    hull: list[int] = []
    for i in np.argsort(x, kind="stable"):
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            if (x[k] - x[j]) * (y[i] - y[j]) - (y[k] - y[j]) * (x[i] - x[j]) <= 0:
                hull.pop()
            else:
                break
        hull.append(int(i))
    return x[hull], y[hull]


def test_the_whole_dataset_is_the_plain_mechanism() -> None:
    # b = n: every step sees every record, so k steps are √k · 2/z (replace-one moves 2C).
    report = privspec.evaluate(spec(wor(2.0, 100, 100, steps=4)))
    assert report.gdp.mu == pytest.approx(math.sqrt(4) * 2 / 2.0, rel=1e-6)


def test_one_step_is_c_p_of_the_gaussian() -> None:
    z, p = 1.0, 0.05
    curve = curve_from_pmfs(pmfs_from_spec(spec(wor(z, 5, 100))))
    mu0 = 2 / z
    # C_p(G_μ0) by brute force: min(f_p, f_p⁻¹) on a fine grid, then its lower hull.
    alpha = np.concatenate((np.logspace(-14, -1, 4000), np.linspace(0.1, 1, 4000)))
    f_p = p * norm.cdf(norm.isf(alpha) - mu0) + (1 - p) * (1 - alpha)
    # f_p⁻¹ as points: swap coordinates.
    x = np.concatenate((alpha, f_p))
    y = np.concatenate((f_p, alpha))
    hx, hy = lower_hull(x, y)
    for a in (1e-8, 1e-5, 1e-3, 0.01, 0.05, 0.2, 0.4, 0.7):
        expected = float(np.interp(a, hx, hy))
        assert float(curve.beta_at(a)) == pytest.approx(expected, abs=2e-5), a
        # ... and never above it by more than discretization slack (pessimistic).
        assert float(curve.beta_at(a)) <= expected + 1e-9, a


def test_steps_compose_the_symmetric_curve_not_the_directions() -> None:
    z, batch, n, steps = 1.0, 100, 10_000, 100
    report: Report = privspec.evaluate(spec(wor(z, batch, n, steps), h=1e-3))
    assert report.gdp.mu is not None
    # The shortcut: compose each direction of the subsampled pair separately.
    step = plds.from_gaussian_mechanism(z, sensitivity=2.0, sampling_prob=batch / n,
                                        value_discretization_interval=1e-3, use_connect_dots=True)
    shortcut = mu_from_curve(curve_from_pld(step.self_compose(steps)), 1e-12)
    assert report.gdp.mu >= shortcut
    # Subsampling never hurts: at most the unsampled mechanism's √k · 2/z.
    assert report.gdp.mu <= math.sqrt(steps) * 2 / z
    # With p·k = 1 expected inclusion of a 2-GDP release, μ stays near 2.
    assert 1.5 < report.gdp.mu < 2.5


def test_fixed_size_needs_replace_one() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="replace-one"):
        Spec.model_validate({
            "privspec": 1, "title": "t", "unit": "u", "neighbouring": "add-or-remove",
            "mechanism": wor(1.0, 10, 100)})
