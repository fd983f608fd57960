"""Properties (Hypothesis, few examples each): valid trade-off curves, monotone μ, regret ≥ 0,
the exact envelope on small discrete pairs, and reports that round-trip and repeat."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privspec
from privspec.numerics.accounting import pmfs_from_spec
from privspec.numerics.curve import LossPMF, TradeoffCurve, curve_from_pmfs
from privspec.numerics.gdp import mu_from_curve, regret
from privspec.report.model import Report
from privspec.spec.models import Spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.privspec.yaml"))
FAST = settings(max_examples=8, deadline=None)
COARSE = 1e-3


def make_spec(mechanism: dict[str, Any], relation: str = "add-or-remove",
              discretization: float = COARSE) -> Spec:
    return Spec.model_validate({
        "privspec": 1, "title": "property", "unit": "one record", "neighbouring": relation,
        "mechanism": mechanism, "accounting": {"discretization": discretization},
    })


def mu_of(mechanism: dict[str, Any]) -> float:
    spec = make_spec(mechanism)
    return mu_from_curve(curve_from_pmfs(pmfs_from_spec(spec)), spec.accounting.floor)


def dpsgd(sigma: float, q: float, steps: int) -> dict[str, Any]:
    return {"dpsgd": {"noise_multiplier": sigma, "sampling_rate": q, "steps": steps}}


sigmas = st.floats(0.6, 4.0)
rates = st.floats(0.01, 0.5)
mechanisms = st.one_of(
    st.builds(lambda s: {"gaussian": {"sigma": s}}, sigmas),
    st.builds(lambda s, q, n: dpsgd(s, q, n), sigmas, rates, st.integers(1, 30)),
    st.builds(lambda b: {"laplace": {"scale": b}}, st.floats(0.3, 5.0)),
    st.builds(lambda b, q: {"poisson_sampled": {"sampling_rate": q, "mechanism": {
        "laplace": {"scale": b}}}}, st.floats(0.3, 5.0), rates),
    st.builds(lambda s: {"discrete_gaussian": {"sigma": s}}, st.floats(0.5, 5.0)),
    st.builds(lambda e: {"pure_dp": {"epsilon": e}}, st.floats(0.05, 4.0)),
    st.builds(lambda e, d: {"approximate_dp": {"epsilon": e, "delta": d}},
              st.floats(0.0, 4.0), st.floats(1e-9, 1e-2)),
)


def assert_valid_curve(curve: TradeoffCurve) -> None:
    a, b = curve.alpha, curve.beta
    assert a[0] == 0.0 and a[-1] == 1.0
    # α non-decreasing; repeated α (mirrored vertices whose β rounded to 1 repeat α = 1; a
    # vertex a rounding error off the diagonal repeats α*) carry the same β to 1e-15.
    assert np.all(np.diff(a) >= 0)
    ties = np.flatnonzero(np.diff(a) == 0)
    assert np.all(np.abs(b[ties] - b[ties + 1]) <= 1e-15)
    assert np.all((b >= 0) & (b <= 1))
    # non-increasing
    assert np.all(np.diff(b) <= 1e-15)
    # f(α) ≤ 1 − α, from the TPR column (no cancellation)
    assert np.all(curve.tpr >= a - 1e-15)
    # Convex: slopes non-decreasing.  Each half is checked in the columns stored at full
    # precision (β rounds to 1 at α ≈ 1e-20; α rounds to 1 on the mirror): f = 1 − TPR on
    # the left of α*, α = 1 − TNR on the right.
    half = int(np.searchsorted(a, curve.alpha_star, side="right"))
    assert_convex(a[:half], -curve.tpr[:half])
    assert_convex(-curve.tnr[half - 1:], b[half - 1:])
    # f(0) = 1 − mass at infinity, f(1) = 0
    assert b[0] == pytest.approx(1.0 - curve.infinity_mass, abs=1e-15)
    # (the TPRs are widened by the composition's relative error, towards the attacker)
    assert curve.tpr[0] == pytest.approx(curve.infinity_mass,
                                         rel=max(1e-12, 2 * curve.relative_error), abs=1e-300)
    assert b[-1] == 0.0
    # symmetric about the diagonal (where the mirror is a function: not along f(0) < 1)
    mirror = a <= 1.0 - curve.infinity_mass
    np.testing.assert_allclose(curve.beta_at(b[mirror]), a[mirror], atol=1e-9)


def assert_convex(x: np.ndarray, y: np.ndarray) -> None:
    """Slopes of the polyline (x, y) are non-decreasing; cross products, no division."""
    dx, dy = np.diff(x), np.diff(y)
    cross = dy[:-1] * dx[1:] - dy[1:] * dx[:-1]  # ≤ 0 iff slope_i ≤ slope_{i+1}
    scale = np.abs(dy[:-1] * dx[1:]) + np.abs(dy[1:] * dx[:-1])
    # Relative rounding, plus an absolute two units in the last place of y ≤ 1 (2.2e-16:
    # α* is interpolated next to a vertex that can sit a rounding error off the diagonal,
    # and near β = 0.87 one unit is already 1.1e-16; pure ε = 1.9 needs 1.6e-16).
    tol = 1e-9 * scale + 2.2e-16 * (np.abs(dx[:-1]) + np.abs(dx[1:])) + 1e-300
    assert np.all(cross <= tol), np.flatnonzero(cross > tol)


@FAST
@given(mechanisms)
def test_curves_are_valid_tradeoff_functions(mechanism: dict[str, Any]) -> None:
    curve = curve_from_pmfs(pmfs_from_spec(make_spec(mechanism)))
    assert_valid_curve(curve)


@FAST
@given(mechanisms)
def test_regret_is_non_negative(mechanism: dict[str, Any]) -> None:
    curve = curve_from_pmfs(pmfs_from_spec(make_spec(mechanism)))
    mu = mu_from_curve(curve, 1e-12)
    if math.isfinite(mu):
        assert regret(curve, mu) >= 0.0
        assert regret(curve, mu * 1.5 + 0.1) >= 0.0


@FAST
@given(sigmas, st.floats(1.1, 3.0), rates, st.integers(1, 20))
def test_mu_non_increasing_in_noise(sigma: float, factor: float, q: float, steps: int) -> None:
    assert mu_of(dpsgd(sigma * factor, q, steps)) <= mu_of(dpsgd(sigma, q, steps)) * (1 + 1e-9)
    assert mu_of({"gaussian": {"sigma": sigma * factor}}) <= mu_of({"gaussian": {"sigma": sigma}})


@FAST
@given(sigmas, rates, st.integers(1, 20), st.integers(1, 20))
def test_mu_non_decreasing_in_steps(sigma: float, q: float, steps: int, more: int) -> None:
    assert mu_of(dpsgd(sigma, q, steps + more)) >= mu_of(dpsgd(sigma, q, steps)) * (1 - 1e-9)


@FAST
@given(sigmas, st.floats(0.01, 0.3), st.floats(1.2, 3.0), st.integers(1, 20))
def test_mu_non_decreasing_in_sampling_rate(sigma: float, q: float, factor: float,
                                            steps: int) -> None:
    assert mu_of(dpsgd(sigma, q * factor, steps)) >= mu_of(dpsgd(sigma, q, steps)) * (1 - 1e-9)


# -- The envelope, exactly, on small discrete pairs --------------------------------------------


def neyman_pearson_points(p: np.ndarray, q: np.ndarray) -> list[tuple[float, float]]:
    """Vertices (α, β) of T(P, Q): reject H0 = Q on outputs of highest P/Q first."""
    order = np.argsort(-(np.log(p) - np.log(q)), kind="stable")
    alpha = np.concatenate(([0.0], np.cumsum(q[order])))
    beta = 1.0 - np.concatenate(([0.0], np.cumsum(p[order])))
    return list(zip(alpha.tolist(), np.maximum(beta, 0.0).tolist(), strict=True))


def lower_hull(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    hull: list[tuple[float, float]] = []
    for pt in sorted(set(points)):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (pt[1] - y1) - (y2 - y1) * (pt[0] - x1) <= 0:
                hull.pop()
            else:
                break
        hull.append(pt)
    xs, ys = np.array([h[0] for h in hull]), np.array([h[1] for h in hull])
    return xs, ys


distributions = st.lists(st.floats(0.01, 1.0), min_size=2, max_size=7)


@settings(max_examples=30, deadline=None)
@given(distributions, distributions)
def test_envelope_of_both_directions_is_exact(p_raw: list[float], q_raw: list[float]) -> None:
    k = min(len(p_raw), len(q_raw))
    p = np.asarray(p_raw[:k]) / sum(p_raw[:k])
    q = np.asarray(q_raw[:k]) / sum(q_raw[:k])
    loss = np.log(p) - np.log(q)
    order = np.argsort(loss)
    remove = LossPMF(loss[order], p[order], 0.0)
    order = np.argsort(-loss)
    add = LossPMF(-loss[order], q[order], 0.0)
    curve = curve_from_pmfs((remove, add))
    assert_valid_curve(curve)
    # Independently: the lower convex hull of T(P, Q) ∪ T(Q, P) (Dong, Roth & Su, App. F).
    xs, ys = lower_hull(neyman_pearson_points(p, q) + neyman_pearson_points(q, p))
    grid = np.linspace(0.0, 1.0, 401)
    np.testing.assert_allclose(curve.beta_at(grid), np.interp(grid, xs, ys), atol=1e-12)


# -- Reports: JSON round trip and determinism ---------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_report_round_trips_and_is_deterministic(path: Path) -> None:
    first = privspec.evaluate(path)
    assert isinstance(first, Report)
    text = first.model_dump_json()
    # Caveats keep their numbers for LaTeX's wording only, outside the JSON layout.
    assert Report.model_validate_json(text).model_dump_json() == text
    assert privspec.evaluate(path).model_dump_json() == text


# -- The fast paths equal the plain computations ------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_chains_are_monotone_and_the_support_ascends(path: Path) -> None:
    """FFT noise leaves negative masses, and tiny masses vanish in the sums: α and TPR
    never fall along a direction, and the hull has one vertex per α, in order."""
    curve = privspec_curve(path)
    for chain in curve.points:
        assert np.all(np.diff(chain.alpha) >= 0) and np.all(np.diff(chain.tpr) >= 0)
        assert np.all(np.diff(chain.beta) <= 0)
    alpha, beta, _ = curve.support
    assert np.all(np.diff(alpha) > 0) and np.all(np.diff(beta) <= 0)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_grid_hull_equals_the_general_hull(path: Path) -> None:
    """On dp-accounting's shared loss grid the hull finds each rival vertex by an offset;
    without the grid it merges the slopes.  Both give the same vertices."""
    from dataclasses import replace

    from privspec.numerics.curve import hull_of_chains

    chains = privspec_curve(path).points
    fast = hull_of_chains(chains)
    general = hull_of_chains(tuple(replace(c, grid=None) for c in chains))
    for x, y in zip(fast, general, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
@pytest.mark.parametrize("floor", [1e-12, 1e-6])
def test_branch_and_bound_mu_is_the_maximum_over_all_vertices(path: Path, floor: float) -> None:
    from scipy.special import ndtri

    curve = privspec_curve(path)
    mu = mu_from_curve(curve, floor)
    alpha, beta, tpr = curve.support
    if not math.isfinite(mu):
        assert alpha[0] == 0 and tpr[0] > floor
        return
    near = (tpr - alpha < 2 * floor) & (alpha <= beta)
    asks = []
    for a, b, t in ((alpha, beta, tpr), (beta[near], alpha[near], 1 - alpha[near])):
        use = (a > 0) & (a < 1) & (t > floor)
        a, b, t = a[use], b[use], t[use]
        z_fpr = np.where(a <= 0.5, -ndtri(np.minimum(a, 0.5)), ndtri(1 - a))
        z_fnr = np.where(t - floor < 0.5, -ndtri(np.minimum(t - floor, 0.5)),
                         ndtri(np.minimum(b + floor, 1)))
        asks.append(z_fpr - z_fnr)
    brute = max(0.0, *(float(np.max(x)) for x in asks if x.size))
    assert mu == pytest.approx(brute, rel=1e-12, abs=1e-12)
    assert mu >= brute * (1 - 1e-13)


_CURVES: dict[Path, TradeoffCurve] = {}


def privspec_curve(path: Path) -> TradeoffCurve:
    if path not in _CURVES:
        from privspec.spec.loader import load_spec

        _CURVES[path] = curve_from_pmfs(pmfs_from_spec(load_spec(path)))
    return _CURVES[path]
