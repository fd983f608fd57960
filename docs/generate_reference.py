"""Write the documentation's reference pages from the code, so they cannot drift:
``docs/reference/spec.md`` from the JSON Schema of a spec (the pydantic models) and
``docs/reference/cli.md`` from the command line's own help.

    python docs/generate_reference.py          # write both
    python docs/generate_reference.py --check  # fail if either is stale (the tests do)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"spec": ROOT / "docs" / "reference" / "spec.md",
         "cli": ROOT / "docs" / "reference" / "cli.md"}


#: Node name → (YAML key, model name) of a mechanism kind.
KindKeys = dict[str, tuple[str, str]]


def _kind_keys(defs: dict[str, Any]) -> KindKeys:
    """Each kind's YAML key and the model under it (or, for ``compose``, its list's
    items), from the schema's one-key ``…Node`` wrappers."""
    keys = {}
    for name, node in defs.items():
        if name.endswith("Node"):
            (key, value), = node["properties"].items()
            target = value.get("$ref") or value["items"]["$ref"]
            keys[name] = (key, target.rsplit("/", 1)[-1])
    return keys


def _type(field: dict[str, Any], kinds: KindKeys) -> str:
    if "$ref" in field:
        name = field["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "oneOf" in field:  # the mechanism: one of the kinds' one-key mappings
        keys = [kinds[option["$ref"].rsplit("/", 1)[-1]]
                for option in field["oneOf"] if "$ref" in option]
        # a composition is a list of stages: its entry is the Stage model's
        return "a mapping with one key, the kind: " + ", ".join(
            f"`{key}:` [{model}](#{model.lower()})"
            + (" (a list)" if key == "compose" else "") for key, model in keys)
    if "anyOf" in field:
        return " or ".join(_type(option, kinds) for option in field["anyOf"] if option != {"type": "null"})
    if "enum" in field:
        return " \\| ".join(f"`{value}`" for value in field["enum"])
    if "const" in field:
        return f"`{field['const']}`"
    if field.get("type") == "array":
        return f"list of {_type(field.get('items', {}), kinds)}"
    return str(field.get("type", "any"))


def _limits(field: dict[str, Any]) -> str:
    words = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<",
             "minItems": "items ≥", "maxItems": "items ≤", "minLength": "length ≥",
             "maxLength": "length ≤"}
    parts = [f"{sign} {field[key]}" for key, sign in words.items() if key in field]
    for option in field.get("anyOf", []):
        parts += [f"{sign} {option[key]}" for key, sign in words.items() if key in option]
    return ", ".join(parts)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("``", "`").replace("|", "\\|")


def _table(model: dict[str, Any], kinds: KindKeys) -> list[str]:
    """The model's fields as a Markdown table; none for a model without fields."""
    if not model.get("properties"):
        return []
    required = set(model.get("required", []))
    lines = ["| field | type | required | default | limits | meaning |",
             "|---|---|---|---|---|---|"]
    for name, field in model.get("properties", {}).items():
        default = json.dumps(field["default"], ensure_ascii=False) if "default" in field else ""
        lines.append(f"| `{name}` | {_type(field, kinds)} | {'yes' if name in required else ''} | "
                     f"{_cell(default)} | {_limits(field)} | {_cell(field.get('description', ''))} |")
    return lines


def spec_page() -> str:
    """The spec reference, from the JSON Schema privspec generates from its models."""
    from privspec.spec.schema import json_schema

    schema = json_schema()
    kinds = _kind_keys(schema.get("$defs", {}))
    keyed = {model: key for key, model in kinds.values()}
    lines = ["# Spec reference", "",
             "Generated from the spec's JSON Schema (`privspec schema`) by "
             "`docs/generate_reference.py`; do not edit.", "",
             "## The spec file", "", _cell(schema.get("description", "")), "",
             *_table(schema, kinds), ""]
    for name, model in sorted(schema.get("$defs", {}).items()):
        if name.endswith("Node"):
            continue  # a kind's one-key wrapper: the kind's own model is listed
        key = (f"Written as `{keyed[name]}:` "
               + ("(a list of these stages)" if keyed[name] == "compose" else "(its fields under it)")
               + ". " if name in keyed else "")
        table = _table(model, kinds)
        lines += [f"## {name}", "", key + _cell(model.get("description", "")), "",
                  *table, *([""] if table else [])]
    return "\n".join(lines)


def _commands() -> list[str]:
    """Every command line to document, in the order of ``privspec.cli.app.COMMANDS``
    (the README's table), each command of a group (``import opacus``) on its own."""
    import importlib

    import typer

    from privspec.cli.app import COMMANDS

    commands = []
    for name, target in COMMANDS.items():
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        if isinstance(command, typer.Typer):
            commands += [f"{name} {sub.name or sub.callback.__name__.replace('_', '-')}"
                         for sub in command.registered_commands if sub.callback is not None]
        else:
            commands.append(name)
    return commands


def cli_page() -> str:
    """The command-line reference, from each command's own help."""
    import os

    os.environ["COLUMNS"] = "100"  # help is wrapped to the terminal: a fixed width here
    from privspec.cli.app import main

    lines = ["# Command-line reference", "",
             "Generated from `privspec COMMAND --help` by `docs/generate_reference.py`; do not "
             "edit.", ""]
    for command in ["", *_commands()]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main([*command.split(), "--help"])
        title = f"privspec {command}".strip()
        lines += [f"## `{title}`", "", "```text", out.getvalue().rstrip(), "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for name, page in (("spec", spec_page()), ("cli", cli_page())):
        path = PAGES[name]
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != page:
                stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    if stale:
        print("stale: " + ", ".join(stale) + " (run python docs/generate_reference.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
