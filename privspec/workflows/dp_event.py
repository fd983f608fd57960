"""A spec's mechanism as dp-accounting's ``DpEvent``, and back, without trusting input.

``export_dp_event(spec)`` gives the event as dp-accounting's named-tuple form (the JSON of
``DpEvent.to_named_tuple()``: ``module_name``, ``class_name`` and the fields), so that
anyone can re-check a privspec report with dp-accounting's own accountants.
``dp_event_from_json`` reads that form back for the classes listed in ``_CLASSES`` only:
unlike ``DpEvent.from_named_tuple``, it never imports a module the input names.

What dp-accounting's events cannot say exactly is exported as a valid bound and listed
in ``Export.notes``: a discrete Gaussian as its zCDP (ρ = Δ²/(2σ²), Canonne, Kamath &
Steinke 2020), an ε-DP black box as binary randomized response with that ε (its worst
case), an (ε, δ) black box as ``UnsupportedDpEvent`` (dp-accounting 0.6 has no event
for it).  A Poisson-sampled Gaussian on which one unit has k records is dp-accounting's
``MixtureOfGaussiansDpEvent`` (sensitivities 0…k, binomial weights).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from privspec.errors import EvaluationError, PrivspecError
from privspec.spec import events as ev
from privspec.spec.base import MAX_DATASET_SIZE
from privspec.spec.group import binomial_weights
from privspec.spec.models import Spec, group_iterations, spec_event

_MODULE = "dp_accounting.dp_event"

#: The dp-accounting event classes read and written, with their fields.
_CLASSES: dict[str, tuple[str, ...]] = {
    "GaussianDpEvent": ("noise_multiplier",),
    "LaplaceDpEvent": ("noise_multiplier",),
    "DiscreteLaplaceDpEvent": ("noise_parameter", "sensitivity"),
    "RandomizedResponseDpEvent": ("noise_parameter", "num_buckets"),
    "UnsupportedDpEvent": (),
    "ZCDpEvent": ("rho", "xi"),
    "PoissonSampledDpEvent": ("sampling_probability", "event"),
    "SampledWithoutReplacementDpEvent": ("source_dataset_size", "sample_size", "event"),
    "SelfComposedDpEvent": ("event", "count"),
    "ComposedDpEvent": ("events",),
    "MixtureOfGaussiansDpEvent": ("standard_deviation", "sensitivities", "sampling_probs"),
    "TruncatedSubsampledGaussianDpEvent": ("dataset_size", "sampling_probability",
                                           "truncated_batch_size", "noise_multiplier"),
}


class DpEventError(PrivspecError, ValueError):
    """An event file privspec does not read (an unknown class, a missing field)."""


@dataclass
class Export:
    """The event (named-tuple form, JSON-able), the neighbouring relation an accountant
    must be built with, and what the event states more loosely than the spec."""

    event: dict[str, Any]
    neighboring_relation: str
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"neighboring_relation": self.neighboring_relation, "notes": self.notes,
                "event": self.event}


def _named(class_name: str, **fields: Any) -> dict[str, Any]:
    return {"module_name": _MODULE, "class_name": class_name, **fields}


def _noise(scale: float, sensitivity: float) -> float:
    """scale / sensitivity, rounded down (an exported noise is never more than the
    spec's): the largest double beyond double range, 0 below it."""
    ratio = min(scale / sensitivity, sys.float_info.max)
    return math.nextafter(ratio, 0.0) if Fraction(ratio) * Fraction(sensitivity) > scale else ratio


def _rho(sensitivity: int, sigma: float) -> float:
    """A discrete Gaussian's ρ = Δ²/(2σ²), rounded up (the least double above 0 below
    double range); refused beyond it."""
    exact = Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)
    if exact > sys.float_info.max:
        raise EvaluationError(f"a discrete Gaussian of σ = {sigma:g} has ρ = Δ²/(2σ²) beyond "
                              "double range: dp-accounting's ZCDpEvent cannot hold it; a "
                              "larger sigma can")
    rho = float(exact)
    return math.nextafter(rho, math.inf) if rho < exact else rho


def _event(event: ev.Event, replace_one: bool, notes: list[str]) -> dict[str, Any]:
    if isinstance(event, ev.ComposedEvent):
        return _named("ComposedDpEvent", events=[
            _event(stage, replace_one, notes) if repeat == 1 else _named(
                "SelfComposedDpEvent", event=_event(stage, replace_one, notes), count=repeat)
            for stage, repeat in event.stages])
    if isinstance(event, ev.RepeatedEvent):
        return _named("SelfComposedDpEvent", event=_event(event.event, replace_one, notes),
                      count=event.count)
    if isinstance(event, ev.SampledEvent):
        inner = _event(event.event, replace_one, notes)
        if event.scheme == "poisson":
            return _named("PoissonSampledDpEvent", sampling_probability=event.rate, event=inner)
        share = Fraction(event.rate).limit_denominator(MAX_DATASET_SIZE)
        return _named("SampledWithoutReplacementDpEvent",
                      source_dataset_size=share.denominator, sample_size=share.numerator,
                      event=inner)
    if isinstance(event, ev.MixtureGaussianEvent):
        return _named("MixtureOfGaussiansDpEvent",
                      standard_deviation=_noise(event.sigma, event.sensitivity),
                      sensitivities=[float(j) for j in range(event.records + 1)],
                      sampling_probs=binomial_weights(event.records, event.rate))
    if isinstance(event, ev.RandomAllocationEvent):
        notes.append("dp-accounting has no event for random allocation: each epoch is "
                     "exported as one Gaussian step with the record in it (no "
                     "amplification: a valid but looser event)")
        return _named("GaussianDpEvent", noise_multiplier=event.sigma)
    if isinstance(event, ev.TruncatedPoissonEvent):
        return _named("TruncatedSubsampledGaussianDpEvent", dataset_size=event.dataset_size,
                      sampling_probability=event.rate,
                      truncated_batch_size=event.truncated_batch,
                      noise_multiplier=event.sigma)
    if isinstance(event, ev.GaussianEvent):
        # dp-accounting's Gaussian has sensitivity 1 (a clipped sum under its relation;
        # k clipping norms for a unit of k records)
        return _named("GaussianDpEvent", noise_multiplier=_noise(event.sigma, event.sensitivity))
    if isinstance(event, ev.LaplaceEvent):
        return _named("LaplaceDpEvent", noise_multiplier=_noise(event.scale, event.sensitivity))
    if isinstance(event, ev.DiscreteLaplaceEvent):
        return _named("DiscreteLaplaceDpEvent", noise_parameter=event.parameter,
                      sensitivity=event.sensitivity)
    if isinstance(event, ev.DiscreteGaussianEvent):
        notes.append("a discrete Gaussian is exported as its zCDP, ρ = Δ²/(2σ²) (Canonne, "
                     "Kamath & Steinke 2020): a valid but looser event")
        return _named("ZCDpEvent", rho=_rho(event.sensitivity, event.sigma), xi=0.0)
    if isinstance(event, ev.RandomizedResponseEvent):
        return _named("RandomizedResponseDpEvent", noise_parameter=event.noise,
                      num_buckets=event.categories)
    if isinstance(event, ev.PureDPEvent):
        # its worst case (Kairouz, Oh & Viswanath 2015): binary randomized response with
        # the same ε, whose answer is replaced with probability 2/(1 + e^ε)
        return _named("RandomizedResponseDpEvent",
                      noise_parameter=2 / (1 + math.exp(event.epsilon)), num_buckets=2)
    if isinstance(event, ev.ApproximateDPEvent):
        notes.append("dp-accounting has no event for an (ε, δ)-DP black box: it is exported "
                     "as UnsupportedDpEvent, which its accountants refuse")
        return _named("UnsupportedDpEvent")
    raise TypeError(f"no dp-accounting event for {type(event).__name__}")  # pragma: no cover


def export_dp_event(spec: Spec) -> Export:
    """The spec's mechanism as a dp-accounting event, with the relation to account it
    under (``ADD_OR_REMOVE_ONE`` or ``REPLACE_ONE``)."""
    from privspec.numerics.strategy_file import read_strategy_files

    read_strategy_files(spec)  # a strategy file's values (``EvaluationError``: a bad one)
    replace_one = spec.neighbouring == "replace-one"
    notes: list[str] = []
    if group_iterations(spec) > 1:
        notes.append(f"a unit of {spec.records_per_unit:,} records is accounted by f-DP "
                     "group privacy on the whole mechanism's curve, which no dp-accounting "
                     "event describes: it is exported as UnsupportedDpEvent, which its "
                     "accountants refuse")
        relation = "REPLACE_ONE" if replace_one else "ADD_OR_REMOVE_ONE"
        return Export(_named("UnsupportedDpEvent"), relation, notes)
    event = _event(spec_event(spec), replace_one, notes)
    if replace_one and any(not e.clipped for e in _gaussians(spec_event(spec))):
        notes.append("under REPLACE_ONE dp-accounting doubles every Gaussian's shift; a "
                     "gaussian given by sigma and sensitivity already states its shift, so "
                     "its accounting there is looser than privspec's")
    if spec.records_per_unit > 1:
        notes.append(f"the event describes one unit of up to {spec.records_per_unit:,} "
                     "records (records_per_unit): its sensitivities are the unit's, and an "
                     "accountant's figures hold for the unit")
    relation = "REPLACE_ONE" if replace_one else "ADD_OR_REMOVE_ONE"
    return Export(event, relation, list(dict.fromkeys(notes)))


def _gaussians(event: ev.Event) -> list[ev.GaussianEvent]:
    if isinstance(event, ev.ComposedEvent):
        return [g for stage, _ in event.stages for g in _gaussians(stage)]
    if isinstance(event, ev.RepeatedEvent | ev.SampledEvent):
        return _gaussians(event.event)
    return [event] if isinstance(event, ev.GaussianEvent) else []


def dp_event_from_json(data: Any, path: str = "event") -> Any:
    """The dp-accounting event of a named-tuple dict, for the classes privspec knows;
    DpEventError naming the place otherwise.  Imports dp-accounting, never a module the
    input names."""
    from dp_accounting import dp_event

    if not isinstance(data, dict):
        raise DpEventError(f"{path}: expected an event (a JSON object), got "
                           f"{type(data).__name__}")
    name = data.get("class_name")
    if name not in _CLASSES:
        known = ", ".join(_CLASSES)
        raise DpEventError(f"{path}: class_name {name!r} is not an event privspec reads "
                           f"({known})")
    values = {}
    for key in _CLASSES[name]:
        if key not in data:
            if key == "xi":
                continue
            raise DpEventError(f"{path}: {name} needs '{key}'")
        value = data[key]
        if key == "event":
            value = dp_event_from_json(value, f"{path}.event")
        elif key == "events":
            if not isinstance(value, list):
                raise DpEventError(f"{path}.events: expected a list")
            value = [dp_event_from_json(item, f"{path}.events[{i}]")
                     for i, item in enumerate(value)]
        elif key in ("sensitivities", "sampling_probs"):
            if not isinstance(value, list) or not all(_is_number(v) for v in value):
                raise DpEventError(f"{path}.{key}: expected a list of numbers")
        elif not _is_number(value):
            raise DpEventError(f"{path}.{key}: expected a number, got {value!r}")
        values[key] = value
    return getattr(dp_event, name)(**values)


def _is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
