"""Group privacy on a trade-off curve: what a mechanism's curve says about k records.

Dong, Roth & Su 2022 (JRSS-B, "Gaussian differential privacy", Thm 2.14): a mechanism
that is f-DP is [1 − g^{∘k}]-DP for groups of k, with g = 1 − f (increasing, concave)
and g^{∘k} its k-fold composition; for μ-GDP it gives exactly kμ, for ε-DP a curve at
least f_{kε} (kε-DP, tighter in the middle).  The proof chains k neighbouring steps,
D₀ → D₁ → … → D_k: a test's power under D_{i+1} is at most g of its power under D_i.
It needs f to hold for every ordered neighbouring pair along the chain, which
privspec's symmetric curve does (it is the curve dual to δ(ε) = max(δ_remove, δ_add),
docs/math.md §2), so the symmetric curve of the *whole* composed mechanism is iterated
(group privacy after composition).  Iterating each direction's own curve could be a
little tighter for asymmetric (add vs remove) mechanisms; it is not done.

Pessimism (docs/math.md §8): the curve is a lower bound f' ≤ f, so g' = 1 − f' ≥ g and,
g' being increasing, g'^{∘k} ≥ g^{∘k}.  g' is iterated at fixed nodes x_j, with every
interpolation's rounding bounded and added towards the attacker (TPR up, β down), so each
node value V_j ≥ g^{∘k}(x_j).  Between nodes the bound uses that a concave g^{∘k} with
g^{∘k}(0) ≥ 0 has g^{∘k}(x)/x non-increasing: g^{∘k}(x) ≤ min(V_{j+1}, V_j·x/x_j) on
[x_j, x_{j+1}], a piecewise-linear curve with one kink per interval.  Only the half
α ≤ 1/2 is built: the group curve of a symmetric f is symmetric, and the rest is its
mirror image, as for every curve privspec draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privspec.numerics.cost import require, spend
from privspec.numerics.curve import (
    DirectionalPoints,
    FloatArray,
    TradeoffCurve,
    symmetric_curve,
)

#: The nodes: (from, to, ratio of consecutive nodes) ascending.  The bound between
#: nodes costs at most the ratio's excess on 1 − f (about a quarter of it where the
#: curve bends, nothing where it is straight): finest where μ is most sensitive to it.
NODE_SPANS = ((2.0**-1000, 1e-30, 1.01), (1e-30, 1e-2, 1.002), (1e-2, 0.5, 1.0001))
_UNIT_ROUNDOFF = 2.0**-53
#: Rounding of one interpolation, relative to |fp[j]| + |s·(x − xp[j])|: six operations
#: of a few roundoffs each (``_interpolate``).
_ROUNDING = 8 * _UNIT_ROUNDOFF
#: Estimated seconds per node and step of the iteration on a 2-core laptop (measured:
#: 0.16 s for k = 2 on a curve of 88,000 vertices), times 1 + log₂(vertices)/8 for the
#: binary searches.
SECONDS_PER_NODE_STEP = 2.5e-7
#: Bytes per node held while iterating (a dozen arrays of doubles).
BYTES_PER_NODE = 160.0


def group_nodes() -> FloatArray:
    """0, then the nodes of ``NODE_SPANS`` (1/2 included), ascending."""
    spans = [np.geomspace(low, high, math.ceil(math.log(high / low) / math.log(ratio)) + 1)
             [:-1] for low, high, ratio in NODE_SPANS]
    return np.concatenate(([0.0], *spans, [0.5]))


def estimated_seconds(records: int, vertices: int) -> float:
    """Seconds ``group_curve`` takes for ``records`` and a curve of ``vertices``."""
    nodes = group_nodes().size
    return records * nodes * SECONDS_PER_NODE_STEP * (1 + math.log2(max(2, vertices)) / 8)


def _interpolate(x: FloatArray, xp: FloatArray, fp: FloatArray, upward: bool) -> FloatArray:
    """The piecewise-linear function through (xp, fp) (xp ascending) at x, its rounding
    error bounded and added (``upward``) or taken off: fp[j] + s·(x − xp[j]) has each
    term within a few roundoffs, so within 8u of |fp[j]| + |s·(x − xp[j])|."""
    last = xp.size - 1
    x = np.clip(x, xp[0], xp[last])
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, last - 1)
    left, right = xp[j], xp[j + 1]
    width = right - left
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(width > 0, (fp[j + 1] - fp[j]) / width, 0.0)
    term = slope * (x - left)
    value = fp[j] + term
    error = _ROUNDING * (np.abs(fp[j]) + np.abs(term))
    flat = width <= 0  # a repeated abscissa: the pessimistic one of its values
    if flat.any():
        pick = np.maximum if upward else np.minimum
        value = np.where(flat, pick(fp[j], fp[j + 1]), value)
    bounded = value + error if upward else value - error
    return np.asarray(np.clip(bounded, 0.0, 1.0))


def _step(curve: TradeoffCurve, tpr: FloatArray, beta: FloatArray
          ) -> tuple[FloatArray, FloatArray]:
    """(g'(u), f'(u)) bounded up and down at u, with u ≤ ``tpr`` and 1 − u ≥ ``beta``:
    each from the side where it is small (u on the α column when u ≤ 1/2, else
    1 − u on the TNR column)."""
    left = tpr <= 0.5
    out_tpr, out_beta = np.empty_like(tpr), np.empty_like(beta)
    u = tpr[left]
    out_tpr[left] = _interpolate(u, curve.alpha, curve.tpr, upward=True)
    out_beta[left] = _interpolate(u, curve.alpha, curve.beta, upward=False)
    right = ~left
    if right.any():
        tnr, tpr_col, beta_col = curve.tnr[::-1], curve.tpr[::-1], curve.beta[::-1]
        w = beta[right]  # a lower bound on 1 − u: α = 1 − w is at least u
        out_tpr[right] = _interpolate(w, tnr, tpr_col, upward=True)
        out_beta[right] = _interpolate(w, tnr, beta_col, upward=False)
    return out_tpr, out_beta


def group_curve(curve: TradeoffCurve, records: int) -> TradeoffCurve:
    """The trade-off curve 1 − g^{∘k} of ``curve`` for groups of k = ``records``
    (module docstring), a pessimistic bound; ``curve`` itself for k = 1."""
    return group_curves(curve, (records,))[records]


def group_curves(curve: TradeoffCurve, sizes: Sequence[int]) -> dict[int, TradeoffCurve]:
    """``group_curve`` of ``curve`` for each of ``sizes``, from one iteration up to the
    largest: the node values after m steps are g'^{∘m}'s, so each size's curve is the
    one ``group_curve`` gives for it alone, bit for bit."""
    curves = {size: curve for size in sizes if size == 1}
    records = max(sizes)
    if records == 1:
        return curves
    nodes = group_nodes()
    require(BYTES_PER_NODE * nodes.size, "group privacy over the curve")
    spend(estimated_seconds(records, curve.alpha.size), "group privacy over the curve",
          fixed=True)
    # Start at the identity: u = x (exact), 1 − u rounded down.
    tpr, beta = nodes.copy(), np.nextafter(1.0 - nodes, 0.0)
    for step in range(1, records + 1):
        tpr, beta = _step(curve, tpr, beta)
        if step > 1 and step in sizes:
            # and at most 1 − V, rounded down
            curves[step] = _from_nodes(curve, nodes, tpr,
                                       np.minimum(beta, np.nextafter(1.0 - tpr, 0.0)))
    return curves


def _from_nodes(curve: TradeoffCurve, nodes: FloatArray, tpr: FloatArray,
                beta: FloatArray) -> TradeoffCurve:
    """The group curve's left half from node bounds: on [x_j, x_{j+1}] the vertices
    (x_j, V_j) and (x_c, V_{j+1}) with x_c = x_j·V_{j+1}/V_j (rounded down, at most
    x_{j+1}); on [0, x₁] the value at x₁ (x₁ = 2⁻¹⁰⁰⁰).  Then the symmetric curve through them."""
    x, v, b = nodes[1:], tpr[1:], beta[1:]  # the positive nodes
    with np.errstate(divide="ignore", invalid="ignore"):
        kink = np.where(v[:-1] > 0, x[:-1] * (v[1:] / v[:-1]), x[1:]) * (1 - 4 * _UNIT_ROUNDOFF)
    kink = np.clip(kink, x[:-1], x[1:])
    n = x.size
    alpha = np.empty(2 * n)
    tprs, betas = np.empty(2 * n), np.empty(2 * n)
    alpha[0], tprs[0], betas[0] = 0.0, v[0], b[0]
    alpha[1::2], tprs[1::2], betas[1::2] = x, v, b
    alpha[2::2], tprs[2::2], betas[2::2] = kink, v[1:], b[1:]
    # One vertex per α (a kink on a node), the most pessimistic; TPR never falls.
    tprs = np.maximum.accumulate(tprs)
    betas = np.minimum.accumulate(betas)
    keep = np.concatenate((alpha[1:] != alpha[:-1], [True]))
    alpha, tprs, betas = alpha[keep], tprs[keep], betas[keep]
    # Up to the first vertex past the diagonal: the mirror image covers the rest, and
    # the bound between nodes is loosest far from α = 0.
    past = betas <= alpha
    if past.any():
        end = int(np.argmax(past)) + 1
        alpha, tprs, betas = alpha[:end], tprs[:end], betas[:end]
    losses = _losses(alpha, tprs)
    chain = DirectionalPoints(alpha=alpha, beta=betas, tpr=tprs, losses=losses,
                              excess_mass=0.0, grid=None)
    # The unit's mass at +∞ is g^{∘k}(0), TPR at FPR 0 (node 0), not its bound on [0, x₁].
    return symmetric_curve((alpha, betas, tprs), (chain,), infinity_mass=float(tpr[0]),
                           relative_error=curve.relative_error, certified=curve.certified)


def _losses(alpha: FloatArray, tpr: FloatArray) -> FloatArray:
    """The privacy loss y of each segment, slope −e^y (only to describe the chain)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.diff(tpr) / np.diff(alpha)
        return np.asarray(np.log(np.where(slope > 0, slope, 0.0)))
