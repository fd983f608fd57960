"""dp-accounting's own composition of a spec's releases: the reference that the tilted
composition (``privspec.composition``) is checked against, never a source of numbers."""

from __future__ import annotations

import math
from typing import Any

from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.accounting import _Lowering, tail_mass_truncation
from privspec.gaussian_pld import gaussian_pld
from privspec.spec import Spec


def accountant_pld(spec: Spec) -> Any:
    """The spec's mechanism composed by dp-accounting (``compose``/``self_compose``)
    from the same single-release PMFs privspec composes."""
    lowering = _Lowering(spec.neighbouring, spec.accounting.discretization,
                         tail_mass_truncation(spec))
    lowered = lowering.lower(spec.mechanism)
    parts: list[tuple[Any, int]] = []
    if lowered.gaussian_mu_squared > 0:
        parts.append((gaussian_pld(1 / math.sqrt(lowered.gaussian_mu_squared),
                                   discretization=lowering.h), 1))
    for pmfs, count in lowered.parts.values():
        pmf_objects = [_dense(p, lowering.h) for p in pmfs]
        parts.append((plds.PrivacyLossDistribution(*pmf_objects), count))
    result = None
    for pld, count in parts:
        if count > 1:
            pld = pld.self_compose(count, tail_mass_truncation=lowering.truncation)
        result = pld if result is None else result.compose(
            pld, tail_mass_truncation=lowering.truncation)
    return result


def _dense(pmf: Any, h: float) -> Any:
    from dp_accounting.pld import pld_pmf

    return pld_pmf.DensePLDPmf(h, pmf.grid[1], pmf.probs, pmf.infinity_mass, True)
