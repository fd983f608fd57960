"""The YAML loader: positions, YAML 1.2 scalars, safety, and diagnostics for bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from privspec.spec.diagnostics import (
    Diagnostic,
    SpecError,
    format_gcc_line,
    format_github_line,
    format_json,
)
from privspec.spec.loader import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    load_spec,
    load_spec_text,
    load_yaml_text,
    path_to_str,
    spec_from_data,
)
from privspec.spec.models import MECHANISM_KINDS, Spec
from privspec.spec.yaml_reader import MAX_NODES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.privspec.yaml"))

HEAD = "privspec: 1\ntitle: t\nunit: one example\nneighbouring: add-or-remove\n"
FORBIDDEN_WORDS = ("pydantic", "Input should", "Tag", "Node", "errors.pydantic.dev",
                   "dictionary", "instance of", "Traceback")


def _problems(text: str) -> tuple[Diagnostic, ...]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, "s.yaml")
    assert caught.value.diagnostics
    return caught.value.diagnostics


def _one(text: str) -> Diagnostic:
    problems = _problems(text)
    assert len(problems) == 1, problems
    return problems[0]


# --- valid specs -------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_load(example: Path) -> None:
    spec = load_spec(example)
    assert isinstance(spec, Spec)


def test_there_are_at_least_six_examples() -> None:
    assert len(EXAMPLES) >= 6
    assert (ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml") in EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_start_with_a_comment_and_the_schema_line(example: Path) -> None:
    lines = example.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# yaml-language-server: $schema=../schemas/privspec.schema.json"
    comments = [line for line in lines[1:] if line.startswith("#")]
    assert len(comments) >= 3, "each example explains what it models and its sources"


def test_cifar10_example_has_de_et_al_numbers() -> None:
    spec = load_spec(ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml")
    assert spec.mechanism.kind == "dpsgd"
    dpsgd = spec.mechanism.dpsgd
    assert (dpsgd.noise_multiplier, dpsgd.batch_size, dpsgd.dataset_size, dpsgd.steps) == (
        9.4, 16384, 50000, 2000)


def test_loaded_spec_equals_the_python_built_one() -> None:
    text = HEAD + "mechanism:\n  gaussian: {sigma: 2.0, sensitivity: 1}\n"
    built = Spec.model_validate({
        "privspec": 1, "title": "t", "unit": "one example", "neighbouring": "add-or-remove",
        "mechanism": {"gaussian": {"sigma": 2.0, "sensitivity": 1}},
    })
    assert load_spec_text(text) == built


def test_yaml_1_2_scalars() -> None:
    data = load_yaml_text(
        "a: 1e-5\nb: 1E6\nc: yes\nd: on\ne: 010\nf: 0x1F\ng: 0o17\nh: 2024-01-01\n"
        "i: ~\nj: True\nk: .inf\nl: -.5\nm: '1.5'\nn: 1_000\n")
    assert data == {"a": 1e-5, "b": 1e6, "c": "yes", "d": "on", "e": 10, "f": 31, "g": 15,
                    "h": "2024-01-01", "i": None, "j": True, "k": float("inf"), "l": -0.5,
                    "m": "1.5", "n": "1_000"}
    assert isinstance(data["b"], float)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.privspec.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + "mechanism: {laplace: {scale: 1}}\n").encode())
    assert load_spec(path).title == "t"


def test_non_string_keys_are_read_as_names() -> None:
    problem = _one(HEAD + "mechanism: {laplace: {scale: 1}}\n1: x\n")
    assert problem.code == "spec/unknown-key"
    assert problem.message.startswith("unknown key '1'")


def test_python_api_still_validates_dicts() -> None:
    spec = Spec.model_validate({
        "privspec": 1, "title": "t", "unit": "u", "neighbouring": "replace-one",
        "mechanism": {"randomized_response": {"epsilon": 1.0}},
    })
    assert spec.mechanism.kind == "randomized_response"


# --- positions and messages ---------------------------------------------------


def test_bad_value_points_at_the_value_with_the_user_path() -> None:
    text = HEAD + (
        "mechanism:\n"
        "  compose:\n"
        "    - mechanism: {gaussian: {sigma: 1.0}}\n"
        "    - mechanism:\n"
        "        dpsgd:\n"
        "          noise_multiplier: -1.1\n"
        "          sampling_rate: 0.01\n"
        "          steps: 10\n")
    problem = _one(text)
    assert (problem.line, problem.column) == (10, 29)
    assert problem.path == "mechanism.compose[1].mechanism.dpsgd.noise_multiplier"
    assert problem.message == "must be greater than 0 (got -1.1)"
    assert problem.code == "spec/invalid-value"
    assert format_gcc_line(problem) == (
        "s.yaml:10:29: error: mechanism.compose[1].mechanism.dpsgd.noise_multiplier: "
        "must be greater than 0 (got -1.1) [spec/invalid-value]")


def test_unknown_key_points_at_the_key_with_a_suggestion() -> None:
    problem = _one(HEAD + "mechanism:\n  gaussian:\n    sigma: 1\n    sensitivty: 2\n")
    assert (problem.line, problem.column) == (8, 5)
    assert problem.path == "mechanism.gaussian.sensitivty"
    assert problem.message == "unknown key 'sensitivty'; did you mean 'sensitivity'?"


def test_unknown_key_without_a_close_match_lists_the_allowed_keys() -> None:
    problem = _one(HEAD + "mechanism:\n  laplace: {scale: 1, colour: red}\n")
    assert problem.message == "unknown key 'colour'; allowed keys: scale, epsilon, sensitivity"


@pytest.mark.parametrize("key", ["k" * 500_000, "odd key " * 60_000])
def test_a_long_key_is_quoted_short_in_the_path_and_the_message(key: str) -> None:
    """A key of half a megabyte (an explicit '? ' key) made a line of half a megabyte."""
    problem = _one(HEAD + f"mechanism:\n  gaussian: {{sigma: 1, ? {key} : 3}}\n")
    assert problem.path.startswith("mechanism.gaussian") and len(problem.path) < 100
    assert problem.message.startswith("unknown key ") and len(problem.message) < 200
    assert len(format_gcc_line(problem)) < 400


def test_a_mechanism_of_many_keys_lists_a_few() -> None:
    keys = ", ".join(f"k{i}: 1" for i in range(10_000))
    problem = _one(HEAD + f"mechanism: {{{keys}}}\n")
    assert problem.message.startswith("a mechanism is a mapping with exactly one key, its "
                                      "kind (got 10000 keys: 'k0', 'k1', 'k2', 'k3', 'k4', …)")


def test_unknown_kind_lists_every_kind_and_suggests_one() -> None:
    problem = _one(HEAD + "mechanism:\n  laplase: {scale: 1}\n")
    assert problem.code == "spec/unknown-kind"
    assert problem.path == "mechanism.laplase"
    assert "did you mean 'laplace'?" in problem.message
    for kind in MECHANISM_KINDS:
        assert kind in problem.message


@pytest.mark.parametrize("kind", ["shuffle", "shuffled", "Shuffling"])
def test_shuffling_gets_its_own_explanation(kind: str) -> None:
    problem = _one(HEAD + f"mechanism:\n  {kind}: {{sampling_rate: 0.1}}\n")
    assert problem.code == "spec/unknown-kind"
    assert "shuffling is not Poisson sampling" in problem.message


def test_conflict_without_a_field_points_at_the_block() -> None:
    problem = _one(HEAD + "mechanism:\n  gaussian: {sensitivity: 1}\n")
    assert problem.code == "spec/conflict"
    assert problem.path == "mechanism.gaussian"
    assert (problem.line, problem.column) == (6, 3)


def test_all_problems_are_reported_at_once_in_file_order() -> None:
    text = ("privspec: 1\ntitle: t\nunit: u\nneighbouring: both\n"
            "mechanism:\n  gaussian: {sigma: 0}\nreport: {deltas: [2]}\n")
    problems = _problems(text)
    assert [p.line for p in problems] == [4, 6, 7]
    assert [p.path for p in problems] == ["neighbouring", "mechanism.gaussian.sigma",
                                          "report.deltas[0]"]


def test_missing_key_is_reported_at_its_mapping() -> None:
    problem = _one("privspec: 1\nunit: u\nneighbouring: replace-one\n"
                   "mechanism: {pure_dp: {epsilon: 1}}\n")
    assert problem.code == "spec/missing-key"
    assert problem.path == ""
    assert problem.message.startswith("missing required key 'title'")


def test_messages_never_mention_internals() -> None:
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted((ROOT / "tests" / "invalid").glob("*.privspec.yaml"))]
    for text in texts:
        try:
            load_spec_text(text, "x.yaml")
        except SpecError as error:
            for problem in error.diagnostics:
                for word in FORBIDDEN_WORDS:
                    assert word not in problem.message, problem
                assert ".gaussian.gaussian" not in problem.path


def test_path_to_str() -> None:
    assert path_to_str(("mechanism", "compose", 1, "mechanism", "dpsgd", "batch_size")) == (
        "mechanism.compose[1].mechanism.dpsgd.batch_size")
    assert path_to_str(()) == ""
    assert path_to_str(("a", "b c")) == 'a["b c"]'
    assert path_to_str(("x\ny", 0)) == '["x\\ny"][0]'


# --- hostile and sloppy input ---------------------------------------------------


def test_billion_laughs_is_refused_quickly() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    problem = _one("\n".join(lines) + "\n")
    assert problem.code == "yaml/alias"
    assert problem.line == 2


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    depth = 100_000
    problem = _one("title: " + "[" * depth + "]" * depth + "\n")
    assert problem.code == "yaml/too-deep"
    assert str(MAX_DEPTH) in problem.message
    problem = _one("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 200)))
    assert problem.code == "yaml/too-deep"


def test_binary_junk(tmp_path: Path) -> None:
    path = tmp_path / "junk.privspec.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    (problem,) = caught.value.diagnostics
    assert problem.code == "io/encoding"
    assert "0x80" in problem.message
    path.write_bytes(b"title: x\n\x00\x01\x02ELF")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    (problem,) = caught.value.diagnostics
    assert problem.code == "yaml/invalid-character"
    assert (problem.line, problem.column) == (2, 1)


def test_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.privspec.yaml"
    path.write_bytes(HEAD.encode() + "mechanism: {laplace: {scale: 1}}\n# café\n".encode("latin-1"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    (problem,) = caught.value.diagnostics
    assert problem.code == "io/encoding"
    assert (problem.line, problem.column) == (6, 6)


def test_missing_file() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec("does/not/exist.privspec.yaml")
    (problem,) = caught.value.diagnostics
    assert problem.code == "io/not-found"
    assert problem.file == "does/not/exist.privspec.yaml"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path)
    assert caught.value.diagnostics[0].code == "io/is-a-directory"


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0,
                    reason="permissions are not enforced for root")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.privspec.yaml"
    path.write_text(HEAD)
    path.chmod(0)
    try:
        with pytest.raises(SpecError) as caught:
            load_spec(path)
        assert caught.value.diagnostics[0].code == "io/unreadable"
    finally:
        path.chmod(0o600)


def test_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.privspec.yaml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.diagnostics[0].code == "io/too-large"


def test_a_long_list_stops_the_reader_at_its_cap() -> None:
    """490,000 values under an unknown key took 41 s and 536 MB to read: the reader now
    stops at the first value past ``MAX_NODES``, located, before parsing the rest; a
    spec of 5,000 stages is still read."""
    text = (HEAD + "mechanism: {laplace: {scale: 1}}\nextra: ["
            + ",".join(["0"] * 490_000) + "]\n")
    problem = _one(text)
    assert problem.code == "io/too-large"
    assert f"more than {MAX_NODES:,} YAML values" in problem.message
    assert problem.line == 6 and problem.column > 2 * (MAX_NODES - 20)
    stage = "- mechanism: {discrete_laplace: {scale: 9.0e+5, sensitivity: 999999}}\n"
    spec = load_spec_text(HEAD + "mechanism:\n  compose:\n" + "  " + "  ".join(
        [stage] * 5_000))
    assert len(spec.mechanism.compose) == 5_000  # type: ignore[union-attr]


def test_data_past_the_cap_is_refused_before_it_is_written_out() -> None:
    """Specs built from data (``import``, the Python API) are counted before they are
    dumped to YAML: 80,000 jax-privacy noise multipliers spent 17 s writing a spec that
    was then refused."""
    with pytest.raises(SpecError) as refused:
        spec_from_data({"privspec": 1, "title": "t", "unit": "one example",
                        "neighbouring": "add-or-remove",
                        "mechanism": {"laplace": {"scale": 1}}, "extra": [0] * 160_000})
    (problem,) = refused.value.diagnostics
    assert problem.code == "io/too-large" and "YAML values" in problem.message


def test_huge_integer_is_a_diagnostic() -> None:
    problem = _one(HEAD + "mechanism:\n  repeat: {count: " + "9" * 5000
                   + ", mechanism: {laplace: {scale: 1}}}\n")
    assert problem.code == "yaml/invalid-scalar"
    assert problem.path == "mechanism.repeat.count"


def test_unsafe_tags_construct_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    problems = _problems(HEAD.replace("title: t", f'title: !!python/object/apply:os.system '
                                      f'["touch {marker}"]')
                         + "mechanism: {laplace: {scale: 1}}\n")
    assert [p.code for p in problems] == ["yaml/unsupported-tag"]
    assert not marker.exists()


@pytest.mark.parametrize(("text", "code"), [
    ("", "spec/empty"),
    ("# only a comment\n", "spec/empty"),
    ("---\n", "spec/empty"),
    ("just a string\n", "spec/not-a-mapping"),
    ("42\n", "spec/not-a-mapping"),
    ("a: 1\n---\nb: 2\n", "yaml/multiple-documents"),
    ("a: [1, 2\n", "yaml/syntax"),
    ("a: 1\n\tb: 2\n", "yaml/tab"),
    ("a: 1\na: 2\n", "yaml/duplicate-key"),
    ("? [a, b]\n: 1\n", "yaml/complex-key"),
    ("a: !!set {x}\n", "yaml/unsupported-tag"),
    ("a: \x00\n", "yaml/invalid-character"),
    ("a: 'unclosed\n", "yaml/syntax"),
    ("a: b: c\n", "yaml/syntax"),
    ("%YAML 9.9\n--- {}\n", "yaml/syntax"),
])
def test_sloppy_yaml_gets_a_diagnostic(text: str, code: str) -> None:
    problems = _problems(text)
    assert code in [p.code for p in problems], problems
    assert all(p.line >= 1 and p.column >= 1 for p in problems)


# --- printers ---------------------------------------------------------------------


def test_github_annotation_escapes() -> None:
    problem = Diagnostic("a,b:c.yaml", 3, 4, "x.y", "100% bad\nreally", "spec/conflict")
    assert format_github_line(problem) == (
        "::error file=a%2Cb%3Ac.yaml,line=3,col=4,title=spec/conflict::x.y: 100%25 bad%0Areally")


def test_json_format_is_stable() -> None:
    problem = Diagnostic("f.yaml", 1, 2, "title", "must not be empty", "spec/invalid-value")
    assert json.loads(format_json([problem])) == [{
        "file": "f.yaml", "line": 1, "column": 2, "path": "title",
        "message": "must not be empty", "code": "spec/invalid-value", "severity": "error"}]


def test_gcc_line_without_a_path() -> None:
    problem = Diagnostic("f.yaml", 1, 1, "", "no such file", "io/not-found")
    assert format_gcc_line(problem) == "f.yaml:1:1: error: no such file [io/not-found]"


def test_a_batch_larger_than_the_dataset_is_one_error_even_with_epochs() -> None:
    """Built in Python (no loader to merge lines), the rule still fires once."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as caught:
        Spec.model_validate({
            "privspec": 1, "title": "t", "unit": "one example", "neighbouring": "add-or-remove",
            "mechanism": {"dpsgd": {"noise_multiplier": 1.0, "batch_size": 600,
                                    "dataset_size": 500, "epochs": 2}}})
    assert [e["loc"][-1] for e in caught.value.errors()] == ["batch_size"]


@pytest.mark.parametrize(("escaped", "code_point"), [
    ("\\u0000", "U+0000"), ("\\u202e", "U+202E"), ("\\e", "U+001B"), ("\\u2066", "U+2066")])
def test_hidden_characters_in_text_are_refused_after_their_escapes(
        escaped: str, code_point: str) -> None:
    """A NUL or a right-to-left override written as an escape passed the file's character
    check and reached every report (Trojan Source); tab and newline stay allowed."""
    text = ("privspec: 1\ntitle: \"a " + escaped + " b\"\nunit: one example\n"
            "neighbouring: add-or-remove\nmechanism: {gaussian: {sigma: 1}}\n")
    (problem,) = _problems(text)
    assert (problem.line, problem.column, problem.path) == (2, 8, "title")
    assert code_point in problem.message
    load_spec_text(text.replace(escaped, "\\t tab \\n line é"), "s.yaml")


def test_the_version_is_the_number_1_not_true() -> None:
    for version in ("true", "1.0"):
        (problem,) = _problems(HEAD.replace("privspec: 1", f"privspec: {version}")
                               + "mechanism: {gaussian: {sigma: 1}}\n")
        assert problem.path == "privspec" and "must be 1" in problem.message


def test_python_data_deeper_than_a_file_may_be_is_refused_as_such() -> None:
    """``spec_from_data`` (``privspec.evaluate(dict)``) of 5,000 nested repeats: the file's
    depth limit, not a RecursionError."""
    from privspec.spec.loader import spec_from_data

    mechanism: dict[str, object] = {"gaussian": {"sigma": 1}}
    for _ in range(5000):
        mechanism = {"repeat": {"count": 2, "mechanism": mechanism}}
    with pytest.raises(SpecError) as caught:
        spec_from_data({"privspec": 1, "title": "t", "unit": "u",
                        "neighbouring": "add-or-remove", "mechanism": mechanism})
    (problem,) = caught.value.diagnostics
    assert f"nested more than {MAX_DEPTH}" in problem.message


def test_a_key_with_a_hidden_character_is_refused_without_echoing_it() -> None:
    (problem,) = _problems(HEAD + '"ti\\u202etle": x\nmechanism: {gaussian: {sigma: 1}}\n')
    assert "U+202E" in problem.message and "\u202e" not in problem.message


def test_a_code_link_that_is_not_a_web_address_says_so_in_plain_words() -> None:
    (problem,) = _problems(HEAD + "mechanism: {gaussian: {sigma: 1}}\n"
                           "scope: {code: 'ftp://x y'}\n")
    assert problem.path == "scope.code"
    assert problem.message.startswith("must be a web address starting http:// or https://")
