"""Who is protected: a unit (the spec's ``unit:``) that contributes up to k records.

``grouped(event, k)`` turns what one record's neighbours release into what one unit's
do, where privspec accounts it exactly: an additive release with a per-record
sensitivity Δ moves by at most k·Δ (so a Gaussian's μ is kΔ/σ); a Poisson-sampled
Gaussian samples Binomial(k, q) of the unit's records, a mixture of Gaussians (Ganesh
2024, arXiv:2401.10294, Thm 3.1).  ``group_problem`` says, for the mechanism as
written, where that is not accounted yet (the spec is refused there).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, get_args

from privspec.spec import events as ev
from privspec.spec.kinds import KINDS
from privspec.spec.kinds.dpsgd import Sampling

#: Words of ``unit:`` that name a person-like unit, who may well hold many records.
PERSON_WORDS = ("person", "people", "user", "patient", "respondent", "household",
                "individual", "client", "device", "customer")

#: Kinds whose release moves by at most k times its per-record sensitivity.
SCALED_KINDS = ("gaussian", "laplace", "discrete_gaussian", "discrete_laplace")

_ACCOUNTED = ("accounted for units of several records: gaussian, laplace, "
              "discrete_gaussian and discrete_laplace on the whole dataset, a gaussian "
              "under poisson_sampled and dpsgd with Poisson sampling (add-or-remove or "
              "zero-out), and repeat or compose of these")


def person_word(unit: str) -> str | None:
    """The first of ``PERSON_WORDS`` that ``unit`` contains as a whole word (any case, a
    plural 's' allowed), as listed; None when it names none."""
    words: list[str] = re.findall(r"[a-z]+", unit.casefold())
    for word in words:
        for candidate in (word, word[:-1] if word.endswith("s") else word):
            if candidate in PERSON_WORDS:
                return candidate
    return None


def protected_unit(unit: str, records: int, unit_level: bool) -> str:
    """Who a guarantee protects, in words (plain text: each output escapes it):
    ``unit``, with its records when there are several, or said to be sampled and
    bounded as one (``unit_level``)."""
    if records > 1:
        return f"{unit} with up to {records:,} records"
    return f"{unit} (sampled and bounded as one)" if unit_level else unit


def for_whom(unit: str, records: int, unit_level: bool) -> str:
    """" for UNIT with up to k records" (``protected_unit``) after a figure, when the unit
    is not one record of the mechanism; nothing when it is."""
    if records == 1 and not unit_level:
        return ""
    return " for " + protected_unit(unit, records, unit_level)


def _kind_of(node: Any) -> str | None:
    """The kind of a mechanism as written, when it is one privspec knows."""
    if isinstance(node, dict) and len(node) == 1:
        kind = next(iter(node))
        return kind if kind in KINDS else None
    return None


def group_problem(kind: str, fields: Any, relation: str, records: int,
                  sampled: bool) -> str | None:
    """Why a mechanism node of ``kind`` (its ``fields`` as written) cannot be accounted
    for units of ``records`` > 1 records under ``relation``; None when it can or when
    ``records`` is 1.  ``sampled``: the node runs under a sampling node (which is
    judged, with it, on its own).  Malformed fields are left to their own errors."""
    if records == 1 or sampled or kind in ("repeat", "compose", *SCALED_KINDS):
        return None
    if kind in ("poisson_sampled", "dpsgd") and not isinstance(fields, dict):
        return None
    if kind == "poisson_sampled":
        inner = _kind_of(fields.get("mechanism"))
        if inner is None:
            return None
        if inner != "gaussian":
            return _refusal(records, f"poisson_sampled over '{inner}'")
    if kind == "dpsgd":
        sampling = fields.get("sampling", "poisson")
        if sampling not in get_args(Sampling):
            return None
        if sampling != "poisson":
            return _refusal(records, f"dpsgd with '{sampling}' batches")
    if kind in ("poisson_sampled", "dpsgd"):
        return (_refusal(records, f"{kind} under replace-one neighbours")
                if relation == "replace-one" else None)
    return _refusal(records, f"'{kind}'")


def _refusal(records: int, what: str) -> str:
    return (f"records_per_unit {records} is not yet accounted for {what}; state "
            f"records_per_unit: 1 with a unit that is one record, or use a mechanism "
            f"{_ACCOUNTED}")


def group_routes(event: ev.Event) -> set[str]:
    """How a unit's releases in ``event`` (from ``grouped``) are accounted: "mixture"
    for a Poisson-sampled Gaussian's mixture, "scaled" for a release whose sensitivity
    was scaled by k."""
    if isinstance(event, ev.ComposedEvent):
        return set().union(*(group_routes(stage) for stage, _ in event.stages))
    if isinstance(event, ev.RepeatedEvent):
        return group_routes(event.event)
    return {"mixture"} if isinstance(event, ev.MixtureGaussianEvent) else {"scaled"}


def grouped(event: ev.Event, records: int) -> ev.Event:
    """What ``event`` releases about one unit of ``records`` records, for the events
    ``group_problem`` accepts (ValueError for any other)."""
    if records == 1:
        return event
    if isinstance(event, ev.ComposedEvent):
        return ev.ComposedEvent(tuple((grouped(stage, records), repeat)
                                      for stage, repeat in event.stages))
    if isinstance(event, ev.RepeatedEvent):
        return ev.RepeatedEvent(grouped(event.event, records), event.count)
    if (isinstance(event, ev.SampledEvent) and event.scheme == "poisson"
            and isinstance(event.event, ev.GaussianEvent)):
        return ev.MixtureGaussianEvent(event.event.sigma, event.event.sensitivity,
                                       event.rate, records)
    if isinstance(event, ev.GaussianEvent | ev.LaplaceEvent):
        return dataclasses.replace(event, sensitivity=records * event.sensitivity)
    if isinstance(event, ev.DiscreteGaussianEvent | ev.DiscreteLaplaceEvent):  # (integer Δ)
        return dataclasses.replace(event, sensitivity=records * event.sensitivity)
    raise ValueError(f"records_per_unit {records} is not accounted for "
                     f"{type(event).__name__}")


def binomial_weights(records: int, rate: float) -> list[float]:
    """P(j of ``records`` records are sampled at ``rate``), j = 0…records, from
    log-gamma (no overflow for large counts); j = 0 takes the rest of 1, so that the
    weights sum to one (their rounding, about 10⁻¹⁶, is far below the floor τ)."""
    log_rate, log_rest = math.log(rate), math.log1p(-rate)
    sampled = [math.exp(math.lgamma(records + 1) - math.lgamma(j + 1)
                        - math.lgamma(records - j + 1) + j * log_rate
                        + (records - j) * log_rest) for j in range(1, records + 1)]
    return [max(0.0, 1.0 - math.fsum(sampled)), *sampled]
