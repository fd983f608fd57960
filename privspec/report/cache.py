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

What is protected: the store reads no entry from a directory another user could have
written, nor one through a symbolic link (``report/store.py``); a report read is
trusted only when it is the spec's (its SHA-256) and its μ, advantage, curve, table and
ε(δ) agree with each other and reach what the spec's releases alone force
(``report/consistency.py``: a μ, an advantage or an ε too small, a damaged or foreign
entry); otherwise it is evaluated again and replaced.  What is not: a report forged
whole, every figure consistent and above the spec's lower bound, in the user's own
directory, by someone who can write the user's files (and so privspec itself); the
figures no headline figure determines (risk rows, group table, a stage's μ, an audit)
and drawn figures rest on the directory's checks alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from privspec.report import store as entries
from privspec.report.provenance import spec_sha256

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec


def evaluate(spec: Spec | str | os.PathLike[str] | dict[str, Any], *,
             spec_path: str | None = None, cache: bool = True, groups: bool = True,
             **options: Any) -> Report:
    """``privspec.report.evaluation.evaluate`` (its ``options``: the budgets; ``groups``:
    with the group table), through the cache: the stored report when there is one, else
    the evaluation's, then stored.  A stored report without the group table that
    ``groups`` asks for is evaluated again (and stored with it).  ``cache=False``,
    ``PRIVSPEC_NO_CACHE`` or ``store.bypassed`` evaluate without it.  Only an evaluation
    imports the numerical stack."""
    from privspec.spec.loader import load_spec, spec_from_data
    from privspec.spec.models import Spec

    if isinstance(spec, dict):
        spec = spec_from_data(spec, "<dict>")
    elif not isinstance(spec, Spec):
        spec_path = os.fspath(spec) if spec_path is None else spec_path
        spec = load_spec(spec)
    options = {name: value for name, value in options.items() if value is not None}
    entry_key = key(spec, options) if cache and entries.enabled() else None
    report = None if entry_key is None else load(entry_key, spec_path, spec)
    if report is not None and not (groups and spec.records_per_unit > 1 and not report.groups):
        return report
    from privspec.report import evaluation

    report = evaluation.evaluate(spec, spec_path=spec_path, groups=groups, **options)
    if entry_key is not None:
        store(entry_key, report)
    return report


def key(spec: Spec, options: Mapping[str, Any]) -> str:
    """The name of ``spec``'s report: its canonical content, the fields it writes (an
    unwritten discretization is chosen by the evaluation) and the evaluation's ``options``."""
    return entries.entry_name({"report": spec_sha256(spec), "options": dict(options),
                               "written": spec.model_dump(mode="json", exclude_unset=True)})


def load(entry_key: str, spec_path: str | None, spec: Spec | None = None) -> Report | None:
    """The report stored under ``entry_key`` (with ``spec_path``), or None when there is
    none, it is not a report of this privspec or (given) of ``spec``, or its figures
    contradict each other or what the spec's releases alone force
    (``report/consistency.py``)."""
    from pydantic import ValidationError

    from privspec.report.consistency import inconsistency
    from privspec.report.model import Report

    body = entries.read(entry_key)
    if body is None:
        return None
    try:
        report = Report.model_validate(json.loads(body))
    except (ValueError, ValidationError, RecursionError):
        return None
    if spec is not None and report.spec_sha256 != spec_sha256(spec):
        return None  # another spec's
    if inconsistency(report, spec) is not None:
        return None
    return report.model_copy(update={"spec_path": spec_path})


def store(entry_key: str, report: Report) -> None:
    """Keep ``report`` under ``entry_key``."""
    entries.write(entry_key, entries.report_json(report))
