"""``privspec export``: a spec in another tool's terms (dp-accounting's DpEvent)."""

from __future__ import annotations

from typing import Annotated

import typer

from privspec.cli.loading import load_all_or_exit
from privspec.cli.output import emit, fail, refused


def export(
    spec: Annotated[str, typer.Argument(
        metavar="SPEC", help="The spec file (*.privspec.yaml) to export.", show_default=False)],
    dp_event: Annotated[bool, typer.Option(
        "--dp-event", help="Export the mechanism as dp-accounting's DpEvent (its "
        "named-tuple form as JSON), with the neighbouring relation to account it under.")
    ] = False,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Write here instead of stdout (atomically).",
        show_default=False)] = None,
) -> None:
    """Export a spec for other tools, so that anyone can re-check a report with them.

    --dp-event: the mechanism as dp-accounting's event, e.g. to run its PLD or RDP
    accountant on it: DpEvent.from_named_tuple of the JSON's "event" (read it as you
    would any untrusted file), an accountant built with its "neighboring_relation".
    What the event states more loosely than the spec is listed under "notes".
    """
    import json

    from privspec.errors import PrivspecError
    from privspec.workflows.dp_event import export_dp_event

    if not dp_event:
        raise fail("export", "say what to export: --dp-event")
    ((_, loaded),) = load_all_or_exit([spec])
    try:
        exported = export_dp_event(loaded)
    except PrivspecError as error:  # a strategy file's bad value, read only now
        raise refused("export", error, spec, spec) from None
    text = json.dumps(exported.as_json(), indent=2, ensure_ascii=False) + "\n"
    emit("export", text, output, inputs=[spec])
