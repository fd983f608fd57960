"""A lower bound on μ for DP-SGD on shuffled batches (Chua et al., "How private are
DP-SGD implementations?", ICML 2024; "Scalable DP-SGD: shuffling vs. Poisson
subsampling", NeurIPS 2024).

Take a dataset whose other examples have gradient 0 and the differing example gradient
+1 (one clipping norm): each epoch releases b noisy batch sums; with probability q (1
when an epoch's partial batch is kept, b·B/N when it is dropped) one of them has mean
1/z (in units of the noise), the others 0; without the example all have mean 0.  The
attack "some released sum exceeds t" has FPR α = 1 − Φ(t)^{bE} and
TPR = 1 − (q Φ(t − 1/z) Φ(t)^{b−1} + (1 − q) Φ(t)^b)^E over E epochs.  A μ-GDP
guarantee that holds up to the floor τ (f ≥ G_μ − τ) allows TPR ≤ Φ(Φ⁻¹(α) + μ) + τ,
so every valid μ is at least Φ⁻¹(TPR − τ) − Φ⁻¹(α), maximised over t.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtri

#: Thresholds tried, in noise standard deviations.
_THRESHOLDS = np.linspace(-4.0, 40.0, 44_001)


def shuffled_lower_mu(noise_multiplier: float, batches: int, epochs: int,
                      floor: float, inside: float = 1.0) -> float:
    """The largest μ that the threshold attack proves necessary (0 without an epoch);
    ``inside`` is the probability q that an epoch puts the example in a batch."""
    if epochs < 1 or batches < 1:
        return 0.0
    t = _THRESHOLDS
    below = log_ndtr(t)
    alpha = -np.expm1(batches * epochs * below)
    seen = log_ndtr(t - 1.0 / noise_multiplier)
    if inside < 1:  # the example sat the epoch out with probability 1 − q
        seen = np.logaddexp(np.log(inside) + seen, np.log1p(-inside) + below)
    tpr = -np.expm1(epochs * (seen + (batches - 1) * below))
    reach = tpr - floor
    usable = (reach > 0) & (reach < 1) & (alpha > 0) & (alpha < 1)
    if not usable.any():
        return 0.0
    mu = ndtri(reach[usable]) - ndtri(alpha[usable])
    # the grid's maximum, lowered a little: a lower bound must not be rounded up
    return max(0.0, float(np.max(mu)) * (1 - 1e-9))
