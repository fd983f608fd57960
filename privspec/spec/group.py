"""Who is protected: a unit (the spec's ``unit:``) that contributes up to k records.

``grouped(event, k)`` turns what one record's neighbours release into what one unit's
do, where privspec accounts it release by release: an additive release with a
per-record sensitivity Δ moves by at most k·Δ (so a Gaussian's μ is kΔ/σ); a
Poisson-sampled Gaussian samples Binomial(k, q) of the unit's records, a mixture of
Gaussians (Ganesh 2024, arXiv:2401.10294, Thm 3.1).  Any other mechanism is accounted
by f-DP group privacy on the whole mechanism's curve (``iterated``; Dong, Roth & Su
2022, Thm 2.14: ``privspec.numerics.group_privacy``).
"""

from __future__ import annotations

import dataclasses
import math
import re

from privspec.spec import events as ev

#: Words of ``unit:`` that name a person-like unit, who may well hold many records.
PERSON_WORDS = ("person", "people", "user", "patient", "respondent", "household",
                "individual", "client", "device", "customer")


def person_word(unit: str) -> str | None:
    """The first of ``PERSON_WORDS`` that ``unit`` contains as a whole word (any case, a
    plural 's' allowed), as listed; None when it names none."""
    words: list[str] = re.findall(r"[a-z]+", unit.casefold())
    for word in words:
        for candidate in (word, word[:-1] if word.endswith("s") else word):
            if candidate in PERSON_WORDS:
                return candidate
    return None


#: How a unit's releases are accounted: each additive release's sensitivity scaled by k,
#: each Poisson-sampled Gaussian as a mixture, or the whole mechanism's curve iterated.
ROUTES = ("scaled", "mixture", "group-privacy")


def protected_unit(unit: str, records: int, unit_level: bool) -> str:
    """Who a guarantee protects, in words (plain text: each output escapes it):
    ``unit``, with its records when there are several, or said to be sampled and
    bounded as one (``unit_level``)."""
    if records > 1:
        return f"{unit} with up to {records:,} records"
    return f"{unit} (sampled and bounded as one)" if unit_level else unit


def attacker_knows(records: int, unit_level: bool) -> str:
    """What the attacker of a bound knows of everyone else, as the reports word it: every
    other "record", "unit" (sampled and bounded as one) or "unit's records"."""
    return "unit's records" if records > 1 else "unit" if unit_level else "record"


def for_whom(unit: str, records: int, unit_level: bool) -> str:
    """" for UNIT with up to k records" (``protected_unit``) after a figure, when the unit
    is not one record of the mechanism; nothing when it is."""
    if records == 1 and not unit_level:
        return ""
    return " for " + protected_unit(unit, records, unit_level)


def group_sizes(records: int) -> list[int]:
    """The sizes of a unit's group table: 1, 2, 4, … below ``records``, and ``records``."""
    return [*(2**power for power in range(records.bit_length()) if 2**power < records),
            records]


def has_group_form(event: ev.Event, replace_one: bool) -> bool:
    """Whether every release of ``event`` is accounted for a unit release by release by
    ``grouped``: an unsampled additive release, or a Poisson-sampled Gaussian under
    add-or-remove or zero-out (its mixture)."""
    if isinstance(event, ev.ComposedEvent):
        return all(has_group_form(stage, replace_one) for stage, _ in event.stages)
    if isinstance(event, ev.RepeatedEvent):
        return has_group_form(event.event, replace_one)
    if isinstance(event, ev.SampledEvent):
        return (event.scheme == "poisson" and not replace_one
                and isinstance(event.event, ev.GaussianEvent))
    return isinstance(event, ev.GaussianEvent | ev.LaplaceEvent | ev.DiscreteGaussianEvent
                      | ev.DiscreteLaplaceEvent)


def iterated(event: ev.Event, records: int, replace_one: bool) -> bool:
    """Whether a unit of ``records`` records is accounted by f-DP group privacy on the
    whole curve of ``event`` (one record's mechanism): when some release has no form of
    its own for a unit (``has_group_form``).  Group privacy is applied after
    composition, to the curve of the whole mechanism, never release by release."""
    return records > 1 and not has_group_form(event, replace_one)


def group_routes(event: ev.Event) -> set[str]:
    """How a unit's releases in ``event`` (from ``grouped``) are accounted: "mixture"
    for a Poisson-sampled Gaussian's mixture, "scaled" for a release whose sensitivity
    was scaled by k (``ROUTES``; "group-privacy" is the whole mechanism's, ``iterated``)."""
    if isinstance(event, ev.ComposedEvent):
        return set().union(*(group_routes(stage) for stage, _ in event.stages))
    if isinstance(event, ev.RepeatedEvent):
        return group_routes(event.event)
    return {"mixture"} if isinstance(event, ev.MixtureGaussianEvent) else {"scaled"}


def grouped(event: ev.Event, records: int) -> ev.Event:
    """What ``event`` releases about one unit of ``records`` records, for the events
    ``has_group_form`` accepts (ValueError for any other)."""
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
