"""The tilted composition (privspec.numerics.composition) against exact oracles, and the
invariances it exists for (issue 12): the same figures however a run is split, and on
CPUs with other vector units."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privspec.numerics import composition
from privspec.numerics.composition import DIRECT_WIDTH, compose
from privspec.numerics.curve import LossPMF, pmfs_from_pld
from privspec.numerics.portable_pld import discrete_gaussian_pld, discrete_loss_pld, gaussian_pld
from privspec.report.cache import evaluate

ROOT = Path(__file__).resolve().parent.parent


def exact_composition(pmf: LossPMF, count: int) -> tuple[np.ndarray, int]:
    """p^{*count} by direct convolution in long double: sums of non-negative products,
    so every entry, however small, is relatively accurate (to ~count·width·2⁻⁶⁴)."""
    assert pmf.grid is not None
    base = np.maximum(pmf.probs, 0).astype(np.longdouble)
    result = np.ones(1, dtype=np.longdouble)
    while count:
        if count & 1:
            result = np.convolve(result, base)
        count >>= 1
        if count:
            base = np.convolve(base, base)
    return result, 0


def tail_sums(probs: np.ndarray, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ_{y>t} p and Σ_{y>t} e^{−y}p for every loss t ≥ 0 (what TPR and α are made of)."""
    top = losses >= 0
    p, y = probs[top][::-1], losses[top][::-1]
    return np.cumsum(p), np.cumsum(np.exp(-y) * p)


@pytest.mark.parametrize(("sigma", "rate", "count", "h", "sparse"), [
    (1.0, 0.05, 40, 2e-2, None),    # a run of weak steps
    (0.8, 0.3, 6, 5e-3, None),      # strong steps: tails of 10⁻³⁰ and below
    (2.0, 0.01, 30, 2e-3, None),    # asymmetric directions
    (2.0, None, 8, 1e-2, True),     # discrete Gaussian: a comb, convolved atom by atom
    (2.0, None, 30, 1e-2, False),   # the same comb, tilted
])
def test_tail_sums_within_the_stated_bound(sigma: float, rate: float | None, count: int,
                                           h: float, sparse: bool | None,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tail sum the curve uses is within the composition's stated relative error
    of the exact one, down to the truncation budget (the mass moved to +∞ covers the rest).
    ``rate`` None: a discrete Gaussian, whose losses are 1/σ² apart, 25 grid steps at
    h = 0.01 (``sparse``: whether the atoms are convolved directly or the comb tilted)."""
    if rate is None:
        pld = discrete_gaussian_pld(sigma, sensitivity=1, discretization=h)
        if not sparse:
            monkeypatch.setattr(composition, "SPARSE_PRODUCTS", 0)
    else:
        pld = gaussian_pld(sigma, sampling_prob=rate, discretization=h)
    for direction in pmfs_from_pld(pld):
        composed = compose([(direction, count)], h, truncation=1e-15)
        # not the dense direct convolution
        assert count * (direction.probs.size - 1) + 1 > DIRECT_WIDTH
        if sparse is not None:  # a direct convolution keeps the negative losses
            assert (composed.losses[0] < 0) == sparse
        assert composed.certified and 0 < composed.relative_error < 1e-6
        exact, _ = exact_composition(direction, count)
        assert direction.grid is not None and composed.grid is not None
        first = count * direction.grid[1]
        exact_losses = (first + np.arange(exact.size)) * h
        mine_p, mine_q = tail_sums(composed.probs, composed.losses)
        # The exact sums over the same thresholds; mass above the computed range has
        # gone to +∞ and is bounded by the infinity mass.
        keep = exact_losses <= composed.losses[-1] + h / 2
        true_p, true_q = tail_sums(exact[keep], exact_losses[keep])
        assert true_p.size == mine_p.size
        beyond = float(exact[~keep].sum())
        assert beyond <= composed.infinity_mass
        r = composed.relative_error
        useful = true_p > 1e-300
        rel_p = np.abs(mine_p[useful] / true_p[useful].astype(float) - 1)
        rel_q = np.abs(mine_q[useful] / true_q[useful].astype(float) - 1)
        assert rel_p.max() <= r, (rel_p.max(), r)
        assert rel_q.max() <= r, (rel_q.max(), r)


def _dpsgd(mechanism: dict[str, object], floor: float = 1e-12) -> dict[str, object]:
    return {"privspec": 1, "title": "split", "unit": "one example",
            "neighbouring": "add-or-remove", "mechanism": mechanism,
            "accounting": {"floor": floor}}


STEP = {"noise_multiplier": 1.1, "sampling_rate": 0.004}
POISSON_GAUSSIAN = {"poisson_sampled": {"sampling_rate": 0.004,
                                        "mechanism": {"gaussian": {"noise_multiplier": 1.1}}}}
SPLITS = {
    "one stage": {"dpsgd": {**STEP, "steps": 20000}},
    "two phases": {"compose": [{"name": "a", "mechanism": {"dpsgd": {**STEP, "steps": 10000}}},
                               {"name": "b", "mechanism": {"dpsgd": {**STEP, "steps": 10000}}}]},
    "repeat 4": {"repeat": {"count": 4, "mechanism": {"dpsgd": {**STEP, "steps": 5000}}}},
    "uneven phases": {"compose": [
        {"name": "a", "mechanism": {"dpsgd": {**STEP, "steps": 1}}},
        {"name": "b", "repeat": 3, "mechanism": {"dpsgd": {**STEP, "steps": 333}}},
        {"name": "c", "mechanism": {"dpsgd": {**STEP, "steps": 19000}}}]},
    "as a Poisson-sampled Gaussian": {"repeat": {"count": 20000, "mechanism": POISSON_GAUSSIAN}},
}


def _figures(report_json: str) -> dict[str, object]:
    data = json.loads(report_json)
    return {"gdp": data["gdp"], "tradeoff": data["tradeoff"], "epsilons": data["epsilons"],
            "curve": data["curve"]}


def test_a_run_split_any_way_gives_the_same_figures() -> None:
    """Issue 12's table: the same DP-SGD run as one stage, phases, ``repeat`` and another
    kind of spec gives identical numbers (equal releases are one computation)."""
    reports = {name: evaluate(_dpsgd(mechanism)) for name, mechanism in SPLITS.items()}
    figures = {name: _figures(r.model_dump_json()) for name, r in reports.items()}
    first = figures["one stage"]
    for name, value in figures.items():
        assert value == first, name
    mu = reports["one stage"].gdp.mu
    assert mu is not None
    # Certified interval of the exact μ at τ = 10⁻¹² (docs/math.md §2): never below it, and
    # within what the discretization h = 10⁻⁴ costs above it.
    assert 0.6617977 <= mu <= 0.6617977 * (1 + 1e-4)


def test_a_lower_floor_is_met_too() -> None:
    """τ = 10⁻¹⁵ (issue 12, item 4): μ covers the certified interval [0.6660792, 0.6660808]
    and stays close to it (dp-accounting's composition read 1.055 here)."""
    report = evaluate(_dpsgd(SPLITS["one stage"], floor=1e-15))
    assert report.gdp.mu is not None
    assert 0.6660808 <= report.gdp.mu <= 0.6660808 * (1 + 1e-4)


#: numpy ≥ 2.4's names: an AVX2 machine, and one without AVX2/FMA either.
CPU_SETTINGS = ["X86_V4 AVX512_ICL AVX512_SPR", "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"]
RENDERED = sorted(p.name.removesuffix(".privspec.yaml") for p in (ROOT / "examples").glob("*.privspec.yaml"))

_LEVELS = ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR")
_RENDER_SCRIPT = f"LEVELS = {_LEVELS!r}\n" + """
import json, sys
from numpy._core._multiarray_umath import __cpu_features__ as features
from privspec.report.cache import evaluate
from privspec.report.render import render
out = {"levels": {name: bool(features.get(name, False)) for name in LEVELS}}
for path in sys.argv[1:]:
    report = evaluate(path, spec_path=path, cache=False)  # (group tables too)
    out[path] = "".join(render(report, form) for form in ("markdown", "latex", "html"))
print(json.dumps(out))
"""


def _render_in_subprocess(paths: list[str], disabled: str | None) -> dict[str, object]:
    env = dict(os.environ)
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = disabled
    done = subprocess.run([sys.executable, "-c", _RENDER_SCRIPT, *paths], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


#: Long runs of the releases whose PLDs are dp-accounting's own (not ``portable_pld``).
LIBRARY_RELEASES = {
    "sampled-laplace": {"repeat": {"count": 3000, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.01, "mechanism": {"laplace": {"scale": 2.0, "sensitivity": 1}}}}}},
    "sampled-discrete-gaussian": {"repeat": {"count": 2000, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.01,
        "mechanism": {"discrete_gaussian": {"sigma": 3.0, "sensitivity": 1}}}}}},
    "discrete-laplace": {"repeat": {"count": 300, "mechanism": {
        "discrete_laplace": {"scale": 20.0, "sensitivity": 1}}}},
    "pure-dp": {"repeat": {"count": 1000, "mechanism": {"pure_dp": {"epsilon": 0.01}}}},
    "truncated-poisson": {"dpsgd": {"noise_multiplier": 1.0, "batch_size": 500,
                                    "dataset_size": 50000, "steps": 500,
                                    "sampling": "truncated-poisson",
                                    "truncated_batch_size": 620}},
    "replace-one-sampled-gaussian": {"dpsgd": {"noise_multiplier": 1.0,
                                               "sampling_rate": 0.01, "steps": 500}},
}
#: The relation a library release needs, where it is not add-or-remove.
LIBRARY_RELATIONS = {"truncated-poisson": "zero-out", "replace-one-sampled-gaussian": "replace-one"}


def test_reports_do_not_depend_on_the_cpus_vector_units(tmp_path: Path) -> None:
    """The Markdown, LaTeX (with the figure's pgfplots coordinates) and HTML (with the
    figure's SVG) reports are byte-identical with numpy's AVX-512 code switched off
    (an AVX2 machine), and with AVX2/FMA switched off too; each setting is checked to
    have taken effect (the levels ``numpy.show_runtime()`` lists as found).  Besides
    the examples (and the De et al. family behind ``table.md``): long runs of releases
    whose PLDs dp-accounting builds."""
    paths = [f"examples/{name}.privspec.yaml" for name in RENDERED]
    paths += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "de-et-al-2022")
                    .glob("*.privspec.yaml"))
    for name, mechanism in LIBRARY_RELEASES.items():
        spec = tmp_path / f"{name}.privspec.yaml"
        data = {**_dpsgd(mechanism), "title": name}
        data["neighbouring"] = LIBRARY_RELATIONS.get(name, data["neighbouring"])
        spec.write_text(json.dumps(data), encoding="utf-8")
        paths.append(str(spec))
    baseline = _render_in_subprocess(paths, None)
    found = baseline["levels"]
    assert isinstance(found, dict)
    if not found["X86_V3"]:
        pytest.skip("this CPU has no AVX2/FMA: there is no vector code to switch off")
    for setting in CPU_SETTINGS:
        other = _render_in_subprocess(paths, setting)
        levels = other["levels"]
        assert isinstance(levels, dict)
        assert not any(levels[name] for name in setting.split()), (setting, levels)
        for path in paths:
            assert other[path] == baseline[path], (setting, path)


@settings(max_examples=12, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=599), max_size=4, unique=True),
       repeat_last=st.booleans())
def test_random_splits_give_the_same_figures(cuts: list[int], repeat_last: bool) -> None:
    """600 steps cut into phases anywhere (the last phase possibly written as a repeat of
    equal halves) give exactly the figures of one stage of 600 steps."""
    step = {"noise_multiplier": 1.0, "sampling_rate": 0.05}
    bounds = [0, *sorted(cuts), 600]
    stages = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        dpsgd = {"dpsgd": {**step, "steps": b - a}}
        if repeat_last and i == len(bounds) - 2 and (b - a) % 2 == 0:
            dpsgd = {"repeat": {"count": 2, "mechanism": {"dpsgd": {**step,
                                                                     "steps": (b - a) // 2}}}}
        stages.append({"name": f"phase {i}", "mechanism": dpsgd})
    split = _dpsgd({"compose": stages} if len(stages) > 1 else stages[0]["mechanism"])
    whole = _dpsgd({"dpsgd": {**step, "steps": 600}})
    assert _figures(evaluate(split).model_dump_json()) == _figures(
        evaluate(whole).model_dump_json())


def test_distinct_releases_are_convolved_directly_when_that_is_cheap() -> None:
    """A wide release beside a narrow one (σ = 0.05 next to a small pure-DP release took
    40 s and lost its error bound): each runs once, so their direct convolution, sums of
    non-negative products, is exact to its bound, and is compared here with one in long
    double."""
    h = 1e-3
    (wide,) = pmfs_from_pld(gaussian_pld(0.2, discretization=h))
    up = 1 / (1 + math.exp(-0.05))  # pure DP with ε = 0.05: 101 grid points
    (narrow,) = pmfs_from_pld(discrete_loss_pld([(0.05, up), (-0.05, 1 - up)], discretization=h))
    assert wide.probs.size > DIRECT_WIDTH
    composed = compose([(wide, 1), (narrow, 1)], h, truncation=1e-15)
    assert composed.certified and 0 < composed.relative_error < 1e-9
    exact = np.convolve(wide.probs.astype(np.longdouble), narrow.probs.astype(np.longdouble))
    assert wide.grid is not None and narrow.grid is not None and composed.grid is not None
    assert composed.grid[1] == wide.grid[1] + narrow.grid[1]
    mine_p, mine_q = tail_sums(composed.probs, composed.losses)
    true_p, true_q = tail_sums(exact[:composed.probs.size], composed.losses)
    useful = true_p > 1e-300
    r = composed.relative_error
    assert np.max(np.abs(mine_p[useful] / true_p[useful].astype(float) - 1)) <= r
    assert np.max(np.abs(mine_q[useful] / true_q[useful].astype(float) - 1)) <= r
