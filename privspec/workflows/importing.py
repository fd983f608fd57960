"""Specs from what a training run recorded: Opacus's accountant history, a dp-accounting
event, jax_privacy's accounting parameters, TF Privacy's statement inputs.

Records are untrusted files: JSON only, read with ``json`` (never unpickled, no module
they name imported).  What a record cannot prove (the privacy unit, the neighbouring
relation, how batches were drawn) comes from the user and is never guessed.  Every
spec written says where it came from: the file's SHA-256, what was read from it, and
what the user asserted, in its ``description`` (which reports print) and in comments.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import reprlib
from typing import TYPE_CHECKING, Any

from privspec.errors import PrivspecError
from privspec.spec import json_reader
from privspec.spec.base import MAX_DATASET_SIZE, MAX_REPETITIONS
from privspec.spec.group import binomial_weights
from privspec.spec.models import MAX_RECORDS_PER_UNIT
from privspec.workflows.builders import spec_file_text, unsafe_character

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


@dataclasses.dataclass(frozen=True)
class Assertions:
    """What the user states and no record proves."""

    unit: str
    neighbouring: str | None  # (None: read from the record, where it says one)
    sampling: str
    title: str
    partial_batch: str | None = None  # shuffled batches: an epoch's last one kept or dropped
    unit_level: bool = False  # units sampled, each one's contribution clipped as one


@dataclasses.dataclass(frozen=True)
class Imported:
    """A spec's data and the provenance lines to write above it."""

    data: dict[str, Any]
    provenance: list[str]


#: The largest record read, the most items one of its lists may hold and the most
#: values it may hold in all: a training run's record is short, and the spec it makes
#: must fit in a spec file (1 MB, a few thousand stages).
MAX_RECORD_BYTES = 10_000_000
MAX_LIST_ITEMS = 3_000
MAX_RECORD_VALUES = 100_000
#: The most digits of a whole number read (more than any count or size a spec allows).
MAX_DIGITS = 30


class _Unreadable:
    """A number of a record's JSON that privspec does not read (NaN, ±Infinity, beyond a
    double, more than MAX_DIGITS digits), kept to be reported where it stands."""

    def __init__(self, why: str) -> None:
        self.why = why


def _json_float(text: str) -> float | _Unreadable:
    value = float(text)
    return value if math.isfinite(value) else _Unreadable(f"{text} is beyond a double's range")


def _json_int(text: str) -> int | _Unreadable:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= MAX_DIGITS else _Unreadable(
        f"a whole number of {digits:,} digits is out of range (at most {MAX_DIGITS})")


def _json_constant(text: str) -> _Unreadable:
    return _Unreadable(f"{text} is not a finite number")


def read_record(path: str | os.PathLike[str], source: str) -> tuple[Any, str]:
    """The JSON of a record file and its SHA-256.  Refused, with what to do instead:
    pickles and checkpoints, a path a spec's comment cannot hold, a record larger than
    MAX_RECORD_BYTES (before parsing), with a list longer than MAX_LIST_ITEMS or more
    than MAX_RECORD_VALUES values, or a number that is not finite or has more than
    MAX_DIGITS digits (located by its place in the JSON)."""
    label = os.fspath(path)
    unsafe = unsafe_character(label)
    if unsafe is not None:
        raise RecordError(f"{label!r}: the file name holds {unsafe}, a control or "
                          "bidirectional-override character, and the spec names its record; "
                          "rename the file")
    with open(path, "rb") as handle:
        raw = handle.read(MAX_RECORD_BYTES + 1)
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"{label}: larger than {MAX_RECORD_BYTES:,} bytes, the most "
                          "privspec reads; a record is a short file")
    for magic, what in _BINARY.items():
        if raw.startswith(magic):
            raise RecordError(f"{label} is {what}; privspec never unpickles "
                               f"files (they can run code). {_EXPORT_HINT.get(source, '')}")
    try:
        record = json_reader.loads(raw.decode("utf-8"), parse_float=_json_float,
                                   parse_int=_json_int, parse_constant=_json_constant)
    except json_reader.DuplicateKeyError as error:
        raise RecordError(f"{label}: line {error.lineno} column {error.colno}: "
                          f"{error.msg}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(f"{label}: not JSON ({error}). "
                           f"{_EXPORT_HINT.get(source, '')}") from None
    except RecursionError:
        raise RecordError(f"{label}: nested too deeply to be a record") from None
    except MemoryError:
        raise RecordError(f"{label}: not enough memory to read its {len(raw):,} bytes; run "
                          "privspec with more memory") from None
    _check_record(record, os.path.basename(label))
    return record, hashlib.sha256(raw).hexdigest()


def _check_record(record: Any, name: str) -> None:
    """RecordError at the first unreadable number, over-long list or value too many."""
    pending: list[tuple[Any, str]] = [(record, "")]
    seen = 0
    while pending:
        value, where = pending.pop()
        seen += 1
        if seen > MAX_RECORD_VALUES:
            raise RecordError(f"{name}: more than {MAX_RECORD_VALUES:,} values, the most "
                              "privspec reads; a record is short")
        if isinstance(value, _Unreadable):
            raise RecordError(f"{name}: {where or 'the record'}: {value.why}")
        if isinstance(value, list):
            if len(value) > MAX_LIST_ITEMS:
                raise RecordError(f"{name}: {where or 'the record'} has {len(value):,} "
                                  f"items; privspec reads lists of at most "
                                  f"{MAX_LIST_ITEMS:,} (a spec file holds no more stages)")
            pending += reversed([(item, f"{where}[{i}]") for i, item in enumerate(value)])
        elif isinstance(value, dict):
            pending += reversed([(item, f"{where}{_key(key, not where)}")
                                 for key, item in value.items()])


def _key(key: str, first: bool) -> str:
    """A JSON key in a located message: ``.name``, or ``['odd key']`` escaped."""
    if key.isidentifier():
        return key if first else f".{key}"
    return f"[{reprlib.repr(key)}]"


def _shown(value: Any) -> str:
    """A record's value in a message: short, on one line."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"a whole number of about {value.bit_length() * math.log10(2):,.0f} digits"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:,}" if value.is_integer() and abs(value) < 1e15 else f"{value:g}"
    return reprlib.repr(value)


def _number(value: Any, where: str, *, whole: bool = False, above: float | None = None,
            least: float | None = None, most: float | None = None) -> Any:
    """``value`` checked before use: a finite number (a whole one when ``whole``),
    above ``above``, at least ``least`` and at most ``most``; RecordError naming
    ``where`` (the record and the field) otherwise.  A whole number is returned as an
    int, any other as a float."""
    if isinstance(value, _Unreadable):
        raise RecordError(f"{where}: {value.why}")
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise RecordError(f"{where}: expected a number, got {_shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise RecordError(f"{where}: {value} is not a finite number")
    if whole and value != int(value):
        raise RecordError(f"{where}: expected a whole number, got {value!r}")
    limits = [f"{word} {_shown(limit)}" for word, limit in (("above", above), ("at least", least),
                                                        ("at most", most)) if limit is not None]
    if ((above is not None and not value > above) or (least is not None and value < least)
            or (most is not None and value > most)):
        raise RecordError(f"{where}: must be {' and '.join(limits)}, got {_shown(value)}")
    return int(value) if whole else float(value)


def _dpsgd(noise: float, rate: float, steps: int, sampling: str) -> dict[str, Any]:
    return {"dpsgd": {"noise_multiplier": noise, "sampling_rate": rate, "steps": steps,
                      "sampling": sampling}}


def _spec(mechanism: dict[str, Any], said: Assertions, description: str,
          records: int) -> dict[str, Any]:
    return {"privspec": 1, "title": said.title, "description": description,
            "unit": said.unit, **({"records_per_unit": records} if records > 1 else {}),
            **({"unit_level": True} if said.unit_level else {}),
            "neighbouring": said.neighbouring, "mechanism": mechanism}


def _asserted(said: Assertions, relation_recorded: bool = False) -> str:
    relation = "" if relation_recorded else f"neighbouring {said.neighbouring}, "
    partial = ("" if said.partial_batch is None
               else f", each epoch's partial last batch {said.partial_batch}")
    units = (", each batch drawn from units and each unit's contribution clipped as one "
             "(unit_level: the record's counts count units)" if said.unit_level else "")
    return (f"asserted by the user, not recorded: unit {said.unit!r}, {relation}"
            f"batches drawn by {said.sampling} sampling{partial}{units}")


def from_opacus(record: Any, digest: str | None, name: str, said: Assertions) -> Imported:
    """Opacus's ``accountant.history`` (a list of [noise multiplier, sample rate, steps])
    or its ``state_dict()``, which holds it: each entry a DP-SGD stage.  Only Poisson
    sampling has a rate Opacus records."""
    bare = isinstance(record, list)
    history = record if bare else record.get("history") if isinstance(record, dict) else None
    if not isinstance(history, list) or not history:
        raise RecordError(f"{name}: no 'history' list (Opacus's state_dict() has one, "
                          "and accountant.history is one: [[noise_multiplier, sample_rate, "
                          "steps], ...])")
    if said.sampling != "poisson":
        raise RecordError("Opacus records a sampling rate: its history can be imported "
                           "for --sampling poisson only; for shuffled batches write the "
                           "spec with batch_size, dataset_size and partial_batch "
                           "(privspec import tf-privacy --sampling shuffled "
                           "--partial-batch kept|dropped does)")
    stages: list[dict[str, Any]] = []
    for i, entry in enumerate(history):
        where = f"{name}: {'' if bare else 'history'}[{i}]"
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise RecordError(f"{where} is not [noise_multiplier, sample_rate, steps]: "
                               f"{_shown(entry)}")
        noise = _number(entry[0], f"{where}[0] (noise multiplier)", above=0)
        rate = _number(entry[1], f"{where}[1] (sample rate)", above=0, most=1)
        steps = _number(entry[2], f"{where}[2] (steps)", whole=True, least=1,
                        most=MAX_REPETITIONS)
        stages.append({"name": f"opacus history entry {i + 1}",
                       "mechanism": _dpsgd(noise, rate, steps, said.sampling)})
    mechanism = stages[0]["mechanism"] if len(stages) == 1 else {"compose": stages}
    read = f"{len(history)} history entr{'y' if len(history) == 1 else 'ies'} " \
           "(noise multiplier, sample rate, steps)"
    source = "Opacus accountant history" if bare else "Opacus accountant state"
    return _imported(mechanism, said, f"{source} {name}", digest, read)


#: What each number of a dp-accounting event must be (``_number``'s limits).
_EVENT_FIELDS: dict[str, dict[str, Any]] = {
    "noise_multiplier": {"above": 0},
    "standard_deviation": {"above": 0},
    "noise_parameter": {"above": 0, "most": 1},
    "num_buckets": {"whole": True, "least": 2, "most": 1_000_000},
    "sampling_probability": {"above": 0, "most": 1},
    "sample_size": {"whole": True, "least": 1, "most": MAX_DATASET_SIZE},
    "source_dataset_size": {"whole": True, "least": 1, "most": MAX_DATASET_SIZE},
    "dataset_size": {"whole": True, "least": 1, "most": MAX_DATASET_SIZE},
    "truncated_batch_size": {"whole": True, "least": 1, "most": MAX_REPETITIONS},
    "count": {"whole": True, "least": 1, "most": MAX_REPETITIONS},
}


#: dp-accounting event classes and how each becomes a privspec mechanism.
def _event_number(event: dict[str, Any], path: str, key: str) -> Any:
    """The number ``key`` of ``event`` (at ``path``), checked as ``_EVENT_FIELDS`` says."""
    if key not in event:
        raise RecordError(f"{path}: {reprlib.repr(event.get('class_name'))} needs a number "
                          f"'{key}'")
    return _number(event[key], f"{path}.{key}", **_EVENT_FIELDS[key])


def _single_mechanism(event: dict[str, Any], path: str, said: Assertions
                      ) -> dict[str, Any] | None:
    """The mechanism of an event that holds no other event; None for the others."""
    kind = event.get("class_name")
    number = functools.partial(_event_number, event, path)
    if kind == "GaussianDpEvent":
        return {"gaussian": {"noise_multiplier": number("noise_multiplier")}}
    if kind == "LaplaceDpEvent":
        return {"laplace": {"scale": number("noise_multiplier"), "sensitivity": 1.0}}
    if kind == "RandomizedResponseDpEvent":
        return {"randomized_response": {"flip_probability": number("noise_parameter"),
                                        "categories": number("num_buckets")}}
    if kind == "MixtureOfGaussiansDpEvent":
        return _unit_mixture(event, path, said)
    if kind == "TruncatedSubsampledGaussianDpEvent":
        if said.sampling != "truncated-poisson":
            raise RecordError(f"{path}: the event accounts truncated Poisson sampling, but "
                               f"the batches were {said.sampling}")
        return {"dpsgd": {"noise_multiplier": number("noise_multiplier"),
                          "sampling_rate": number("sampling_probability"),
                          "dataset_size": number("dataset_size"),
                          "truncated_batch_size": number("truncated_batch_size"),
                          "steps": 1, "sampling": said.sampling}}
    return None


def _unit_mixture(event: dict[str, Any], path: str, said: Assertions) -> dict[str, Any]:
    """A Poisson-sampled Gaussian step on a unit of k records, as ``export --dp-event``
    writes it (``MixtureOfGaussiansDpEvent``: sensitivities 0, 1, …, k, the Binomial(k, q)
    weights); the spec's ``records_per_unit`` is k (``_records_per_unit``)."""
    sensitivities, weights = event.get("sensitivities"), event.get("sampling_probs")
    records = len(sensitivities) - 1 if isinstance(sensitivities, list) else 0
    if (not 1 <= records <= MAX_RECORDS_PER_UNIT
            or sensitivities != [float(j) for j in range(records + 1)]
            or not isinstance(weights, list) or len(weights) != records + 1
            or not all(isinstance(w, float | int) and 0 <= w <= 1 for w in weights)):
        raise RecordError(f"{path}: privspec reads a MixtureOfGaussiansDpEvent as one unit's "
                          f"k records in a Poisson-sampled batch: 'sensitivities' 0, 1, …, k "
                          f"(k at most {MAX_RECORDS_PER_UNIT:,}) and 'sampling_probs' the "
                          "k + 1 Binomial(k, q) weights")
    if said.sampling != "poisson":
        raise RecordError(f"{path}: the event accounts Poisson sampling, but the batches "
                          f"were {said.sampling}")

    def misfit(q: float) -> float:  # how far the weights are from Binomial(k, q)'s
        if not 0 < q < 1:
            return math.inf
        return float(max(abs(a - b) for a, b in zip(binomial_weights(records, q), weights,
                                                    strict=True)))

    mean = math.fsum(j * w for j, w in enumerate(weights)) / records
    rate = min((float(f"{mean:.12g}"), mean), key=misfit)
    if misfit(rate) > 1e-12:
        raise RecordError(f"{path}: 'sampling_probs' are not the Binomial({records}, q) "
                          "weights of one sampling rate q")
    return {"poisson_sampled": {"sampling_rate": rate, "mechanism": {"gaussian": {
        "noise_multiplier": _event_number(event, path, "standard_deviation")}}}}


def _records_per_unit(event: Any, path: str) -> int:
    """k when every release of ``event`` is a mixture of one unit's k records (``1`` when
    none is); refused when mixtures sit beside other releases or disagree on k (their
    sensitivities then say nothing certain about a unit's records)."""
    leaves: list[dict[str, Any]] = []
    pending = [event]
    while pending:
        node = pending.pop()
        if isinstance(node, dict) and isinstance(node.get("events"), list):
            pending.extend(node["events"])
        elif isinstance(node, dict) and isinstance(node.get("event"), dict):
            pending.append(node["event"])
        else:
            leaves.append(node)
    sizes = {len(leaf.get("sensitivities") or ()) - 1 for leaf in leaves
             if isinstance(leaf, dict) and leaf.get("class_name") == "MixtureOfGaussiansDpEvent"}
    if not sizes:
        return 1
    if len(sizes) > 1 or any(not isinstance(leaf, dict) or leaf.get("class_name")
                             != "MixtureOfGaussiansDpEvent" for leaf in leaves):
        raise RecordError(f"{path}: mixtures of Gaussians beside other releases, or for "
                          "units of different sizes: privspec imports one unit's k records "
                          "only when every release is such a mixture with the same k")
    return sizes.pop()


def _mechanism_of_event(event: Any, path: str, said: Assertions) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise RecordError(f"{path}: expected an event object")
    single = _single_mechanism(event, path, said)
    if single is not None:
        return single
    kind = event.get("class_name")
    number = functools.partial(_event_number, event, path)
    inner = event.get("event")
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
            "batch_size": number("sample_size"),
            "dataset_size": number("source_dataset_size"),
            "mechanism": _mechanism_of_event(inner, f"{path}.event", said)}}
    if kind == "SelfComposedDpEvent":
        count = number("count")
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
    raise RecordError(f"{path}: {reprlib.repr(kind)} has no privspec mechanism (privspec reads "
                       "GaussianDpEvent, LaplaceDpEvent, RandomizedResponseDpEvent, "
                       "PoissonSampledDpEvent, SampledWithoutReplacementDpEvent, "
                       "TruncatedSubsampledGaussianDpEvent, SelfComposedDpEvent, "
                       "ComposedDpEvent)")


#: dp-accounting's neighbouring relations (``export --dp-event`` writes one beside the
#: event) and the spec relations each accounts: zero-out is exported as add-or-remove.
_RELATIONS = {"ADD_OR_REMOVE_ONE": ("add-or-remove", "zero-out"),
              "REPLACE_ONE": ("replace-one",)}


def from_dp_event(record: Any, digest: str | None, name: str, said: Assertions
                  ) -> Imported:
    """A dp-accounting event in named-tuple form, or ``privspec export --dp-event``'s
    file: its ``event``, and its ``neighboring_relation``, which the user's relation
    must agree with (or is taken from when the user gives none)."""
    wrapped = isinstance(record, dict) and "class_name" not in record and "event" in record
    event = record["event"] if wrapped else record  # (an event's own "event" is its inner one)
    recorded = record.get("neighboring_relation") if wrapped else None
    read, taken = "the event {} and everything inside it", False
    if recorded is not None:
        relations = _RELATIONS.get(recorded) if isinstance(recorded, str) else None
        if relations is None:
            raise RecordError(f"{name}: neighboring_relation {_shown(recorded)} is not one "
                              f"privspec reads ({', '.join(_RELATIONS)})")
        if said.neighbouring is None:
            said = dataclasses.replace(said, neighbouring=relations[0])
        elif said.neighbouring not in relations:
            raise RecordError(
                f"{name}: the event was accounted under neighboring_relation {recorded} "
                f"({' or '.join(relations)}), but --neighbouring says {said.neighbouring}; "
                f"leave --neighbouring out to take the record's, or export the event again "
                f"from a spec of the relation you mean")
        taken = said.neighbouring == relations[0]
        read += f", and its neighbouring relation {recorded}" + (
            f" ({said.neighbouring})" if taken else f", which accounts {said.neighbouring} too")
    elif said.neighbouring is None:
        raise RecordError(f"{name}: the record does not say its neighbouring relation "
                          "(privspec export --dp-event writes it); give --neighbouring")
    mechanism = _mechanism_of_event(event, f"{name}: event", said)
    records = _records_per_unit(event, f"{name}: event")
    if records > 1:
        read += f", whose mixtures are of one unit's {records:,} records (records_per_unit)"
    return _imported(mechanism, said, f"dp-accounting event {name}", digest,
                     read.format(event.get("class_name")), taken, records)


def _schedule(value: Any, name: str, key: str) -> list[tuple[int, float]]:
    """A constant or a list of [step, value] changes, as (step, value) sorted by step;
    every value above 0, every step a whole number from 0."""
    if not isinstance(value, list):
        return [(0, _number(value, f"{name}: {key}", above=0))]
    if not value or not all(isinstance(v, list) and len(v) == 2 for v in value):
        raise RecordError(f"{name}: '{key}' must be a number or a list of [step, value]")
    changes = sorted((_number(step, f"{name}: {key}[{i}][0] (step)", whole=True, least=0),
                      _number(v, f"{name}: {key}[{i}][1]", above=0))
                     for i, (step, v) in enumerate(value))
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


_PER_DEVICE = ("per_device_batch_size", "num_devices", "gradient_accumulation_steps")


def from_jax_privacy(record: Any, digest: str | None, name: str, said: Assertions) -> Imported:
    """jax_privacy's ``DpParams`` fields and ``num_updates`` (a training config's privacy
    fields as JSON): the logical batch is ``batch_size``, or the product of
    ``per_device_batch_size``, ``num_devices`` and ``gradient_accumulation_steps`` (each
    update accumulates that many device batches); noise multipliers and batch-size
    scales may change at given steps, each run of steps a DP-SGD stage."""
    if not isinstance(record, dict):
        raise RecordError(f"{name}: expected a JSON object of jax_privacy's DpParams fields")
    method = _jax_sampling_method(record, name, said)
    whole = functools.partial(_jax_whole, record, name)
    examples, updates = whole("num_samples"), whole("num_updates")
    if "batch_size" in record:
        batch, how = whole("batch_size"), "batch_size"
    else:  # all three, never a default: a missing factor would shrink the batch
        parts = [whole(k) for k in _PER_DEVICE]
        batch, how = parts[0] * parts[1] * parts[2], (
            f"per_device_batch_size {parts[0]} × num_devices {parts[1]} × "
            f"gradient_accumulation_steps {parts[2]}")
    noise = _schedule(record.get("noise_multipliers"), name, "noise_multipliers")
    batches = _jax_batches(record.get("batch_size_scale_schedule") or {}, name, batch,
                           updates, examples)
    stages: list[dict[str, Any]] = []
    for steps, nm, bs in _segments(noise, batches, updates):
        if bs > examples:
            raise RecordError(f"{name}: a batch of {bs:,} is larger than num_samples "
                               f"{examples:,}")
        stages.append({"name": f"updates with noise {nm:g} and batch {bs:,}", "mechanism": {
            "dpsgd": {"noise_multiplier": nm, "batch_size": bs, "dataset_size": examples,
                      "steps": steps, "sampling": said.sampling}}})
    mechanism = stages[0]["mechanism"] if len(stages) == 1 else {"compose": stages}
    records = _jax_examples_per_user(record, name, said)
    read = (f"num_samples {examples:,}, num_updates {updates:,}, logical batch {batch:,} "
            f"(from {how}), noise multipliers {_shown(record.get('noise_multipliers'))}, "
            f"sampling_method {method}" + (f", examples_per_user {records:,} (records_per_unit)"
                                           if records > 1 else ""))
    return _imported(mechanism, said, f"jax_privacy parameters {name}", digest, read,
                     records=records)


def _jax_examples_per_user(record: dict[str, Any], name: str, said: Assertions) -> int:
    """``examples_per_user`` (jax_privacy's user-level accountant: each user has up to k
    examples, sampled one by one), which is the spec's ``records_per_unit``; 1 unset."""
    if record.get("examples_per_user") is None:
        return 1
    records = int(_number(record["examples_per_user"], f"{name}: examples_per_user",
                          whole=True, least=1, most=MAX_RECORDS_PER_UNIT))
    if records > 1 and said.unit_level:
        raise RecordError(f"{name}: 'examples_per_user' = {records:,} says examples were "
                          "sampled one by one, each user holding up to that many, but "
                          "--unit-level says users were sampled and clipped as one; give "
                          "one of them")
    return records


def _jax_whole(record: dict[str, Any], name: str, key: str) -> int:
    """The positive whole number ``key`` of a jax_privacy record."""
    if key in _PER_DEVICE and key not in record:
        raise RecordError(f"{name}: '{key}' must be a positive whole number (give "
                          "batch_size, or per_device_batch_size, num_devices and "
                          "gradient_accumulation_steps)")
    most = MAX_REPETITIONS if key == "num_updates" else MAX_DATASET_SIZE
    return int(_number(record.get(key), f"{name}: {key}", whole=True, least=1, most=most))


def _jax_sampling_method(record: dict[str, Any], name: str, said: Assertions) -> Any:
    """The record's ``sampling_method``, once it agrees with ``--sampling``; a run privspec
    cannot account (an infinite ε, truncated or cyclic sampling, users) is refused."""
    if record.get("is_finite_guarantee") is False:
        raise RecordError(f"{name}: 'is_finite_guarantee' is false (jax_privacy reports "
                           "ε = ∞ for this run, e.g. unclipped gradients): no spec can say more")
    for key, neutral, why in (
            ("truncated_batch_size", (None,), "truncated Poisson sampling is not accounted "
             "yet (dp-accounting's TruncatedSubsampledGaussianDpEvent)"),
            ("cycle_length", (None, 1), "cyclic Poisson sampling (BandMF) is not accounted")):
        if record.get(key) not in neutral:
            raise RecordError(f"{name}: '{key}' = {_shown(record[key])}: {why}; privspec reports "
                               "nothing rather than the wrong thing")
    method = record.get("sampling_method", "POISSON")
    expected = {"POISSON": "poisson", "FIXED_BATCH_SIZE": "fixed-size"}.get(str(method))
    if expected is None or expected != said.sampling:
        raise RecordError(f"{name}: sampling_method {_shown(method)} and --sampling {said.sampling} "
                           "disagree (POISSON is poisson, FIXED_BATCH_SIZE is fixed-size)")
    return method


def _jax_batches(scales: Any, name: str, batch: int, updates: int, examples: int
                 ) -> list[tuple[int, int]]:
    """(first step, logical batch) of each run of steps: jax_privacy's schedule (optax's
    piecewise constant one): from step s on, the batch is batch_size times the product of
    the scales at s and before."""
    if not isinstance(scales, dict) or not all(
            k.isdigit() and len(k) <= MAX_DIGITS for k in scales):
        raise RecordError(f"{name}: 'batch_size_scale_schedule' must map steps to whole "
                           "numbers")
    batches, size = [(0, batch)], batch
    for step, scale in sorted((int(s), v) for s, v in scales.items()):
        if step >= updates:
            break  # (after the last update)
        size *= _number(scale, f"{name}: batch_size_scale_schedule[{step}]", whole=True,
                        least=1)
        if size > examples:
            raise RecordError(f"{name}: from update {step:,} a batch of {size:,} is larger "
                              f"than num_samples {examples:,}")
        batches.append((step, size))
    return batches


def from_tf_privacy(examples: int, batch: int, epochs: float, noise: float,
                    said: Assertions) -> Imported:
    """TF Privacy's privacy-statement inputs: N examples, batch B, E epochs, noise z,
    each checked as a record's number is."""
    examples = _number(examples, "--examples", whole=True, least=1, most=MAX_DATASET_SIZE)
    batch = _number(batch, "--batch", whole=True, least=1, most=examples)
    epochs = _number(epochs, "--epochs", above=0, most=MAX_REPETITIONS)
    noise = _number(noise, "--noise", above=0)
    dpsgd = {"noise_multiplier": noise, "batch_size": batch, "dataset_size": examples,
             "epochs": epochs, "sampling": said.sampling}
    mechanism = {"dpsgd": dpsgd if said.partial_batch is None
                 else {**dpsgd, "partial_batch": said.partial_batch}}
    read = (f"examples {examples:,}, batch {batch:,}, epochs {epochs:g}, noise multiplier "
            f"{noise:g}, as given on the command line")
    return _imported(mechanism, said, "TF Privacy statement inputs", None, read)


def _imported(mechanism: dict[str, Any], said: Assertions, source: str,
              digest: str | None, read: str, relation_recorded: bool = False,
              records: int = 1) -> Imported:
    origin = source + (f" (SHA-256 {digest})" if digest else "")
    asserted = _asserted(said, relation_recorded)
    description = f"Imported by privspec from {origin}. Read from it: {read}; {asserted}."
    lines = [f"Imported by privspec from {origin}.", f"Read from it: {read}.",
             f"{asserted.capitalize()}."]
    return Imported(_spec(mechanism, said, description, records), lines)


def spec_text(imported: Imported) -> str:
    """The spec file of an import: its provenance as comments, then the spec; read back
    and checked against the spec validated from its data (``spec_file_text``)."""
    return spec_file_text(imported.data, imported.provenance, "<imported>")


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
