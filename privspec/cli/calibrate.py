"""``privspec calibrate``: the least private value of one field that meets the targets."""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from privspec.cli.options import OPTIONS
from privspec.cli.output import EXIT_CANNOT_RUN, fail

if TYPE_CHECKING:
    from privspec.workflows.calibration import Calibration


class CalibrateFormat(StrEnum):
    """How ``calibrate`` prints its answer."""

    text = "text"
    json = "json"


def _figure(calibration: Calibration, target: Any) -> str:
    """A target's figure at the calibrated value, rounded towards the attacker, beside
    its target."""
    from privspec.report import formatting as fmt

    figure = calibration.figures[str(target)]
    shown = fmt.against_limit(figure, target.value, True, upper=target.upper)
    return f"{target.name} = {shown} {'≤' if target.upper else '≥'} {target.value:g}"


def _text(calibration: Calibration, label: str, previous: str, edit_line: int | None) -> str:
    """The answer in words: the value, what it achieves, what binds, the change."""
    from privspec.report import formatting as fmt
    from privspec.spec.diagnostics import printable
    from privspec.spec.editing import written_number
    from privspec.spec.group import for_whom

    report, knob = calibration.report, calibration.knob
    whom = for_whom(report.unit, report.records_per_unit, report.unit_level)
    value = written_number(calibration.value)
    gdp = report.gdp
    head = (f"μ = {fmt.fmt_mu(gdp.mu)}" if gdp.mu is not None else "no finite μ")
    if gdp.mu is not None and not gdp.bound:
        head += f", regret {fmt.fmt_regret_of(gdp)}"
    epsilons = ", ".join(f"ε = {fmt.fmt_epsilon(e.epsilon)} at δ = {fmt.fmt_given(e.delta)}"
                         for e in report.epsilons)
    if calibration.limited_by_domain:
        edge = ("it is the least private value the spec allows (or the search span "
                "reaches), so the targets leave room")
    else:
        edge = (f"{written_number(calibration.neighbour)} misses "  # type: ignore[arg-type]
                f"{calibration.binding}")
    where = f"line {edit_line}: " if edit_line else ""
    lines = [
        f"{printable(label)}: {knob} = {value} meets every target (was {previous}); {edge}.",
        f"  achieves{printable(whom)}: {head}, advantage "
        f"{fmt.fmt_advantage(gdp.advantage)}; {epsilons}",
        "  targets: " + "; ".join(_figure(calibration, t) for t in calibration.targets)
        + f" (binding: {calibration.binding})",
        f"  change: {where}{knob.field}: {previous} → {value}",
        f"  evaluated {calibration.evaluations} times as `render` does"
        + (f", after {calibration.rough_evaluations} on a coarser grid"
           if calibration.rough_evaluations else ""),
    ]
    return "\n".join(lines)


def _json(calibration: Calibration, label: str, previous: float) -> str:
    report = calibration.report
    return json.dumps({
        "spec": label,
        "vary": str(calibration.knob),
        "value": calibration.value,
        "previous": previous,
        "next_value_missing": calibration.neighbour,
        "limited_by_domain": calibration.limited_by_domain,
        "binding": str(calibration.binding),
        "targets": [{"target": str(t), "figure": calibration.figures[str(t)]}
                    for t in calibration.targets],
        "mu": report.gdp.mu,
        "regret": report.gdp.regret,
        "advantage": report.gdp.advantage,
        "epsilons": [{"delta": e.delta, "epsilon": e.epsilon} for e in report.epsilons],
        "evaluations": calibration.evaluations,
        "rough_evaluations": calibration.rough_evaluations,
        "spec_sha256": report.spec_sha256,
    }, indent=2, ensure_ascii=False)


Spec = Annotated[str, typer.Argument(
    metavar="SPEC", help="The spec file (*.privspec.yaml) to calibrate.", show_default=False)]
Vary = Annotated[str, typer.Option(
    "--vary", metavar="PATH", help="The field to vary: its spec path as error messages "
    "write it (mechanism.compose[1].mechanism.dpsgd.noise_multiplier, or with slashes), "
    "a stage's name and the field (training/noise_multiplier), or the field alone when "
    "only one has that name.", show_default=False)]
Targets = Annotated[list[str], typer.Option(
    "--target", "-t", metavar="METRIC=VALUE", help="A figure to meet (repeatable; all "
    "must hold): mu=V, advantage=V, tpr@FPR=V (TPR at that FPR at most V), "
    "beta@ALPHA=V (β at that α at least V), epsilon@DELTA=V, and the risks "
    "reidentification@N=V, attribute@K=V, reconstruction@KAPPA=V, accuracy@PI=V.",
    show_default=False)]
Output = Annotated[str | None, typer.Option(
    "--output", "-o", metavar="FILE", help="Write the calibrated spec here: only the value "
    "changes (comments, order and layout kept), and a one-line 'calibrated:' note says "
    "what was chosen for which targets (reports print it).", show_default=False)]
InPlace = Annotated[bool, typer.Option(
    "--in-place", help="Write the calibrated value into SPEC itself.")]
Format = Annotated[CalibrateFormat, typer.Option(
    "--format", "-f", help="text: the value, what it achieves and the change; json: "
    "the same for scripts.", case_sensitive=False)]


def calibrate(spec: Spec, vary: Vary, target: Targets, output: Output = None,
              in_place: InPlace = False, output_format: Format = CalibrateFormat.text) -> None:
    """Find the least private value of one field that meets every target.

    Noise goes up, steps, rates and ε down: the direction comes from the field. The
    value is written with 4 significant digits (whole numbers exactly), was evaluated
    by the same pessimistic accounting as `render` and met every target, and the next
    value towards less privacy was evaluated and missed one (Kulynych et al.,
    "Attack-aware noise calibration for differential privacy", NeurIPS 2024).
    Exit 0 with the value; 2 when no value meets the targets (with what the most
    private value achieves) or the input is bad.
    """
    from privspec.spec.editing import written_number
    from privspec.spec.loader import position_of

    if output is not None and in_place:
        raise fail("calibrate", "give either --output or --in-place, not both")
    calibration, text = _calibrated_or_exit(spec, vary, target)
    knob = calibration.knob
    previous = written_number(int(knob.value) if knob.integer else knob.value)
    if not knob.written:
        previous += " (its default)"
    position = position_of(spec, knob.path)
    destination = spec if in_place else output
    if destination is not None:
        _write_or_exit(calibration, spec, text, destination, in_place)
    if output_format is CalibrateFormat.json:
        typer.echo(_json(calibration, spec, knob.value))
    else:
        typer.echo(_text(calibration, spec, previous, position[0] if position else None))
    if destination is not None:
        print(f"wrote {destination}", file=sys.stderr)


def _calibrated_or_exit(spec: str, vary: str, targets: list[str]) -> tuple[Calibration, str]:
    """The calibration, and the spec file's text; one line (or the file's diagnostics)
    and exit 2 when it cannot be done."""
    from privspec.errors import EvaluationError
    from privspec.spec.diagnostics import SpecError, format_diagnostics
    from privspec.workflows.calibration import CalibrationError
    from privspec.workflows.calibration import calibrate as run

    try:  # the file is read (and every problem of it located) by the calibration first
        calibration = run(spec, vary, targets, memory_budget=OPTIONS.memory_budget,
                          time_budget=OPTIONS.time_budget)
        with open(spec, encoding="utf-8") as handle:
            return calibration, handle.read()
    except OSError as error:
        raise fail("calibrate", f"{spec}: cannot read the file: "
                   f"{error.strerror or error}") from None
    except CalibrationError as error:
        raise fail("calibrate", f"{spec}: {error}") from None
    except SpecError as error:  # the file's own problems, located (a stale note aside)
        typer.echo(format_diagnostics(error.diagnostics, "gcc"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    except EvaluationError as error:
        raise fail("calibrate", f"{spec}: cannot evaluate: {error}") from None


def _write_or_exit(calibration: Calibration, spec: str, text: str, destination: str,
                   in_place: bool) -> None:
    """The spec with the calibrated value and a ``calibrated:`` note, written to
    ``destination`` (``--in-place``: the file a symbolic link points to, keeping the
    link); one line and exit 2 when it cannot be."""
    from privspec.cli.files import write_atomically
    from privspec.spec.editing import with_number, with_top_level, written_number

    knob = calibration.knob
    note = {"field": str(knob), "value": calibration.value,
            "targets": [str(t) for t in calibration.targets]}
    try:
        edited = with_top_level(with_number(text, knob.path, calibration.value),
                                "calibrated", note)
    except ValueError as error:
        raise fail("calibrate", f"{spec}: cannot write the value into the file "
                   f"as it is laid out ({error}); set {knob} to "
                   f"{written_number(calibration.value)} by hand") from None
    try:
        write_atomically({os.path.realpath(destination) if in_place else destination: edited})
    except OSError as error:
        raise fail("calibrate", f"cannot write {destination}: "
                   f"{error.strerror or error}") from None
