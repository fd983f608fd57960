"""``privspec import``: a spec from what a training run recorded
(``privspec.workflows.importing``)."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated

import typer


class Relation(StrEnum):
    add_or_remove = "add-or-remove"
    replace_one = "replace-one"
    zero_out = "zero-out"


class Sampling(StrEnum):
    poisson = "poisson"
    fixed_size = "fixed-size"
    shuffled = "shuffled"
    truncated_poisson = "truncated-poisson"


class PartialBatch(StrEnum):
    kept = "kept"
    dropped = "dropped"


app = typer.Typer(name="import", no_args_is_help=True, add_completion=False,
                  help="Write a spec from what a training run recorded: Opacus's accountant "
                  "state, a dp-accounting event, jax_privacy's accounting parameters, or TF "
                  "Privacy's statement inputs. The "
                  "record proves the numbers; the unit, the neighbouring relation and how "
                  "batches were drawn are yours to state (never guessed), and the spec "
                  "says which is which. JSON only: pickles and checkpoints are refused.")

Unit = Annotated[str, typer.Option("--unit", help="Who is protected, the spec's unit, e.g. "
                                   "'one training example'.", show_default=False)]
Neighbouring = Annotated[Relation, typer.Option(
    "--neighbouring", help="add-or-remove, replace-one or zero-out.", show_default=False)]
Sampled = Annotated[Sampling, typer.Option(
    "--sampling", help="How batches were drawn: poisson, fixed-size, shuffled or "
    "truncated-poisson.",
    show_default=False)]
Title = Annotated[str | None, typer.Option("--title", help="The report's title (default: "
                                           "names the source).", show_default=False)]
Output = Annotated[str | None, typer.Option("--output", "-o", metavar="FILE", help="Write the "
                                            "spec here (atomically) instead of stdout.",
                                            show_default=False)]


def _write(imported: object, output: str | None, inputs: tuple[str, ...] = ()) -> None:
    from privspec.cli.output import emit, fail
    from privspec.errors import InternalError
    from privspec.spec.diagnostics import SpecError
    from privspec.workflows.importing import Imported, spec_text

    assert isinstance(imported, Imported)
    try:
        text = spec_text(imported)
    except SpecError as error:
        raise fail("import", f"the record does not make a valid spec: {error}") from None
    except (ValueError, InternalError) as error:
        raise fail("import", str(error)) from None
    emit("import", text, output, inputs=inputs)


def _positive(value: float) -> float:
    """A count or scale that must be finite and above 0 (typer's ``min`` cannot exclude
    0, nor infinity)."""
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value:g} is not a finite number above 0.")
    return value


def _said(unit: str, neighbouring: Relation | None, sampling: Sampling, title: str | None,
          default_title: str, partial_batch: PartialBatch | None = None,
          unit_level: bool = False) -> object:
    from privspec.workflows.importing import Assertions

    return Assertions(unit=unit, neighbouring=None if neighbouring is None else
                      neighbouring.value, sampling=sampling.value, title=title or default_title,
                      partial_batch=None if partial_batch is None else partial_batch.value,
                      unit_level=unit_level)


def _run(source: str, path: str, unit: str, neighbouring: Relation | None, sampling: Sampling,
         title: str | None, output: str | None, unit_level: bool = False) -> None:
    import os

    from privspec.cli.output import fail
    from privspec.workflows.importing import (
        RecordError,
        from_dp_event,
        from_jax_privacy,
        from_opacus,
        read_record,
    )

    build = {"opacus": from_opacus, "dp-event": from_dp_event,
             "jax-privacy": from_jax_privacy}[source]
    try:
        record, digest = read_record(path, source)
        said = _said(unit, neighbouring, sampling, title, f"Imported from {os.path.basename(path)}",
                     unit_level=unit_level)
        imported = build(record, digest, os.path.basename(path), said)  # type: ignore[arg-type]
    except OSError as error:
        raise fail("import", f"{path}: cannot read the file: {error.strerror or error}") from None
    except RecordError as error:
        raise fail("import", str(error)) from None
    except RecursionError:  # an event nested deeper than any accounting would be
        raise fail("import", f"{path}: nested too deeply to be a record") from None
    _write(imported, output, (path,))


@app.command("opacus")
def opacus(path: Annotated[str, typer.Argument(metavar="FILE.json", help="Opacus's "
                                               "accountant.state_dict() or accountant.history "
                                               "saved as JSON.")],
           unit: Unit, neighbouring: Neighbouring, sampling: Sampled, title: Title = None,
           output: Output = None) -> None:
    """Opacus: each history entry (noise multiplier, sample rate, steps) a DP-SGD stage."""
    _run("opacus", path, unit, neighbouring, sampling, title, output)


@app.command("dp-event")
def dp_event(path: Annotated[str, typer.Argument(metavar="FILE.json", help="A dp-accounting "
                                                 "event as its named-tuple dict (or privspec "
                                                 "export --dp-event's file).")],
             unit: Unit, sampling: Sampled,
             neighbouring: Annotated[Relation | None, typer.Option(
                 "--neighbouring", help="add-or-remove, replace-one or zero-out; must agree "
                 "with the file's neighboring_relation when it has one (export --dp-event "
                 "writes it), which is taken when this is left out.",
                 show_default=False)] = None,
             title: Title = None, output: Output = None) -> None:
    """dp-accounting: the event's mechanism, class by class (never importing a module
    the file names)."""
    _run("dp-event", path, unit, neighbouring, sampling, title, output)


@app.command("jax-privacy")
def jax_privacy(path: Annotated[str, typer.Argument(
        metavar="FILE.json", help="jax_privacy's DpParams fields and num_updates as JSON: "
        "noise_multipliers, num_samples, batch_size (or per_device_batch_size, num_devices "
        "and gradient_accumulation_steps), num_updates, optionally "
        "batch_size_scale_schedule, sampling_method and examples_per_user (the spec's "
        "records_per_unit).")],
                unit: Unit, neighbouring: Neighbouring, sampling: Sampled, title: Title = None,
                output: Output = None,
                unit_level: Annotated[bool, typer.Option(
                    "--unit-level", help="The run sampled users (units), not examples, and "
                    "clipped each user's whole contribution as one (user-level sampling, "
                    "jax_privacy's UserSelectionStrategy): num_samples and the batch count "
                    "users; the spec says unit_level: true.")] = False) -> None:
    """jax_privacy: each run of updates with one noise multiplier and one logical batch a
    DP-SGD stage (gradient accumulation multiplies the batch)."""
    _run("jax-privacy", path, unit, neighbouring, sampling, title, output, unit_level)


@app.command("tf-privacy")
def tf_privacy(
    examples: Annotated[int, typer.Option("--examples", min=1, help="Training examples N.",
                                          show_default=False)],
    batch: Annotated[int, typer.Option("--batch", min=1, help="Batch size B.",
                                       show_default=False)],
    epochs: Annotated[float, typer.Option("--epochs", callback=_positive, help="Epochs E (> 0).",
                                          show_default=False)],
    noise: Annotated[float, typer.Option("--noise", callback=_positive,
                                         help="Noise multiplier z (> 0).", show_default=False)],
    unit: Unit, neighbouring: Neighbouring, sampling: Sampled, title: Title = None,
    output: Output = None,
    partial_batch: Annotated[PartialBatch | None, typer.Option(
        "--partial-batch", help="With --sampling shuffled: whether each epoch's partial last "
        "batch was kept (PyTorch's DataLoader default, drop_last=False) or dropped; unstated, "
        "the spec counts it as dropped (never fewer epochs for the steps).",
        show_default=False)] = None,
) -> None:
    """TF Privacy's privacy-statement inputs (compute_dp_sgd_privacy_statement)."""
    from privspec.cli.output import fail
    from privspec.workflows.importing import RecordError, from_tf_privacy

    said = _said(unit, neighbouring, sampling, title, "Imported from TF Privacy's inputs",
                 partial_batch)
    try:
        imported = from_tf_privacy(examples, batch, epochs, noise, said)  # type: ignore[arg-type]
    except RecordError as error:
        raise fail("import", str(error)) from None
    _write(imported, output)
