"""Comparing two versions of a spec: what changed in the mechanism, and what it did to privacy.

``aligned(before, after)`` makes both specs report ε at the union of their δ's, the
Tier II table at the union of their α's and the union of their risk scenarios, so every
row compares like with like;
:func:`diff_reports` compares the two evaluated reports in a :class:`SpecDiff`: the verdict (privacy
got *weaker* when μ grows), the headline numbers side by side, the Tier II
rows, and the spec fields that changed, found by walking both specs'
``model_dump(mode="json")`` trees.  :func:`markdown_from_diff` arranges it as a
pull-request comment; :func:`github_annotations` as workflow annotations.

Every number goes through :mod:`privspec.report.formatting`: values keep their
conservative direction (μ, ε, advantage, TPR up), and so do changes: a change
in a privacy-loss quantity is rounded towards *more* loss (+0.1234 → +0.124,
−0.1234 → −0.123), so a diff never overstates an improvement nor understates a
regression.

Reading a spec at a git revision is ``privspec.workflows.git``.  This module never
prints or exits, and imports the evaluator only when asked to evaluate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from privspec.report import formatting as fmt
from privspec.report.escaping import capfirst, escape_markdown, markdown_code
from privspec.spec.diagnostics import escape_github_data, escape_github_property
from privspec.spec.group import attacker_knows, protected_unit
from privspec.spec.loader import path_to_str
from privspec.spec.models import with_figures
from privspec.workflows.budget import Limit, stating

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

Verdict = Literal["weaker", "stronger", "unchanged"]
Trend = Literal["weaker", "stronger", "unchanged", "neutral"]
#: Relative differences below this are float noise, not a change.
_RELATIVE_TOLERANCE = 1e-12


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldChange(_Frozen):
    """One field of the spec that differs, with both values as JSON and as text."""

    path: str = Field(description="Path in the spec, e.g. 'mechanism.dpsgd.noise_multiplier'.")
    change: Literal["changed", "added", "removed"]
    before: Any = Field(None, description="The old value (JSON); null when added.")
    after: Any = Field(None, description="The new value (JSON); null when removed.")
    before_text: str = Field(description="The old value as text ('—' when added).")
    after_text: str = Field(description="The new value as text ('—' when removed).")


class Row(_Frozen):
    """One quantity before and after, with the change as text (unicode style)."""

    key: str = Field(description="mu, regret, tier, advantage, epsilon or tpr.")
    label: str = Field(description="What the row shows, e.g. 'ε at δ = 10⁻⁵'.")
    before: float | None = Field(description="Unrounded value before; null when infinite "
                                 "or absent.")
    after: float | None = Field(description="Unrounded value after; null when infinite "
                                "or absent.")
    before_text: str
    after_text: str
    change_text: str = Field(description="The change, rounded towards less privacy; '—' "
                             "when none.")
    trend: Trend = Field(description="What the change means for privacy ('neutral' for "
                         "regret and the verdict).")
    delta: float | None = Field(None, description="The δ of an ε row.")
    alpha: float | None = Field(None, description="The attack FPR α of a Tier II row.")


class SpecDiff(_Frozen):
    """Two versions of a spec compared."""

    before_label: str = Field(description="Where the old version came from, e.g. "
                              "'origin/main:spec.privspec.yaml'.")
    after_label: str
    title: str = Field(description="The new version's title.")
    verdict: Verdict = Field(description="weaker: privacy got weaker (μ grew, or without "
                             "a finite μ the advantage or ε grew); stronger; unchanged.")
    comparable: bool = Field(description="False when the unit or neighbouring relation "
                             "changed: the numbers then protect different things.")
    warnings: list[str] = Field(description="Why the numbers may not be comparable.")
    summary: str = Field(description="One sentence: the verdict and by how much.")
    rows: list[Row] = Field(description="μ, regret, verdict, advantage, ε at each δ.")
    tradeoff: list[Row] = Field(description="Tier II: the best attack's TPR at each FPR α.")
    risk: list[Row] = Field(default_factory=list, description="What an attacker can do: each "
                            "risk scenario both reports bound, its bound before and after.")
    changes: list[FieldChange] = Field(description="Spec fields that differ.")
    contrary: list[str] = Field(description="Labels of rows that moved against the verdict "
                                "(e.g. ε at one δ grew while μ fell).")
    others: str = Field("record", description="What the attacker of the risk rows knows of "
                        "everyone else, for the new version: every other 'record', 'unit' "
                        "or \"unit's records\".")


# --- reading specs at a git revision -------------------------------------------


def spec_tree(spec: Spec) -> dict[str, Any]:
    """The spec as JSON data, its budget included (``model_dump`` leaves the budget out)."""
    tree: dict[str, Any] = spec.model_dump(mode="json")
    tree["budget"] = None if spec.budget is None else spec.budget.model_dump(mode="json")
    return tree


def _same(a: Any, b: Any) -> bool:
    """Equal JSON scalars; ``1`` and ``1.0`` are the same number, ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


def value_text(value: Any, limit: int = 80) -> str:
    """A spec value as a reviewer reads it: ``20,000``, ``0.9``, ``10⁻⁵``, ``'text'``."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return fmt.format_number(value, "nearest", "unicode", 17)
    if isinstance(value, str):
        text = " ".join(value.split())
        return repr(text if len(text) <= limit else text[: limit - 1] + "…")
    if isinstance(value, list):
        text = "[" + ", ".join(value_text(item, limit) for item in value) + "]"
    elif isinstance(value, dict):
        items = [f"{key}: {value_text(item, limit)}" for key, item in value.items()
                 if item is not None]
        text = "{" + ", ".join(items) + "}"
    else:  # pragma: no cover - JSON has no other types
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spec_changes(before: Spec | dict[str, Any], after: Spec | dict[str, Any]) -> list[FieldChange]:
    """Every field that differs between two specs (or their JSON trees), in spec order."""
    old = before if isinstance(before, dict) else spec_tree(before)
    new = after if isinstance(after, dict) else spec_tree(after)
    changes: list[FieldChange] = []
    _walk(old, new, (), changes)
    return changes


_MISSING = object()


def _walk(old: Any, new: Any, path: tuple[str | int, ...], out: list[FieldChange]) -> None:
    if (isinstance(old, dict) and isinstance(new, dict) and len(old) == len(new) == 1
            and old.keys() != new.keys()):  # a mechanism of another kind: one change
        out.append(FieldChange(path=path_to_str(path), change="changed", before=old, after=new,
                               before_text=value_text(old), after_text=value_text(new)))
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            _walk(old.get(key, _MISSING), new.get(key, _MISSING), (*path, key), out)
        return
    if (isinstance(old, list) and isinstance(new, list) and
            any(isinstance(item, dict) for item in [*old, *new])):
        for index in range(max(len(old), len(new))):
            _walk(old[index] if index < len(old) else _MISSING,
                  new[index] if index < len(new) else _MISSING, (*path, index), out)
        return
    if old is _MISSING and new is _MISSING:  # pragma: no cover - never both
        return
    if old is _MISSING or (old is None and new is not _MISSING and isinstance(new, dict)):
        out.append(FieldChange(path=path_to_str(path), change="added", after=new,
                               before_text="—", after_text=value_text(new)))
    elif new is _MISSING or (new is None and isinstance(old, dict)):
        out.append(FieldChange(path=path_to_str(path), change="removed", before=old,
                               before_text=value_text(old), after_text="—"))
    elif isinstance(old, dict) != isinstance(new, dict) or not _same_tree(old, new):
        out.append(FieldChange(path=path_to_str(path), change="changed", before=old, after=new,
                               before_text=value_text(old), after_text=value_text(new)))


def _same_tree(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_tree(a[k], b[k]) for k in a)
    return _same(a, b)


def changes_summary(changes: list[FieldChange], limit: int = 4, *,
                    path: Callable[[str], str] = str, value: Callable[[str], str] = str) -> str:
    """``mechanism.dpsgd.noise_multiplier 1.1 → 0.9, steps 10,000 → 20,000``: the first
    few changes, a field under the previous one's parent named by its last part
    (``path`` and ``value`` format the two, e.g. as Markdown)."""
    parts = []
    previous_parent: str | None = None
    for change in changes[:limit]:
        parent, _, name = change.path.rpartition(".")
        shown = name if parent and parent == previous_parent else change.path
        previous_parent = parent
        parts.append(f"{path(shown)} {value(change.before_text)} → {value(change.after_text)}")
    if len(changes) > limit:
        parts.append(f"and {len(changes) - limit} more")
    return ", ".join(parts)


# --- numbers ----------------------------------------------------------------------


def _differs(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a != b
    return abs(a - b) > _RELATIVE_TOLERANCE * max(abs(a), abs(b))


def _trend(before: float, after: float) -> Trend:
    """For a privacy-loss quantity (larger = less private)."""
    if not _differs(before, after):
        return "unchanged"
    return "weaker" if after > before else "stronger"


def _signed(value: float, direction: fmt.Direction) -> str:
    text = fmt.format_number(value, direction)
    return text if text.startswith("−") or text == "0" else "+" + text


def _change(before: float, after: float, *, relative: bool = True,
            direction: fmt.Direction = "up", unit: str = "", scale: float = 1.0) -> str:
    """``+0.185 (+35.2%)``: the change rounded in ``direction`` (up: towards more loss)."""
    if not _differs(before, after):
        return "—"
    if math.isinf(after):
        return "→ ∞ (unbounded)"
    if math.isinf(before):
        return "→ finite"
    text = _signed((after - before) * scale, direction) + unit
    if relative and before > 0:
        text += f" ({_signed((after - before) / before * 100, direction)}%)"
    return text


def percent_text(probability: float) -> str:
    """A probability rounded up, as a percentage (``20.5%``); near 1 as ``1 − x``."""
    if probability >= 0.999:
        return fmt.fmt_advantage(probability)
    return fmt.format_number(probability * 100, "up") + "%"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _mu(report: Report) -> float:
    return math.inf if report.gdp.mu is None else report.gdp.mu


def _mu_text(report: Report) -> str:
    return "no finite μ" if report.gdp.mu is None else fmt.fmt_mu(report.gdp.mu)


def _tier_text(report: Report) -> str:
    return "Tier I" if report.gdp.tier == 1 else "Tier II"


def _rows(before: Report, after: Report) -> list[Row]:
    rows = []
    mu_b, mu_a = _mu(before), _mu(after)
    trend = _trend(mu_b, mu_a)
    rows.append(Row(key="mu", label="μ-GDP", before=_finite(mu_b), after=_finite(mu_a),
                    before_text=_mu_text(before), after_text=_mu_text(after),
                    change_text=_change(mu_b, mu_a), trend=trend))
    regret_b, regret_a = before.gdp.regret, after.gdp.regret
    rows.append(Row(
        key="regret", label="regret", before=regret_b, after=regret_a,
        before_text=fmt.fmt_regret_of(before.gdp),
        after_text=fmt.fmt_regret_of(after.gdp),
        change_text=("—" if regret_b is None or regret_a is None
                     else _change(regret_b, regret_a, relative=False, direction="nearest")),
        trend="neutral"))
    tier_change = "—" if before.gdp.tier == after.gdp.tier else (
        "μ no longer tells the whole story: read the table" if after.gdp.tier == 2
        else "μ now tells the whole story")
    rows.append(Row(key="tier", label="verdict", before=before.gdp.tier, after=after.gdp.tier,
                    before_text=_tier_text(before), after_text=_tier_text(after),
                    change_text=tier_change, trend="neutral"))
    adv_b, adv_a = before.gdp.advantage, after.gdp.advantage
    rows.append(Row(key="advantage", label="best attack's advantage (TPR − FPR)",
                    before=adv_b, after=adv_a, before_text=percent_text(adv_b),
                    after_text=percent_text(adv_a),
                    change_text=_change(adv_b, adv_a, relative=False, unit=" pp", scale=100),
                    trend=_trend(adv_b, adv_a)))
    old_eps = {e.delta: e.epsilon for e in before.epsilons}
    for entry in after.epsilons:
        if entry.delta not in old_eps:
            continue
        eps_b, eps_a = old_eps[entry.delta], entry.epsilon
        value_b = math.inf if eps_b is None else eps_b
        value_a = math.inf if eps_a is None else eps_a
        rows.append(Row(key="epsilon", label=f"ε at δ = {fmt.fmt_given(entry.delta)}",
                        before=eps_b, after=eps_a, before_text=fmt.fmt_epsilon(eps_b),
                        after_text=fmt.fmt_epsilon(eps_a), change_text=_change(value_b, value_a),
                        trend=_trend(value_b, value_a), delta=entry.delta))
    return rows


def _tradeoff_rows(before: Report, after: Report) -> list[Row]:
    old = {row.alpha: row for row in before.tradeoff if not row.is_alpha_star}
    rows = []
    for row in after.tradeoff:
        if row.is_alpha_star or row.alpha not in old:
            continue
        was = old[row.alpha]
        rows.append(Row(key="tpr", label=f"TPR at FPR α = {fmt.fmt_given(row.alpha)}",
                        before=was.tpr, after=row.tpr,
                        before_text=fmt.fmt_tpr(was.tpr, was.beta),
                        after_text=fmt.fmt_tpr(row.tpr, row.beta),
                        change_text=_change(was.tpr, row.tpr),
                        trend=_trend(was.tpr, row.tpr), alpha=row.alpha))
    return rows


def _risk_rows(before: Report, after: Report) -> list[Row]:
    """Each risk row both reports have (same scenario and parameters), before and after."""
    from privspec.report.render import risk_text

    old = {(row.scenario, tuple(sorted(row.parameters.items()))): row for row in before.risk.rows}
    rows = []
    for row in after.risk.rows:
        was = old.get((row.scenario, tuple(sorted(row.parameters.items()))))
        if was is None:
            continue
        rows.append(Row(key="risk", label=risk_text(row, after, "name", "markdown"),
                        before=was.bound, after=row.bound, before_text=fmt.fmt_chance(was.bound),
                        after_text=fmt.fmt_chance(row.bound),
                        change_text=_change(was.bound, row.bound, relative=False, unit=" pp",
                                            scale=100),
                        trend=_trend(was.bound, row.bound)))
    return rows


def _verdict(rows: list[Row], tradeoff: list[Row]) -> Verdict:
    """μ decides; without a change in μ (e.g. no finite μ on either side), the advantage,
    then ε, then the Tier II rows."""
    ordered = ([r for r in rows if r.key == "mu"] + [r for r in rows if r.key == "advantage"]
               + [r for r in rows if r.key == "epsilon"] + tradeoff)
    for row in ordered:
        if row.trend in ("weaker", "stronger"):
            return row.trend
    return "unchanged"


_HEADS = {"weaker": "Privacy got weaker", "stronger": "Privacy got stronger",
          "unchanged": "Privacy is unchanged"}


def _summary(verdict: Verdict, rows: list[Row], comparable: bool) -> str:
    head = _HEADS[verdict]
    if not comparable:
        head += " (but the numbers protect different things)"
    return f"{head}: {_detail(verdict, rows)}"


def _detail(verdict: Verdict, rows: list[Row]) -> str:
    """The numbers behind the verdict, as a sentence that starts in lower case."""
    by_key = {row.key: row for row in rows}
    mu, adv = by_key["mu"], by_key["advantage"]
    if verdict == "unchanged":
        return f"μ = {mu.after_text}, best attack's advantage {adv.after_text}."
    if mu.before is None and mu.after is None:
        mu_part = "no finite μ before or after"
    elif mu.before is None:
        mu_part = f"μ is now finite: {mu.after_text} (there was no finite μ)"
    elif mu.after is None:
        mu_part = f"μ {mu.before_text} → no finite μ"
    else:
        mu_part = f"μ {mu.before_text} → {mu.after_text}"
        if mu.change_text != "—":
            mu_part += f", {mu.change_text}"
    adv_part = f"the best attack's advantage {adv.before_text} → {adv.after_text}"
    if adv.change_text != "—":
        adv_part += f", {adv.change_text.replace(' pp', ' percentage points')}"
    return f"{mu_part}; {adv_part}."


def _whom(spec: Spec) -> str:
    """Who ``spec``'s guarantee protects, in words (``group.protected_unit``)."""
    return protected_unit(spec.unit, spec.records_per_unit, spec.unit_level)


def diff_reports(before_spec: Spec, after_spec: Spec, before: Report, after: Report, *,
                 before_label: str, after_label: str) -> SpecDiff:
    """Compare two evaluated specs (their reports should share δ's and α's)."""
    warnings = []
    if before_spec.neighbouring != after_spec.neighbouring:
        warnings.append(f"The neighbouring relation changed ({before_spec.neighbouring} → "
                        f"{after_spec.neighbouring}): the two guarantees protect different "
                        "things and their numbers are not comparable.")
    if " ".join(before_spec.unit.split()).casefold() != " ".join(after_spec.unit.split()).casefold():
        warnings.append(f"The privacy unit changed ({before_spec.unit!r} → {after_spec.unit!r}): "
                        "the two guarantees protect different things and their numbers are not "
                        "comparable.")
    elif ((before_spec.records_per_unit, before_spec.unit_level)
          != (after_spec.records_per_unit, after_spec.unit_level)):
        warnings.append(f"Who is protected changed ({_whom(before_spec)!r} → "
                        f"{_whom(after_spec)!r}): the two guarantees protect different "
                        "things and their numbers are not comparable.")
    rows = _rows(before, after)
    tradeoff = _tradeoff_rows(before, after)
    verdict = _verdict(rows, tradeoff)
    comparable = not warnings
    risk = _risk_rows(before, after)
    contrary = [row.label for row in [*rows, *tradeoff, *risk]
                if row.trend in ("weaker", "stronger") and row.trend != verdict]
    return SpecDiff(before_label=before_label, after_label=after_label, title=after.title,
                    verdict=verdict, comparable=comparable, warnings=warnings,
                    summary=_summary(verdict, rows, comparable), rows=rows, tradeoff=tradeoff,
                    risk=risk, changes=spec_changes(before_spec, after_spec),
                    contrary=contrary,
                    others=attacker_knows(after_spec.records_per_unit, after_spec.unit_level))


def aligned(before: Spec, after: Spec, limits: Sequence[Limit] = ()) -> tuple[Spec, Spec]:
    """Both specs stating ε at the union of their δ's, the Tier II table at the union of
    their α's and the union of their risk scenarios, and every figure ``limits`` check;
    the mechanisms are untouched."""
    def widen(spec: Spec) -> Spec:
        return stating(with_figures(
            spec, deltas=[*before.report.deltas, *after.report.deltas],
            alphas=[*before.report.alphas, *after.report.alphas],
            scenarios=[*before.risk, *after.risk]), list(limits))

    return widen(before), widen(after)


# --- presentation -------------------------------------------------------------------


def markdown_from_diff(diff: SpecDiff, *, heading_level: int = 3, heading_note: str = "",
                       preface: str = "") -> str:
    """A pull-request comment: the verdict and a compact table on top, the Tier II rows and
    every spec change in a collapsed ``<details>``.

    ``heading_note`` (Markdown) follows the title; ``preface`` (Markdown) comes before
    the verdict.
    """
    from privspec.report.render import render_markdown

    detail = _detail(diff.verdict, diff.rows)
    if detail[:1].isascii():  # a sentence, unless it starts with a symbol such as μ
        detail = capfirst(detail)
    contrary = (", ".join(diff.contrary[:4]) + (" and more" if len(diff.contrary) > 4 else "")
                if diff.contrary else "")
    changes = changes_summary(diff.changes, path=markdown_code, value=escape_markdown)
    return render_markdown("markdown/diff.md.j2", diff=diff, hashes="#" * heading_level,
                           heading_note=heading_note, preface=preface, detail=detail,
                           contrary=contrary, changes=changes)


def github_annotations(diff: SpecDiff, file: str | None = None) -> str:
    """GitHub workflow annotations: a warning when privacy got weaker or the numbers are not
    comparable, a notice otherwise."""
    where = f" file={escape_github_property(file)}," if file else " "
    level = "warning" if diff.verdict == "weaker" or not diff.comparable else "notice"
    lines = [f"::{level}{where}title=privspec diff::{escape_github_data(diff.summary)}"]
    lines += [f"::warning{where}title=privspec diff: not comparable::{escape_github_data(w)}"
              for w in diff.warnings]
    return "\n".join(lines)


def json_from_diffs(diffs: list[SpecDiff]) -> str:
    """The diffs as a JSON array (the :class:`SpecDiff` fields, unrounded values)."""
    return json.dumps([d.model_dump(mode="json") for d in diffs], indent=2,
                      ensure_ascii=False) + "\n"


def report_summary(report: Report) -> str:
    """One line for a spec without a before: μ, verdict, advantage and ε(δ)."""
    gdp = report.gdp
    head = ("no finite μ" if gdp.mu is None
            else f"μ = {fmt.fmt_mu(gdp.mu)} (regret {fmt.fmt_regret_of(gdp)})")
    epsilons = ", ".join(f"ε = {fmt.fmt_epsilon(e.epsilon)} at δ = {fmt.fmt_given(e.delta)}"
                         for e in report.epsilons)
    return (f"{head}, {_tier_text(report)}, best attack's advantage "
            f"{percent_text(gdp.advantage)}; {epsilons}")


__all__ = [
    "FieldChange", "Row", "SpecDiff", "aligned", "changes_summary", "diff_reports",
    "github_annotations", "json_from_diffs", "markdown_from_diff", "percent_text",
    "report_summary", "spec_changes", "spec_tree", "value_text",
]
