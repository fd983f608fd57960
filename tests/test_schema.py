"""The committed JSON Schema: in sync with the models, valid, accepts every example and
rejects the invalid specs that a schema can catch (shapes, types and ranges; not the
cross-field rules, which only ``privspec validate`` checks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from privspec.cli import main
from privspec.spec.loader import load_yaml_text
from privspec.spec.schema import DEFAULT_SCHEMA_PATH, json_schema, json_schema_text

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / DEFAULT_SCHEMA_PATH
EXAMPLES = sorted((ROOT / "examples").glob("*.privspec.yaml"))
INVALID = ROOT / "tests" / "invalid"

#: Invalid specs whose problems are all (or partly) about shapes, types and ranges.
SCHEMA_REJECTS = [
    "empty-composition", "huge-repetitions", "inf-and-nan", "missing-keys",
    "negative-or-zero-scale", "not-a-mapping", "numbers-as-strings",
    "relation-and-field-problems", "sampling-rate-out-of-range", "shuffle", "unknown-key-typo",
    "zero-floor",
    "unknown-kind", "wrong-types",
]
#: Invalid specs whose only problems are cross-field rules a JSON Schema does not express.
SCHEMA_ACCEPTS = [
    "batch-larger-than-dataset", "epochs-with-batch-larger-than-dataset",
    "epochs-without-batch-size", "relation-not-accountable",
    "sigma-and-noise-multiplier",
]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _data(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    try:
        return load_yaml_text(text, path.name)
    except Exception:  # not a mapping: read it plainly, the schema must still say no
        return yaml.safe_load(text)


def test_committed_schema_matches_the_models() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == json_schema_text(), (
        f"{DEFAULT_SCHEMA_PATH} is stale: run 'privspec schema' and commit it")


def test_schema_names_its_dialect_and_identity() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].startswith("urn:privspec:")
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_schema_accepts_every_example(example: Path,
                                      validator: jsonschema.Draft202012Validator) -> None:
    errors = [e.message for e in validator.iter_errors(_data(example))]
    assert errors == []


@pytest.mark.parametrize("name", SCHEMA_REJECTS)
def test_schema_rejects_invalid_shapes(name: str,
                                       validator: jsonschema.Draft202012Validator) -> None:
    assert not validator.is_valid(_data(INVALID / f"{name}.privspec.yaml"))


@pytest.mark.parametrize("name", SCHEMA_ACCEPTS)
def test_schema_cannot_see_cross_field_rules(name: str,
                                             validator: jsonschema.Draft202012Validator) -> None:
    assert validator.is_valid(_data(INVALID / f"{name}.privspec.yaml"))


def test_every_loadable_invalid_spec_is_classified() -> None:
    loadable = set()
    for path in INVALID.glob("*.privspec.yaml"):
        try:
            load_yaml_text(path.read_text(encoding="utf-8"), path.name)
        except Exception:
            continue
        loadable.add(path.name.removesuffix(".privspec.yaml"))
    assert loadable <= set(SCHEMA_REJECTS) | set(SCHEMA_ACCEPTS)


def test_schema_command_writes_and_checks(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "privspec.schema.json"
    assert main(["schema", "--check", "-o", str(target)]) == 1
    assert main(["schema", "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == json_schema_text()
    assert main(["schema", "--check", "-o", str(target)]) == 0
    target.write_text("{}\n", encoding="utf-8")
    assert main(["schema", "--check", "-o", str(target)]) == 1
    assert "stale" in capsys.readouterr().err


def test_schema_command_default_path_is_relative_to_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["schema"]) == 0
    assert (tmp_path / DEFAULT_SCHEMA_PATH).read_text(encoding="utf-8") == json_schema_text()


def test_schema_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "-o", "-"]) == 0
    assert capsys.readouterr().out == json_schema_text()
