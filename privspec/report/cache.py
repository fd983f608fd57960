"""Evaluated reports kept on disk (in ``report/store.py``'s entries), so that every
command after the first on an unchanged spec reads its report instead of evaluating it
again.

An entry is named by a SHA-256 of everything that can change a figure (``key``): the
spec's canonical content and which fields it writes, the options the evaluation was given
(budgets), and what the store adds to every name (privspec's version and source files,
the versions of the numerical stack and pydantic).  Nothing in a report depends on where
the spec file is except its ``spec_path``, which is not stored and is filled in on
reading.  The body is the report's fields as JSON, the caveats' values included
(``Report.model_dump_json`` leaves them out) and floats written exactly; a body whose
JSON or fields do not match is not trusted either: the report is evaluated again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from privspec.report import store as entries
from privspec.report.provenance import spec_sha256

if TYPE_CHECKING:
    from privspec.report.model import GroupRow, Report
    from privspec.spec.models import Spec


def evaluate(spec: Spec | str | os.PathLike[str] | dict[str, Any], *,
             spec_path: str | None = None, cache: bool = True, groups: bool = True,
             **options: Any) -> Report:
    """``privspec.report.evaluation.evaluate`` (its ``options``: the budgets), through the
    cache: the stored report when there is one, else the evaluation's, then stored.
    ``cache=False``, ``PRIVSPEC_NO_CACHE`` or ``store.bypassed`` evaluate without it.  Only an
    evaluation imports the numerical stack.  For a unit of k > 1 records the report has
    its group table (``group_rows``) unless ``groups`` is false (a search that reads μ
    and ε alone)."""
    from privspec.spec.loader import load_spec, spec_from_data
    from privspec.spec.models import Spec

    if isinstance(spec, dict):
        spec = spec_from_data(spec, "<dict>")
    elif not isinstance(spec, Spec):
        spec_path = os.fspath(spec) if spec_path is None else spec_path
        spec = load_spec(spec)
    options = {name: value for name, value in options.items() if value is not None}
    entry_key = key(spec, options) if cache and entries.enabled() else None
    report = None if entry_key is None else load(entry_key, spec_path)
    if report is None:
        from privspec.report import evaluation

        report = evaluation.evaluate(spec, spec_path=spec_path, **options)
        if entry_key is not None:
            store(entry_key, report)
    if groups and spec.records_per_unit > 1 and not report.groups:
        report = report.model_copy(update={"groups": group_rows(spec, report, cache,
                                                                 options)})
        if entry_key is not None:
            store(entry_key, report)
    return report


def group_sizes(records: int) -> list[int]:
    """1, 2, 4, … below ``records``, and ``records``."""
    return [*(2**power for power in range(records.bit_length()) if 2**power < records),
            records]


def group_rows(spec: Spec, report: Report, cache: bool,
               options: Mapping[str, Any]) -> list[GroupRow]:
    """The guarantee for groups of ``group_sizes`` of the unit's records: ``spec``
    evaluated (through the cache, with the same budgets ``options``) with
    records_per_unit set to each size at ``report``'s discretization, so that each row
    takes the route the report would for that size; the last row is ``report``'s.  The
    rows share one time budget, split evenly (a row above its share is coarsened or
    bounded, as any evaluation), so that the table costs at most what the report did."""
    from privspec.report.model import GroupRow

    accounting = spec.accounting.model_copy(
        update={"discretization": report.accounting.discretization})
    sizes = group_sizes(spec.records_per_unit)
    shared = {**options, "time_budget": options.get("time_budget", accounting.time_budget)
              / max(1, len(sizes) - 1)}
    rows = []
    for size in sizes:
        evaluated = report if size == spec.records_per_unit else evaluate(
            spec.model_copy(update={"records_per_unit": size, "accounting": accounting}),
            cache=cache, groups=False, **shared)
        rows.append(GroupRow(size=size, mu=evaluated.gdp.mu,
                             epsilon=evaluated.epsilons[0].epsilon))
    return rows


def key(spec: Spec, options: Mapping[str, Any]) -> str:
    """The name of ``spec``'s report: its canonical content, the fields it writes (an
    unwritten discretization is chosen by the evaluation) and the evaluation's ``options``."""
    return entries.entry_name({"report": spec_sha256(spec), "options": dict(options),
                               "written": spec.model_dump(mode="json", exclude_unset=True)})


def load(entry_key: str, spec_path: str | None) -> Report | None:
    """The report stored under ``entry_key`` (with ``spec_path``), or None when there is
    none or it is not a report of this privspec."""
    from pydantic import ValidationError

    from privspec.report.model import Report

    body = entries.read(entry_key)
    if body is None:
        return None
    try:
        report = Report.model_validate(json.loads(body))
    except (ValueError, ValidationError):
        return None
    return report.model_copy(update={"spec_path": spec_path})


def store(entry_key: str, report: Report) -> None:
    """Keep ``report`` under ``entry_key``."""
    entries.write(entry_key, entries.report_json(report))
