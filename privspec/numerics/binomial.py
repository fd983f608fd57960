"""Exact self-composition of one ε-DP (or (ε, δ)-DP) worst case, without a grid.

The worst case of an (ε, δ)-DP release is randomized response with ε, its δ at +∞
(Kairouz, Oh & Viswanath 2015, Thm 2.1): privacy loss +ε with probability
(1 − δ)·p and −ε with (1 − δ)(1 − p), p = e^ε/(1 + e^ε).  Run k times (any k such
releases, KOV 2015, Thm 3.3), the loss is (2j − k)ε with j ~ Binomial(k, p), scaled by
(1 − δ)^k, and 1 − (1 − δ)^k sits at +∞.  These k + 1 losses are exact at any ε, where
a grid would round a small ε up by up to a whole step.  Binary randomized response is
the same release.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from privspec.numerics.curve import LossPMF
from privspec.spec import events as ev

#: Most losses kept: the binomial's bulk (``_BULK_SIGMAS`` standard deviations each side)
#: must fit, which holds for up to about 2.5 × 10⁹ runs.
MAX_LOSSES = 2_000_000
#: Half-width of the kept bulk, in standard deviations (at least 40 losses): the mass
#: beyond, bounded by Chernoff's exp(−k·KL), is negligible and still counted.
_BULK_SIGMAS = 40.0
#: Largest relative error of the probabilities accepted (past about 10⁷ runs the
#: log-gamma terms grow too large; the grid, or the closed-form bound, takes over).
MAX_RELATIVE_ERROR = 1e-6
#: Unit roundoff of a double.
_ROUNDOFF = 2.0**-53


def two_point_runs(event: ev.Event) -> tuple[float, float, int] | None:
    """(ε, δ, runs) when ``event`` is only runs of one (ε, δ)-DP worst case (pure DP,
    approximate DP, binary randomized response, unsampled); None otherwise."""
    if isinstance(event, ev.ComposedEvent):
        parts = [(two_point_runs(stage), repeat) for stage, repeat in event.stages]
        kinds = {part[:2] for part, _ in parts if part is not None}
        if any(part is None for part, _ in parts) or len(kinds) != 1:
            return None
        epsilon, delta = kinds.pop()
        return epsilon, delta, sum(part[2] * repeat for part, repeat in parts if part)
    if isinstance(event, ev.RepeatedEvent):
        inner = two_point_runs(event.event)
        return None if inner is None else (inner[0], inner[1], inner[2] * event.count)
    if isinstance(event, ev.SampledEvent):
        return two_point_runs(event.event) if event.rate == 1.0 else None
    if isinstance(event, ev.PureDPEvent):
        return event.epsilon, 0.0, 1
    if isinstance(event, ev.ApproximateDPEvent):
        return event.epsilon, event.delta, 1
    if isinstance(event, ev.RandomizedResponseEvent) and event.categories == 2:
        return (event.loss, 0.0, 1) if math.isfinite(event.loss) else None
    return None


def _log_chernoff(k: int, x: float, log_p: float, log_q: float) -> float:
    """log of Chernoff's bound exp(−k·KL(x ‖ p)) on the binomial's mass beyond k·x
    (on the far side of its mean kp), with log p and log q = log(1 − p) given."""
    kl = 0.0
    if x > 0:
        kl += x * (math.log(x) - log_p)
    if x < 1:
        kl += (1 - x) * (math.log1p(-x) - log_q)
    return -k * kl


def composed_pmf(epsilon: float, delta: float, runs: int) -> LossPMF | None:
    """The exact PMF of ``runs`` compositions of the (ε, δ)-DP worst case, or None when
    its bulk exceeds ``MAX_LOSSES`` losses or its rounding ``MAX_RELATIVE_ERROR``.

    Probabilities come from log-gamma functions; ``relative_error`` bounds their rounding
    and that of the losses, and the curve widens by it towards the attacker.  The mass
    outside the kept bulk is bounded by Chernoff: above it, at +∞; below it, at the
    lowest kept loss (both pessimistic: losses only move up)."""
    k = runs
    scale = math.exp(k * math.log1p(-delta)) if delta > 0 else 1.0
    at_infinity = -math.expm1(k * math.log1p(-delta)) if delta > 0 else 0.0
    if epsilon == 0:
        return LossPMF(np.zeros(1), np.array([scale]), at_infinity)
    log_q = -epsilon - math.log1p(math.exp(-epsilon))  # log 1/(1 + e^ε)
    log_p = -math.log1p(math.exp(-epsilon))  # log e^ε/(1 + e^ε)
    p = math.exp(log_p)
    spread = _BULK_SIGMAS * max(1.0, math.sqrt(k * p * math.exp(log_q)))
    low = max(0, math.floor(k * p - spread))
    high = min(k, math.ceil(k * p + spread))
    # Each log-probability sums five terms, each within a few roundoffs of its size, and
    # each loss (2j − k)ε within one of kε (e^{−loss} is then within kε·u relatively).
    # One run is a single release, its two probabilities computed directly, as
    # every other release's are.
    magnitude = 3 * (k + 1) * math.log(k + 1) + k * (abs(log_p) + abs(log_q) + epsilon)
    relative_error = math.expm1(16 * _ROUNDOFF * magnitude) if k > 1 else 0.0
    if high - low + 1 > MAX_LOSSES or relative_error > MAX_RELATIVE_ERROR:
        return None
    j = np.arange(low, high + 1, dtype=np.float64)
    log_probs = (gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
                 + j * log_p + (k - j) * log_q)
    probs = np.exp(log_probs) * scale
    below = math.exp(_log_chernoff(k, low / k, log_p, log_q)) if low > 0 else 0.0
    above = math.exp(_log_chernoff(k, high / k, log_p, log_q)) if high < k else 0.0
    probs[0] += below * scale
    return LossPMF((2 * j - k) * epsilon, probs, min(1.0, at_infinity + above * scale),
                   relative_error=relative_error)
