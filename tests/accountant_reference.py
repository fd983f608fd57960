"""dp-accounting's own composition of a spec's releases: the reference that the tilted
composition (``privspec.numerics.composition``) is checked against, never a source of numbers."""

from __future__ import annotations

from typing import Any

from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.numerics.accounting import _Lowering, tail_mass_truncation
from privspec.numerics.composition import accountant_compose
from privspec.spec.models import Spec, group_iterations, spec_event


def accountant_pld(spec: Spec) -> Any:
    """The spec's mechanism composed by dp-accounting (``self_compose``, ``compose``)
    from the same single-release PMFs that privspec composes: one unit's releases
    (``spec_event``; a unit accounted by group privacy on the whole curve has no such
    composition, so it is refused here)."""
    if group_iterations(spec) > 1:
        raise ValueError("a unit accounted by f-DP group privacy has no release-by-release "
                         "composition to compare with")
    lowering = _Lowering(spec.neighbouring, spec.accounting.discretization,
                         tail_mass_truncation(spec))
    releases = lowering.releases(lowering.lower(spec_event(spec)))
    directions = max(len(pmfs) for pmfs, _ in releases)
    return plds.PrivacyLossDistribution(*(
        accountant_compose([(pmfs[min(d, len(pmfs) - 1)], count) for pmfs, count in releases],
                           lowering.h, lowering.truncation)
        for d in range(directions)))
