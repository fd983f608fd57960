"""Stage 5: evaluate a spec into a :class:`~privspec.report.model.Report`, within budgets.

The report itself is assembled by ``privspec.report.assembly`` at one discretization;
this module chooses that discretization: the spec's (or a finer one its finest release
needs), a coarser one when the memory or time estimate exceeds the budget (still
pessimistic, said in a caveat), or the closed-form bound when no grid fits.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from privspec.errors import EvaluationError, InternalError, PrivspecError
from privspec.numerics import cost
from privspec.numerics.accounting import (
    Accounted,
    chosen_discretization,
    closed_form_bound,
    internal_failure,
)
from privspec.numerics.portable_pld import MAX_LOSS, RangeError
from privspec.numerics.shuffling import shuffled_lower_mu
from privspec.numerics.strategy_file import read_strategy_files
from privspec.report import formatting as fmt
from privspec.report.assembly import assemble, gaussian_report
from privspec.report.model import GDP, Caveat, GroupRow, Report
from privspec.report.provenance import spec_sha256
from privspec.report.wording import caveat
from privspec.spec.group import group_sizes
from privspec.spec.kinds.dpsgd import DPSGD
from privspec.spec.models import Spec, walk

__all__ = ["evaluate", "spec_sha256"]


def _as_spec(spec: Spec | str | os.PathLike[str] | dict[str, Any]) -> tuple[Spec, str | None]:
    if isinstance(spec, Spec):
        return spec, None
    from privspec.spec.loader import load_spec, spec_from_data

    if isinstance(spec, dict):
        return spec_from_data(spec, "<dict>"), None
    return load_spec(spec), os.fspath(spec)


#: What the numerical stack raises when it fails on a valid spec: a privspec bug.
_NUMERICAL_FAILURES = (ArithmeticError, ValueError, IndexError, TypeError, KeyError)


def evaluate(spec: Spec | str | os.PathLike[str] | dict[str, Any],
             *, spec_path: str | None = None, memory_budget: float | None = None,
             time_budget: float | None = None, groups: bool = True) -> Report:
    """Evaluate a spec (model, dict or YAML path) into a frozen Report.

    An invalid spec raises ``SpecError`` (a dict is read like a file, with the same
    diagnostics); a valid one that cannot be evaluated raises ``EvaluationError``.
    ``memory_budget`` (GiB) and ``time_budget`` (seconds) override the spec's
    ``accounting.memory_budget`` and ``accounting.time_budget``.  For a unit of k > 1
    records the report has its group table (``Report.groups``) unless ``groups`` is
    false (a search that reads μ and ε alone).
    """
    given, path = _as_spec(spec)
    model = given
    overrides = {name: value for name, value in (("memory_budget", memory_budget),
                                                 ("time_budget", time_budget))
                 if value is not None}
    if overrides:  # the report still names the spec as written
        accounting = given.accounting.model_copy(update=overrides)
        model = given.model_copy(update={"accounting": accounting})
    try:
        with _within_budgets(model):
            read_strategy_files(model)
            report = _within_budget(model, path, spec_path, groups)
        if groups and model.records_per_unit > 1 and not report.groups:
            report = report.model_copy(update={"groups": _group_rows(model, report)})
        shuffled = _shuffled_caveat(model, report)
        if shuffled is not None:
            report = report.model_copy(update={"warnings": [shuffled, *report.warnings]})
        # The hash names the spec as given, whatever grid or budget evaluated it.
        return report.model_copy(update={"spec_sha256": spec_sha256(given)})
    except PrivspecError:
        raise
    except _NUMERICAL_FAILURES as error:
        raise InternalError(internal_failure(error)) from error


#: The smallest share of ``accounting.memory_budget`` left to one computation.
COMPUTATION_SHARE = 0.6


def computation_bytes(budget: float) -> float:
    """Bytes one computation may take within a budget of ``budget`` GiB for the whole
    process: what Python, numpy, scipy and dp-accounting hold is set aside
    (``cost.INTERPRETER_BYTES``), but at least ``COMPUTATION_SHARE`` of it is left."""
    whole = budget * 2**30
    return max(COMPUTATION_SHARE * whole, whole - cost.INTERPRETER_BYTES)
#: Steps a coarser discretization is chosen from (times powers of ten).
_NICE_STEPS = (1.0, 2.0, 5.0)
#: The coarsest discretization the spec allows.
COARSEST = 0.1


def _coarser(h: float, factor: float) -> float:
    """The smallest 1, 2 or 5 × 10ᵏ at least ``factor``·h (with a margin for the
    estimate), so that the memory estimate fits."""
    want = h * factor * 1.25
    exponent = math.floor(math.log10(want))
    for scale in (*_NICE_STEPS, 10.0):
        step = scale * 10.0**exponent
        if step >= want * (1 - 1e-12):
            return float(f"{step:.1g}")
    return want  # pragma: no cover - 10·10ᵏ ≥ want always


def _at(model: Spec, h: float) -> Spec:
    """``model`` with discretization ``h``."""
    return model.model_copy(update={"accounting": model.accounting.model_copy(
        update={"discretization": h})})


def _group_rows(model: Spec, report: Report) -> list[GroupRow]:
    """The group table of a unit whose sizes are different mechanisms (each release's
    sensitivity scaled, or a mixture, or no composition to share): ``model`` evaluated
    with records_per_unit set to each of ``group_sizes`` at ``report``'s discretization,
    so that each row is what the report would say for that size; the last row is
    ``report``'s.  The rows share one time budget, split evenly (a row above its share
    is coarsened or bounded, as any evaluation), so that the table costs at most what
    the report did."""
    sizes = group_sizes(model.records_per_unit)
    shared = model.accounting.model_copy(
        update={"time_budget": model.accounting.time_budget / max(1, len(sizes) - 1)})
    rows = []
    for size in sizes:
        evaluated = report if size == model.records_per_unit else _evaluated(
            _at(model.model_copy(update={"records_per_unit": size, "accounting": shared}),
                report.accounting.discretization))
        rows.append(GroupRow(size=size, mu=evaluated.gdp.mu,
                             epsilon=evaluated.epsilons[0].epsilon))
    return rows


@contextlib.contextmanager
def _within_budgets(model: Spec) -> Iterator[None]:
    """A computation held to ``model``'s memory and time budgets.  Overflow to ±∞ and
    0·∞ are handled where they occur; numpy's and dp-accounting's RuntimeWarnings about
    them would only alarm the reader."""
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            cost.budget(computation_bytes(model.accounting.memory_budget),
                        model.accounting.time_budget):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _evaluated(model: Spec) -> Report:
    """``model``'s report (without its group table), within its own budgets."""
    with _within_budgets(model):
        return _within_budget(model, None, None, groups=False)


def _within_budget(model: Spec, path: str | None, spec_path: str | None,
                   groups: bool) -> Report:
    """``assemble`` at the spec's discretization (or, when the spec sets none, a finer one
    its finest release needs, ``chosen_discretization``), or at a coarser one (still
    pessimistic, looser, said in a caveat) when its cost estimate exceeds the memory
    budget; the closed-form bound, or a refusal with the estimate, when none fits.
    ``groups``: with the group table where ``assemble`` makes it."""
    asked = model.accounting.discretization
    chosen = (asked if "discretization" in model.accounting.model_fields_set
              else min(asked, chosen_discretization(model)))
    used = _at(model, chosen)
    over: cost.CostError | None = None  # why the last attempt did not fit
    for attempt in range(8):
        if attempt:
            cost.release_memory()  # the abandoned attempt's (its traceback is gone now)
            cost.reset_held()
        try:
            report = assemble(used, path, spec_path, groups)
            break
        except RangeError as error:  # beyond double precision: the closed form, if any
            return _bound_instead(model, path, spec_path, error, "accounting/beyond-range",
                                  largest=MAX_LOSS)
        except (cost.CostError, MemoryError) as error:
            # Out of memory beyond the estimates: a coarser grid needs less, likewise.
            over = (error if isinstance(error, cost.CostError) else
                    cost.CostError("composing the mechanism ran out of memory", math.inf, 2.0))
            # Kept for the caveat, without its traceback: that would keep the abandoned
            # attempt's frames, and all the releases they built, through the next one.
            over.__traceback__ = over.__context__ = over.__cause__ = None
            h = (_coarser(used.accounting.discretization, over.factor)
                 if math.isfinite(over.factor) else math.inf)  # inf: no grid helps
            if used.accounting.discretization < asked:  # a finer grid of our choosing
                h = max(h, asked)  # did not fit: the spec's own, before anything coarser
            if h > COARSEST:
                return _bound_instead(model, path, spec_path, _cost_refusal(model, over),
                                      "accounting/too-costly", **_budget_values(model, over))
            used = _at(used, h)
    else:  # each pass coarsens by the estimate's factor; estimates may be off
        assert over is not None
        return _bound_instead(model, path, spec_path, _cost_refusal(model, over),
                              "accounting/too-costly", **_budget_values(model, over))
    final = used.accounting.discretization
    if _uncertified(report):
        certified = _certified_coarser(used, path, spec_path, report, groups)
        if certified is not None:
            return certified
    if final == asked or (final < asked and report.gdp.bound):  # (a bound has no grid)
        return report
    why = (caveat("accounting/discretization-chosen", used=final, default=asked)
           if final < asked or over is None else
           caveat("accounting/coarsened", asked=asked, used=final,
                  **_budget_values(model, over)))
    return report.model_copy(update={"warnings": [why, *report.warnings]})


#: Coarser grids tried, as multiples of the one whose composition was uncertified.
_CERTIFIED_SEARCH = (2.0, 5.0, 10.0)


def _uncertified(report: Report) -> bool:
    return any(w.code == "accounting/uncertified-composition" for w in report.warnings)


def _certified_coarser(used: Spec, path: str | None, spec_path: str | None,
                       finer: Report, groups: bool) -> Report | None:
    """The report at the finest coarser grid (up to ten times ``used``'s) whose
    composition is certified, within what is left of the budgets, with a caveat giving
    the uncertified figures of ``finer`` and saying which to publish; None when there is
    none (``finer`` then stands, with its own caveat)."""
    h = used.accounting.discretization
    for scale in _CERTIFIED_SEARCH:
        coarse = float(f"{h * scale:.1g}")
        if coarse > COARSEST:
            return None
        cost.release_memory()
        cost.reset_held()
        try:
            report = assemble(_at(used, coarse), path, spec_path, groups)
        except (cost.CostError, MemoryError, RangeError):
            return None
        if report.gdp.bound:
            return None
        if not _uncertified(report):
            return report.model_copy(update={"warnings": [
                _uncertified_finer(finer, h, coarse), *report.warnings]})
    return None


def _uncertified_finer(finer: Report, h: float, used: float) -> Caveat:
    """The caveat of a report composed at ``used`` because ``h`` was uncertified."""
    values: dict[str, Any] = {"finer": h, "used": used, "finer_mu": finer.gdp.mu}
    if finer.gdp.mu is None:
        values["finer_mu"] = math.inf
    if finer.epsilons:
        values.update(finer_epsilon=finer.epsilons[0].epsilon, delta=finer.epsilons[0].delta)
    return caveat("accounting/uncertified-finer", **values)


def _shuffled_caveat(model: Spec, report: Report) -> Caveat | None:
    """For DP-SGD on shuffled batches: the report's μ (no amplification) between the
    best known lower bound (``numerics.shuffling``, at the report's floor and at τ → 0)
    and what Poisson accounting would claim (not a guarantee for such a run).  For a unit
    of k > 1 records the claim is one record's, beside this accounting's μ for one record
    (the group table's first row, when the report has it): the unit's own Poisson figure
    (a mixture over the records sampled, or group privacy) would take many times the
    report's own evaluation."""
    runs = [block for _, kind, block in walk(model.mechanism)
            if kind == "dpsgd" and block.sampling == "shuffled"]
    if not runs or report.gdp.mu is None:
        return None
    floor = report.accounting.floor

    def lower(tau: float) -> float:  # rounded down: a lower bound, printed as given
        return fmt.round_float(max(_attack_mu(run, tau) for run in runs), "down")

    from privspec.spec.loader import spec_from_data

    records = model.records_per_unit
    one = model if records == 1 else model.model_copy(update={"records_per_unit": 1})
    poisson = _gdp_of(spec_from_data(_with_poisson(
        one.model_dump(mode="json", exclude_unset=True))))
    upper = (report.gdp if records == 1 else report.groups[0] if report.groups
             else _gdp_of(one))
    # Only a numerical Poisson figure is what Poisson accounting would claim (a closed-form
    # bound, which ignores sampling, is not).
    single = None if upper is None else upper.mu
    claim: dict[str, Any] = (
        {} if poisson is None or poisson.bound or poisson.mu is None or single is None
        or poisson.mu >= single else {"poisson": poisson.mu})
    if claim and records > 1:
        claim.update(records=records, single=single)
    return caveat("accounting/shuffled", upper=report.gdp.mu, lower=lower(floor), floor=floor,
                  exact=lower(1e-300), **claim)


def _gdp_of(model: Spec) -> GDP | None:
    """The μ figures of ``model``, computed with budgets of their own; None when the
    evaluation refuses."""
    try:
        with _within_budgets(model):
            return _within_budget(model, None, None, groups=False).gdp
    except InternalError:
        raise
    except EvaluationError:  # no figure at all: nothing to compare with
        return None


def _attack_mu(run: DPSGD, floor: float) -> float:
    """The μ that the large-batch-sum attack proves a shuffled run needs, over its whole
    epochs (``numerics.shuffling``)."""
    per_epoch = run.batches_per_epoch()
    assert per_epoch is not None and run.batch_size is not None and run.dataset_size
    return shuffled_lower_mu(run.noise_multiplier, per_epoch, run.times() // per_epoch, floor,
                             inside=min(1.0, per_epoch * run.batch_size / run.dataset_size))


def _with_poisson(data: Any) -> Any:
    """Spec data with every shuffled DP-SGD run accounted as Poisson-sampled, with the
    steps it took."""
    if isinstance(data, dict) and data.get("sampling") == "shuffled":
        steps = DPSGD.model_validate(data).times()
        kept = {key: value for key, value in data.items()
                if key not in ("partial_batch", "epochs", "steps")}
        return {**kept, "sampling": "poisson", "steps": steps}
    if isinstance(data, dict):
        return {key: _with_poisson(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_with_poisson(item) for item in data]
    return data


def _bound_instead(model: Spec, path: str | None, spec_path: str | None,
                   refusal: EvaluationError, code: str, **values: Any) -> Report:
    """The closed-form bound's report, with the caveat ``code`` saying why the numerical
    accounting gave way; ``refusal`` when the mechanism has no closed form."""
    bound = closed_form_bound(model)
    if not math.isfinite(bound.mu):
        raise refusal
    accounted = Accounted(pmfs=(), stages=(), truncation=0.0, bound=bound)
    return gaussian_report(model, bound.mu, accounted, path, spec_path,
                            [caveat(code, **values)])


def _budget_values(model: Spec, error: cost.CostError) -> dict[str, Any]:
    """The budget ``error`` exceeded, for a caveat: its ``resource`` and its ``budget``."""
    if error.resource == "time":
        return {"resource": "time", "budget": model.accounting.time_budget}
    return {"resource": "memory", "budget": model.accounting.memory_budget}


def _cost_refusal(model: Spec, error: cost.CostError) -> EvaluationError:
    """The refusal of a mechanism that no discretization fits: the estimate and what to
    change (only the reason when no grid or budget would help)."""
    if not math.isfinite(error.factor):
        return EvaluationError(str(error), error.path)
    field = f"{error.resource}_budget"
    unit = "s" if error.resource == "time" else "GiB"
    budget = getattr(model.accounting, field)
    return EvaluationError(
        f"{error}; beyond the {error.resource} budget (accounting.{field} = {budget:g} "
        f"{unit}) even at the coarsest discretization h = {COARSEST:g}. More noise (privacy "
        "losses this large reveal almost everything about a record), fewer distinct stages "
        "or a larger budget brings it within reach", error.path or ("accounting", field))
