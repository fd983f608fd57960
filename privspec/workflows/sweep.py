"""``privspec sweep``'s grid: the fields varied and their values (``PATH=VALUES``), the
points of their product in grid order, and each point's row, evaluated exactly as
``render`` evaluates (through the report cache).

A row's figures are the report's own, unrounded (the floats ``privspec evaluate
--format json`` prints, already the pessimistic side of every approximation); the
documents' rounding is left to whoever prints them.  A point the spec does not allow,
or that the evaluator refuses, is a row with its refusal.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from privspec.spec.knobs import Knob, KnobError, resolve, with_value

if TYPE_CHECKING:
    from privspec.report.model import Report

#: What ``--vary`` accepts after ``PATH=``, for error messages and help.
VALUES_SYNTAX = ("a list (0.8,1.0,1.2), lin:START:STOP:COUNT (COUNT evenly spaced values) "
                 "or log:START:STOP:COUNT (COUNT values evenly spaced in log scale)")
#: Most points one sweep may have.
MOST_POINTS = 100_000


class SweepError(ValueError):
    """A ``--vary`` that does not name a field with values the spec may take."""


@dataclass(frozen=True)
class Axis:
    """One varied field: the knob ``--vary`` names and its values, in the given order."""

    knob: Knob
    values: tuple[float | int, ...]

    @property
    def name(self) -> str:
        """The field's full spec path (``mechanism.dpsgd.noise_multiplier``)."""
        return str(self.knob)


@dataclass(frozen=True)
class Point:
    """One point of the grid: its index in grid order, the spec's data with the varied
    values written in, those values, the name ``--resume`` checks rows by, and the
    spec file beside which the files it names are found (an absolute path)."""

    index: int
    data: dict[str, Any]
    values: tuple[float | int, ...]
    key: str
    spec_file: str | None = None


def _number(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SweepError(f"--vary {option!r}: {text.strip()!r} is not a number; "
                         f"VALUES is {VALUES_SYNTAX}") from None
    if not math.isfinite(value):
        raise SweepError(f"--vary {option!r}: {text.strip()!r} is not a finite number")
    return value


def _spaced(values: str, option: str) -> list[float]:
    """The values of ``lin:…`` or ``log:…``, each written with 12 significant digits (so
    that ``log:1e-3:1e-1:3`` gives 0.01, not 0.010000000000000002)."""
    scale, *parts = values.split(":")
    if len(parts) != 3:
        raise SweepError(f"--vary {option!r}: {scale}: needs START:STOP:COUNT")
    start, stop = _number(parts[0], option), _number(parts[1], option)
    try:
        count = int(parts[2])
    except ValueError:
        count = 0
    if not 1 <= count <= MOST_POINTS or (count == 1 and start != stop):
        raise SweepError(f"--vary {option!r}: COUNT must be a whole number from 2 to "
                         f"{MOST_POINTS} (1 when START = STOP)")
    if scale == "log":
        if start <= 0 or stop <= 0:
            raise SweepError(f"--vary {option!r}: a log range needs START and STOP above 0")
        low, high = math.log10(start), math.log10(stop)
        spaced = [10 ** (low + (high - low) * i / max(count - 1, 1)) for i in range(count)]
        spaced[0], spaced[-1] = start, stop
    else:
        # (weights, not STOP − START: that overflows to ∞ for lin:-1e308:1e308:3)
        spaced = [start * (1 - i / max(count - 1, 1)) + stop * (i / max(count - 1, 1))
                  for i in range(count)]
        spaced[-1] = stop
    return [float(f"{value:.12g}") for value in spaced]


def parse_axis(data: dict[str, Any], option: str) -> Axis:
    """The axis ``PATH=VALUES`` names in the spec data (PATH as ``calibrate --vary`` takes
    it); SweepError saying what is allowed.  Integer fields take whole numbers (a range's
    values are rounded, repeats dropped)."""
    path, equals, values = option.partition("=")
    if not equals or not path.strip() or not values.strip():
        raise SweepError(f"--vary {option!r}: write PATH=VALUES, VALUES being {VALUES_SYNTAX}")
    try:
        knob = resolve(data, path)
    except KnobError as error:
        raise SweepError(f"--vary {option!r}: {error}") from None
    scale = values.strip().split(":")[0]
    if scale in ("lin", "log"):
        numbers = _spaced(values.strip(), option)
    elif ":" in values:
        raise SweepError(f"--vary {option!r}: {scale!r} is not lin or log; "
                         f"VALUES is {VALUES_SYNTAX}")
    else:
        numbers = [_number(text, option) for text in values.split(",")]
    chosen: list[float | int] = []
    for number in numbers:
        value: float | int = number
        if knob.integer:
            if scale not in ("lin", "log") and number != round(number):
                raise SweepError(f"--vary {option!r}: {knob.field} takes whole numbers, "
                                 f"not {number:g}")
            value = round(number)
        if value not in chosen:
            chosen.append(value)
    return Axis(knob, tuple(chosen))


def parse_axes(data: dict[str, Any], options: Sequence[str]) -> tuple[Axis, ...]:
    """Every ``--vary``, each naming a different field; SweepError for the first problem."""
    if not options:
        raise SweepError(f"give at least one --vary PATH=VALUES, VALUES being {VALUES_SYNTAX}")
    axes = tuple(parse_axis(data, option) for option in options)
    names = [axis.name for axis in axes]
    for name in names:
        if names.count(name) > 1:
            raise SweepError(f"--vary names {name} twice; give each field once")
    if math.prod(len(axis.values) for axis in axes) > MOST_POINTS:
        raise SweepError(f"the grid has more than {MOST_POINTS} points")
    return axes


def points(data: dict[str, Any], axes: Sequence[Axis],
           budgets: tuple[float | None, float | None],
           spec_file: str | None = None) -> list[Point]:
    """The grid's points in grid order (the first axis slowest), each named by a SHA-256
    of its data, the budgets and what the report cache adds (privspec's version and
    sources, the numerical stack's versions); the files the spec names are found beside
    ``spec_file`` wherever a point is evaluated (a worker may run elsewhere)."""
    from privspec.report.store import entry_name

    out = []
    beside = None if spec_file is None else os.path.abspath(spec_file)
    for index, values in enumerate(itertools.product(*(axis.values for axis in axes))):
        edited = data
        for axis, value in zip(axes, values, strict=True):
            edited = with_value(edited, axis.knob.path, value)
        key = entry_name({"sweep point": edited, "budgets": list(budgets)})
        out.append(Point(index, edited, values, key, beside))
    return out


def sweep_key(data: dict[str, Any], axes: Sequence[Axis],
              budgets: tuple[float | None, float | None]) -> str:
    """The name of a sweep's results, which its journal's rows carry: a SHA-256 of the
    spec's data, the varied fields and their values, the budgets and what the report
    cache adds (privspec's version and sources, the numerical stack's versions)."""
    from privspec.report.store import entry_name

    return entry_name({"sweep": data, "budgets": list(budgets),
                       "vary": [[axis.name, list(axis.values)] for axis in axes]})


def evaluate_point(point: Point, budgets: tuple[float | None, float | None],
                   cache: bool = True) -> dict[str, Any]:
    """The row of ``point`` (run in a worker process): its figures, or its refusal."""
    from privspec.errors import PrivspecError
    from privspec.report.cache import evaluate
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import spec_from_data

    try:
        spec = spec_from_data(point.data, "<sweep point>", point.spec_file)
        report = evaluate(spec, cache=cache, memory_budget=budgets[0], time_budget=budgets[1])
    except SpecError as error:  # the spec does not allow these values
        return row(point, None, "; ".join(f"{d.path}: {d.message}" for d in error.diagnostics))
    except PrivspecError as error:  # refused by the evaluator, or privspec's own failure
        return row(point, None, f"cannot evaluate: {error}")
    return row(point, report)


def row(point: Point, report: Report | None, refusal: str | None = None) -> dict[str, Any]:
    """A point's row: its index, values and key; the report's μ, regret, tier, advantage,
    ε at each δ, caveat codes and spec SHA-256 (None and the refusal without a report)."""
    head: dict[str, Any] = {"point": point.index, "values": list(point.values),
                            "key": point.key}
    if report is None:
        return {**head, "status": "refused", "mu": None, "regret": None, "tier": None,
                "advantage": None, "epsilons": [], "caveats": [], "spec_sha256": None,
                "refusal": refusal}
    gdp = report.gdp
    return {**head, "status": "ok", "mu": gdp.mu, "regret": gdp.regret, "tier": gdp.tier,
            "advantage": gdp.advantage,
            "epsilons": [[e.delta, e.epsilon] for e in report.epsilons],
            "caveats": [w.code for w in report.warnings], "spec_sha256": report.spec_sha256,
            "refusal": None}


#: A row's fields, in the order ``row`` writes them.
ROW_FIELDS = ("point", "values", "key", "status", "mu", "regret", "tier", "advantage",
              "epsilons", "caveats", "spec_sha256", "refusal")
#: The slack of ``is_row_of``'s consistency check: the largest floor τ a report may use
#: (its μ is claimed as f ≥ G_μ − τ: ``report.assembly.LARGEST_FLOOR``, 10⁻³), and the
#: most a closed-form μ within ``BOUND_MARGIN`` (0.1 %) below the numerical one moves
#: 2Φ(μ/2) − 1 under the numerical advantage (10⁻³ · max μφ(μ/2) < 5·10⁻⁴), rounded up.
CONSISTENCY_SLACK = 2e-3
_CAVEAT_CODE = re.compile(r"[a-z0-9-]{1,60}/[a-z0-9-]{1,60}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _in_range(value: Any, high: float = math.inf) -> bool:
    """Whether ``value`` is a finite number (not a bool) from 0 to ``high``."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and 0 <= value <= high)


def _figures_fit(entry: dict[str, Any]) -> bool:
    """Whether an ``ok`` row's figures are of the right types and ranges and agree with
    each other: no tier 1 without μ, no regret without μ, and an advantage no larger than
    μ-GDP and each (ε, δ) allow (up to ``CONSISTENCY_SLACK``)."""
    mu, regret, advantage = entry["mu"], entry["regret"], entry["advantage"]
    pairs = entry["epsilons"]
    if not (_in_range(advantage, 1.0) and type(entry["tier"]) is int and entry["tier"] in (1, 2)
            and entry["refusal"] is None
            and ((mu is None and regret is None and entry["tier"] == 2)
                 or (_in_range(mu) and _in_range(regret, 1.0)))
            and isinstance(pairs, list) and isinstance(entry["caveats"], list)
            and all(isinstance(code, str) and _CAVEAT_CODE.fullmatch(code)
                    for code in entry["caveats"])
            and isinstance(entry["spec_sha256"], str) and _SHA256.fullmatch(entry["spec_sha256"])
            and all(isinstance(pair, list) and len(pair) == 2 and _in_range(pair[0], 1.0)
                    and (pair[1] is None or _in_range(pair[1])) for pair in pairs)):
        return False
    from privspec.report.consistency import epsilon_delta_advantage, gdp_advantage

    allowed = [epsilon_delta_advantage(epsilon, delta)
               for delta, epsilon in pairs if epsilon is not None]
    if mu is not None:
        allowed.append(gdp_advantage(mu))
    return all(advantage <= bound + CONSISTENCY_SLACK for bound in allowed)


def is_row_of(entry: Any, point: Point) -> bool:
    """Whether ``entry`` (read from a journal) is a row ``row`` could have made for
    ``point``: its fields, point, values (of the same types) and key; a refusal, or
    figures that pass ``_figures_fit``."""
    if not (isinstance(entry, dict) and tuple(entry) == ROW_FIELDS
            and type(entry["point"]) is int and entry["point"] == point.index
            and entry["key"] == point.key and isinstance(entry["values"], list)
            and [(type(v), v) for v in entry["values"]]
            == [(type(v), v) for v in point.values]):
        return False
    if entry["status"] == "refused":
        return (all(entry[name] is None for name in ("mu", "regret", "tier", "advantage",
                                                     "spec_sha256"))
                and entry["epsilons"] == [] and entry["caveats"] == []
                and isinstance(entry["refusal"], str) and entry["refusal"] != "")
    return entry["status"] == "ok" and _figures_fit(entry)


def row_json(finished: dict[str, Any]) -> str:
    """A row as one line of JSON, the same bytes wherever it was computed."""
    return json.dumps(finished, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _deltas(rows: Sequence[dict[str, Any]]) -> list[float]:
    """Every δ of the rows' ε(δ), in the order they first appear."""
    seen: list[float] = []
    for finished in rows:
        seen.extend(delta for delta, _ in finished["epsilons"] if delta not in seen)
    return seen


def _cell(value: Any) -> str:
    """A CSV cell: numbers as JSON writes them (the shortest text that reads back as the
    same double), nothing for None, and text that a spreadsheet would run as a formula
    (=, +, -, @ first) made inert with a leading apostrophe (the text comes from specs)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
    return json.dumps(value)


def table(axes: Sequence[Axis], rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """The rows as columns: point, the varied fields, status, μ, regret, tier, advantage,
    ε at each δ, the caveat codes (space-separated), the spec SHA-256, the refusal."""
    deltas = _deltas(rows)
    header = ["point", *(axis.name for axis in axes), "status", "mu", "regret", "tier",
              "advantage", *(f"epsilon@{delta!r}" for delta in deltas), "caveats",
              "spec_sha256", "refusal"]
    body = []
    for finished in rows:
        epsilons = dict((delta, epsilon) for delta, epsilon in finished["epsilons"])
        body.append([finished["point"], *finished["values"], finished["status"],
                     finished["mu"], finished["regret"], finished["tier"],
                     finished["advantage"], *(epsilons.get(delta) for delta in deltas),
                     " ".join(finished["caveats"]), finished["spec_sha256"],
                     finished["refusal"]])
    return header, body


def csv_text(axes: Sequence[Axis], rows: Sequence[dict[str, Any]]) -> str:
    """The sweep as CSV, one row per point in grid order."""
    import csv
    import io

    header, body = table(axes, rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([_cell(value) for value in line] for line in body)
    return out.getvalue()


def json_text(label: str, axes: Sequence[Axis], rows: Sequence[dict[str, Any]]) -> str:
    """The sweep as JSON: the spec, the varied fields and their values, and the rows
    (each: point, values, key, status, mu, regret, tier, advantage, epsilons as [δ, ε]
    pairs, caveats, spec_sha256, refusal)."""
    head = json.dumps({"spec": label, "vary": [{"field": axis.name, "values": list(axis.values)}
                                               for axis in axes]}, ensure_ascii=False)
    body = ",\n".join(" " + row_json(finished) for finished in rows)
    return f'{head[:-1]}, "rows": [\n{body}\n]}}\n'


def parquet_bytes(axes: Sequence[Axis], rows: Sequence[dict[str, Any]]) -> bytes:
    """The CSV's columns as a Parquet file (needs pyarrow, the ``parquet`` extra)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    header, body = table(axes, rows)
    columns = {name: [line[i] for line in body] for i, name in enumerate(header)}
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()
