"""Specs from what a training run recorded: Opacus's accountant history, a dp-accounting
event, jax_privacy's accounting parameters, TF Privacy's statement inputs.

Records are untrusted files: JSON only, read with ``json`` (never unpickled, no module
they name imported).  What a record cannot prove (the privacy unit, the neighbouring
relation, how batches were drawn) comes from the user and is never guessed.  Every
spec written says where it came from: the file's SHA-256, what was read from it, and
what the user asserted, in its ``description`` (which reports print) and in comments.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from privspec.errors import PrivspecError

if TYPE_CHECKING:
    from privspec.spec.models import Spec

#: The first bytes of files privspec will not read, and how to export JSON instead.
_BINARY = {
    b"\x80": "a Python pickle",
    b"PK\x03\x04": "a PyTorch checkpoint (.pt, a zip of pickles)",
}
_EXPORT_HINT = {
    "opacus": "Save the accountant's state as JSON: json.dump(accountant.state_dict(), f) "
              "(its history is a list of [noise_multiplier, sample_rate, steps])",
    "dp-event": "Save the event as JSON: privspec reads the named-tuple form of "
                "DpEvent.to_named_tuple(), as privspec export --dp-event writes it",
    "jax-privacy": "Save the privacy fields as JSON: the DpParams fields (noise_multipliers, "
                   "num_samples, batch_size, ...) and num_updates",
}


class RecordError(PrivspecError, ValueError):
    """A record privspec will not or cannot read, with what to do instead."""


@dataclass(frozen=True)
class Assertions:
    """What the user states and no record proves."""

    unit: str
    neighbouring: str
    sampling: str
    title: str


@dataclass(frozen=True)
class Imported:
    """A spec's data and the provenance lines to write above it."""

    data: dict[str, Any]
    provenance: list[str]


def read_record(path: str | os.PathLike[str], source: str) -> tuple[Any, str]:
    """The JSON of a record file and its SHA-256; pickles and checkpoints are refused
    with how to export JSON."""
    with open(path, "rb") as handle:
        raw = handle.read(50_000_001)
    if len(raw) > 50_000_000:
        raise RecordError(f"{os.fspath(path)}: larger than 50 MB; a record is a short file")
    for magic, what in _BINARY.items():
        if raw.startswith(magic):
            raise RecordError(f"{os.fspath(path)} is {what}; privspec never unpickles "
                               f"files (they can run code). {_EXPORT_HINT.get(source, '')}")
    try:
        return json.loads(raw.decode("utf-8")), hashlib.sha256(raw).hexdigest()
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(f"{os.fspath(path)}: not JSON ({error}). "
                           f"{_EXPORT_HINT.get(source, '')}") from None
    except RecursionError:
        raise RecordError(f"{os.fspath(path)}: nested too deeply to be a record") from None


def _dpsgd(noise: float, rate: float, steps: int, sampling: str) -> dict[str, Any]:
    return {"dpsgd": {"noise_multiplier": noise, "sampling_rate": rate, "steps": steps,
                      "sampling": sampling}}


def _spec(mechanism: dict[str, Any], said: Assertions, description: str) -> dict[str, Any]:
    return {"privspec": 1, "title": said.title, "description": description,
            "unit": said.unit, "neighbouring": said.neighbouring, "mechanism": mechanism}


def _asserted(said: Assertions) -> str:
    return (f"asserted by the user, not recorded: unit {said.unit!r}, neighbouring "
            f"{said.neighbouring}, batches drawn by {said.sampling} sampling")


def from_opacus(record: Any, digest: str | None, name: str, said: Assertions) -> Imported:
    """Opacus's ``accountant.state_dict()``: each history entry (noise multiplier, sample
    rate, steps) a DP-SGD stage.  Only Poisson sampling has a rate Opacus records."""
    history = record.get("history") if isinstance(record, dict) else None
    if not isinstance(history, list) or not history:
        raise RecordError(f"{name}: no 'history' list (Opacus's state_dict() has one: "
                           "[[noise_multiplier, sample_rate, steps], ...])")
    if said.sampling != "poisson":
        raise RecordError("Opacus records a sampling rate: its history can be imported "
                           "for --sampling poisson only; for shuffled batches write the "
                           "spec with batch_size and dataset_size (privspec import "
                           "tf-privacy does)")
    stages: list[dict[str, Any]] = []
    for i, entry in enumerate(history):
        if (not isinstance(entry, list | tuple) or len(entry) != 3
                or not all(isinstance(v, int | float) and not isinstance(v, bool)
                           for v in entry)):
            raise RecordError(f"{name}: history[{i}] is not [noise_multiplier, sample_rate, "
                               f"steps]: {entry!r}")
        noise, rate, steps = entry
        if steps != int(steps):
            raise RecordError(f"{name}: history[{i}]: steps must be a whole number")
        stages.append({"name": f"opacus history entry {i + 1}",
                       "mechanism": _dpsgd(float(noise), float(rate), int(steps),
                                           said.sampling)})
    mechanism = stages[0]["mechanism"] if len(stages) == 1 else {"compose": stages}
    read = f"{len(history)} history entr{'y' if len(history) == 1 else 'ies'} " \
           "(noise multiplier, sample rate, steps)"
    return _imported(mechanism, said, f"Opacus accountant state {name}", digest, read)


#: dp-accounting event classes and how each becomes a privspec mechanism.
def _mechanism_of_event(event: Any, path: str, said: Assertions) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise RecordError(f"{path}: expected an event object")
    kind = event.get("class_name")

    def number(key: str) -> float:
        value = event.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise RecordError(f"{path}: {kind} needs a number '{key}'")
        return float(value)

    inner = event.get("event")
    if kind == "GaussianDpEvent":
        return {"gaussian": {"noise_multiplier": number("noise_multiplier")}}
    if kind == "LaplaceDpEvent":
        return {"laplace": {"scale": number("noise_multiplier"), "sensitivity": 1.0}}
    if kind == "RandomizedResponseDpEvent":
        return {"randomized_response": {"flip_probability": number("noise_parameter"),
                                        "categories": int(number("num_buckets"))}}
    if kind == "PoissonSampledDpEvent":
        rate = number("sampling_probability")
        body = _mechanism_of_event(inner, f"{path}.event", said)
        if said.sampling != "poisson":
            raise RecordError(f"{path}: the event accounts Poisson sampling, but the "
                               f"batches were {said.sampling}: privspec will not report a "
                               "Poisson guarantee for them; write the spec by hand with "
                               "dpsgd's sampling and sizes")
        return {"poisson_sampled": {"sampling_rate": rate, "mechanism": body}}
    if kind == "SampledWithoutReplacementDpEvent":
        return {"fixed_size_sampled": {
            "batch_size": int(number("sample_size")),
            "dataset_size": int(number("source_dataset_size")),
            "mechanism": _mechanism_of_event(inner, f"{path}.event", said)}}
    if kind == "TruncatedSubsampledGaussianDpEvent":
        if said.sampling != "truncated-poisson":
            raise RecordError(f"{path}: the event accounts truncated Poisson sampling, but "
                               f"the batches were {said.sampling}")
        return {"dpsgd": {"noise_multiplier": number("noise_multiplier"),
                          "sampling_rate": number("sampling_probability"),
                          "dataset_size": int(number("dataset_size")),
                          "truncated_batch_size": int(number("truncated_batch_size")),
                          "steps": 1, "sampling": said.sampling}}
    if kind == "SelfComposedDpEvent":
        count = int(number("count"))
        body = _mechanism_of_event(inner, f"{path}.event", said)
        if "dpsgd" in body and body["dpsgd"]["steps"] == 1:  # a truncated-Poisson step
            return {"dpsgd": {**body["dpsgd"], "steps": count}}
        sampled = body.get("poisson_sampled")
        if sampled is not None and "gaussian" in sampled["mechanism"]:
            gaussian = sampled["mechanism"]["gaussian"]
            return _dpsgd(gaussian["noise_multiplier"], sampled["sampling_rate"], count,
                          said.sampling)
        return {"repeat": {"count": count, "mechanism": body}}
    if kind == "ComposedDpEvent":
        events = event.get("events")
        if not isinstance(events, list) or not events:
            raise RecordError(f"{path}: ComposedDpEvent needs a list 'events'")
        return {"compose": [{"mechanism": _mechanism_of_event(e, f"{path}.events[{i}]", said)}
                            for i, e in enumerate(events)]}
    raise RecordError(f"{path}: {kind!r} has no privspec mechanism (privspec reads "
                       "GaussianDpEvent, LaplaceDpEvent, RandomizedResponseDpEvent, "
                       "PoissonSampledDpEvent, SampledWithoutReplacementDpEvent, "
                       "TruncatedSubsampledGaussianDpEvent, SelfComposedDpEvent, "
                       "ComposedDpEvent)")


def from_dp_event(record: Any, digest: str | None, name: str, said: Assertions
                  ) -> Imported:
    """A dp-accounting event in named-tuple form (or ``privspec export --dp-event``'s
    file, whose ``event`` it is)."""
    wrapped = isinstance(record, dict) and "class_name" not in record and "event" in record
    event = record["event"] if wrapped else record  # (an event's own "event" is its inner one)
    mechanism = _mechanism_of_event(event, "event", said)
    return _imported(mechanism, said, f"dp-accounting event {name}", digest,
                     f"the event {event.get('class_name')} and everything inside it")


def _schedule(value: Any, name: str, key: str, kind: type) -> list[tuple[int, Any]]:
    """A constant or a list of [step, value] changes, as (step, value) sorted by step."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [(0, kind(value))]
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, list) and len(v) == 2 and isinstance(v[0], int)
                       and isinstance(v[1], int | float) and not isinstance(v[1], bool)
                       for v in value)):
        raise RecordError(f"{name}: '{key}' must be a number or a list of [step, value]")
    changes = sorted((int(step), kind(v)) for step, v in value)
    steps = [step for step, _ in changes]
    if len(set(steps)) != len(steps):
        raise RecordError(f"{name}: '{key}' gives two values for one step")
    if changes[0][0] != 0:
        raise RecordError(f"{name}: '{key}' must say its value from step 0")
    return changes


def _segments(noise: list[tuple[int, float]], batches: list[tuple[int, int]],
              updates: int) -> list[tuple[int, float, int]]:
    """(steps, noise multiplier, batch size) of each run of steps where neither changes."""
    starts = sorted({s for s, _ in noise + batches if s < updates})
    out = []
    n = b = 0  # the last change of each at or before ``start`` (both sorted by step)
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else updates
        while n + 1 < len(noise) and noise[n + 1][0] <= start:
            n += 1
        while b + 1 < len(batches) and batches[b + 1][0] <= start:
            b += 1
        out.append((end - start, noise[n][1], batches[b][1]))
    return out


def from_jax_privacy(record: Any, digest: str | None, name: str, said: Assertions) -> Imported:
    """jax_privacy's ``DpParams`` fields and ``num_updates`` (a training config's privacy
    fields as JSON): the logical batch is ``batch_size``, or the product of
    ``per_device_batch_size``, ``num_devices`` and ``gradient_accumulation_steps`` (each
    update accumulates that many device batches); noise multipliers and batch-size
    scales may change at given steps, each run of steps a DP-SGD stage."""
    if not isinstance(record, dict):
        raise RecordError(f"{name}: expected a JSON object of jax_privacy's DpParams fields")
    per_device = ("per_device_batch_size", "num_devices", "gradient_accumulation_steps")

    def whole(key: str) -> int:
        value = record.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RecordError(f"{name}: '{key}' must be a positive whole number (give "
                               "batch_size, or per_device_batch_size, num_devices and "
                               "gradient_accumulation_steps)" if key in per_device
                               else f"{name}: '{key}' must be a positive whole number")
        return value

    if record.get("is_finite_guarantee") is False:
        raise RecordError(f"{name}: 'is_finite_guarantee' is false (jax_privacy reports "
                           "ε = ∞ for this run, e.g. unclipped gradients): no spec can say more")
    for key, neutral, why in (
            ("truncated_batch_size", (None,), "truncated Poisson sampling is not accounted "
             "yet (dp-accounting's TruncatedSubsampledGaussianDpEvent)"),
            ("cycle_length", (None, 1), "cyclic Poisson sampling (BandMF) is not accounted"),
            ("examples_per_user", (None, 1), "user-level accounting is not supported")):
        if record.get(key) not in neutral:
            raise RecordError(f"{name}: '{key}' = {record[key]!r}: {why}; privspec reports "
                               "nothing rather than the wrong thing")
    method = record.get("sampling_method", "POISSON")
    expected = {"POISSON": "poisson", "FIXED_BATCH_SIZE": "fixed-size"}.get(str(method))
    if expected is None or expected != said.sampling:
        raise RecordError(f"{name}: sampling_method {method!r} and --sampling {said.sampling} "
                           "disagree (POISSON is poisson, FIXED_BATCH_SIZE is fixed-size)")
    examples, updates = whole("num_samples"), whole("num_updates")
    if "batch_size" in record:
        batch, how = whole("batch_size"), "batch_size"
    else:  # all three, never a default: a missing factor would shrink the batch
        parts = [whole(k) for k in per_device]
        batch, how = parts[0] * parts[1] * parts[2], (
            f"per_device_batch_size {parts[0]} × num_devices {parts[1]} × "
            f"gradient_accumulation_steps {parts[2]}")
    noise = _schedule(record.get("noise_multipliers"), name, "noise_multipliers", float)
    scales = record.get("batch_size_scale_schedule") or {}
    if not isinstance(scales, dict) or not all(
            str(k).isdigit() and isinstance(v, int) and v >= 1 for k, v in scales.items()):
        raise RecordError(f"{name}: 'batch_size_scale_schedule' must map steps to whole "
                           "numbers")
    # jax_privacy's schedule (optax's piecewise constant one): from step s on, the batch
    # is batch_size times the product of the scales at s and before.
    batches, size = [(0, batch)], batch
    for step, scale in sorted((int(s), v) for s, v in scales.items()):
        size *= scale
        batches.append((step, size))
    stages: list[dict[str, Any]] = []
    for steps, nm, bs in _segments(noise, batches, updates):
        if bs > examples:
            raise RecordError(f"{name}: a batch of {bs:,} is larger than num_samples "
                               f"{examples:,}")
        stages.append({"name": f"updates with noise {nm:g} and batch {bs:,}", "mechanism": {
            "dpsgd": {"noise_multiplier": nm, "batch_size": bs, "dataset_size": examples,
                      "steps": steps, "sampling": said.sampling}}})
    mechanism = stages[0]["mechanism"] if len(stages) == 1 else {"compose": stages}
    read = (f"num_samples {examples:,}, num_updates {updates:,}, logical batch {batch:,} "
            f"(from {how}), noise multipliers {record.get('noise_multipliers')!r}, "
            f"sampling_method {method}")
    return _imported(mechanism, said, f"jax_privacy parameters {name}", digest, read)


def from_tf_privacy(examples: int, batch: int, epochs: float, noise: float,
                    said: Assertions) -> Imported:
    """TF Privacy's privacy-statement inputs: N examples, batch B, E epochs, noise z."""
    mechanism = {"dpsgd": {"noise_multiplier": noise, "batch_size": batch,
                           "dataset_size": examples, "epochs": epochs,
                           "sampling": said.sampling}}
    read = (f"examples {examples:,}, batch {batch:,}, epochs {epochs:g}, noise multiplier "
            f"{noise:g}, as given on the command line")
    return _imported(mechanism, said, "TF Privacy statement inputs", None, read)


def _imported(mechanism: dict[str, Any], said: Assertions, source: str,
              digest: str | None, read: str) -> Imported:
    origin = source + (f" (SHA-256 {digest})" if digest else "")
    description = (f"Imported by privspec from {origin}. Read from it: {read}; "
                   f"{_asserted(said)}.")
    lines = [f"Imported by privspec from {origin}.", f"Read from it: {read}.",
             f"{_asserted(said).capitalize()}."]
    return Imported(_spec(mechanism, said, description), lines)


# -- Python API: the same from objects a training script holds -----------------------


def _plain(value: Any) -> Any:
    """A dp-accounting event (or its named tuple) as plain dicts and lists."""
    if hasattr(value, "to_named_tuple"):
        value = value.to_named_tuple()
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _validated(imported: Imported) -> Spec:
    from privspec.spec.loader import spec_from_data

    return spec_from_data(imported.data, "<imported>")


def spec_from_dp_event(event: Any, *, unit: str, neighbouring: str, sampling: str,
                       title: str = "Imported dp-accounting event") -> Spec:
    """The spec of a dp-accounting ``DpEvent`` (or its named-tuple dict), with what the
    event cannot prove stated by the caller (``privspec.from_dp_event``).  Its
    description records the provenance, as ``privspec import dp-event`` does."""
    said = Assertions(unit=unit, neighbouring=neighbouring, sampling=sampling, title=title)
    return _validated(from_dp_event(_plain(event), None, "given in Python", said))


def spec_from_opacus(history: Any, *, unit: str, neighbouring: str, sampling: str,
                     title: str = "Imported Opacus accountant history") -> Spec:
    """The spec of Opacus's accountant history, ``accountant.history`` (a list of (noise
    multiplier, sample rate, steps)) or its ``state_dict()`` (``privspec.from_opacus``).
    ``sampling`` is the caller's word for how batches were drawn, never a default: the
    history does not record it, and the spec says it was asserted."""
    said = Assertions(unit=unit, neighbouring=neighbouring, sampling=sampling, title=title)
    record = history if isinstance(history, dict) else {"history": _plain(list(history))}
    return _validated(from_opacus(record, None, "given in Python", said))
