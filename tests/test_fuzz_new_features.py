"""Hostile input to the recent features: whatever a stranger's pull request holds, the
result is a report or one located line per problem (exit 2), never a traceback, a raw
Python message or a partial output file.

Mutated specs of each new kind (records_per_unit, unit_level, matrix_factorization's
strategies and participations, random allocation, the audit: block) go through
``privspec validate`` and, when valid, ``privspec render``; score files, strategy files
and ``sweep --vary`` values go to their readers.  Every property runs a fixed number of
derandomized examples (a few seconds each on two shared cores).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import math
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privspec.cli import main
from privspec.spec.diagnostics import SpecError
from privspec.workflows import audit
from privspec.workflows.sweep import SweepError, parse_axes

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])

_HEAD = {"privspec": 1, "title": "t", "unit": "one user", "neighbouring": "add-or-remove"}
_SCORES = "score,member\n" + "".join(f"{0.01 * i},{i % 2}\n" for i in range(40))
_SCORES_SHA = hashlib.sha256(_SCORES.encode()).hexdigest()
_STRATEGY = "1,0,0\n0.5,1,0\n0.25,0.5,1\n"
_STRATEGY_SHA = hashlib.sha256(_STRATEGY.encode()).hexdigest()

BASES: list[dict[str, Any]] = [
    {**_HEAD, "records_per_unit": 8, "mechanism": {"dpsgd": {
        "noise_multiplier": 2.0, "batch_size": 1000, "dataset_size": 100000, "steps": 100}}},
    {**_HEAD, "unit_level": True, "mechanism": {"matrix_factorization": {
        "strategy": {"tree": {"online": True}}, "steps": 2000, "noise_multiplier": 7.0,
        "participation": {"separated": {"times": 6, "min_separation": 314}}}}},
    {**_HEAD, "mechanism": {"matrix_factorization": {
        "strategy": {"banded_toeplitz": {"coefficients": [1.0, 0.5, 0.25]}}, "steps": 100,
        "noise_multiplier": 1.0, "participation": {"cyclic_poisson": {"block": 10,
                                                                      "sampling_rate": 0.1}}}}},
    {**_HEAD, "mechanism": {"matrix_factorization": {
        "strategy": {"matrix": {"file": "strategy.csv", "sha256": _STRATEGY_SHA}}, "steps": 3,
        "noise_multiplier": 1.0, "participation": {"once": {}}}}},
    {**_HEAD, "mechanism": {"dpsgd": {"sampling": "random-allocation", "noise_multiplier": 1.0,
                                      "batch_size": 10, "dataset_size": 100, "epochs": 1}}},
    {**_HEAD, "mechanism": {"gaussian": {"sigma": 1.0, "sensitivity": 1.0}},
     "audit": {"scores": "scores.csv", "sha256": _SCORES_SHA, "one_run": True}},
]

HOSTILE: list[Any] = [
    None, True, 0, -1, 2**63, 10**400, 1e308, float("nan"), float("inf"), -float("inf"),
    1e-320, "", "x", "1", "\x00\x1b[31m\u202e", "é" * 300, [], [1.0] * 3, {}, {"a": 1},
    [[[[[[[[]]]]]]]], "../../etc/passwd", "/etc/passwd", "a" * 2000, 10**7, 3.5, "nan",
]
EXTREME_INTS = [1, 2, 3, 10**3, 10**6, 10**7, 10**9, 2**31, 10**12]
EXTREME_FLOATS = [1e-300, 1e-12, 1e-6, 0.5, 0.999999, 1.0, 1e3, 1e6, 1e300]
UNKNOWN_KEYS = ["bogus", "\x07", "sigma", "steps", "times", "ε"]

#: YAML that is not plain data: tags, anchors and aliases, a billion laughs, duplicates.
YAML_SNIPPETS = [
    "!!python/object/apply:os.system ['echo hi']", "!!binary aGVsbG8=", "!!set {a, b}",
    "!!timestamp 2001-12-14", "&x 1", "*x", "[" * 200, "{" * 100 + "}" * 100, "!custom 5",
    "0o17", "0x1F", "1_000", ".NaN", "-.inf", "~", "yes",
]
BOMB = "".join(f"{name}: &{name} [{', '.join(['*' + prev] * 9 if prev else ['x'] * 9)}]\n"
               for prev, name in zip(["", *"abcdefg"], "abcdefgh", strict=True))


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*path, index))
    return out


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid spec of a new feature with one to three of its values, keys or
    sub-trees replaced by hostile ones."""
    data: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)[1:]))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        value = parent[path[-1]]
        action = draw(st.integers(0, 3))
        if action == 0 and isinstance(value, int | float) and not isinstance(value, bool):
            parent[path[-1]] = draw(st.sampled_from(
                EXTREME_INTS if isinstance(value, int) else EXTREME_FLOATS))
        elif action <= 1:
            parent[path[-1]] = draw(st.sampled_from(HOSTILE))
        elif action == 2 and isinstance(parent, dict):
            parent[draw(st.sampled_from(UNKNOWN_KEYS))] = draw(st.sampled_from(HOSTILE))
        elif isinstance(parent, dict):
            del parent[path[-1]]
    return data


@st.composite
def mutated_texts(draw: st.DrawFn) -> str:
    """A spec's YAML text with a line duplicated (a duplicate key), a value replaced by
    a tag, anchor or alias, or a billion-laughs bomb in front."""
    text = yaml.safe_dump(draw(st.sampled_from(BASES)), sort_keys=False)
    lines = text.splitlines()
    at = draw(st.integers(0, len(lines) - 1))
    action = draw(st.integers(0, 2))
    if action == 0:
        lines.insert(at, lines[at])
    elif action == 1 and ":" in lines[at]:
        lines[at] = lines[at].partition(":")[0] + ": " + draw(st.sampled_from(YAML_SNIPPETS))
    else:
        return BOMB + text
    return "\n".join(lines) + "\n"


def _run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def _assert_located(code: int, err: str, output: Path | None = None) -> None:
    """Exit 0, or exit 2 with every line a located diagnostic (or the count of them)."""
    assert "Traceback" not in err and "bug in privspec" not in err, err
    assert code in (0, 2), err
    if code == 2:
        lines = err.strip().splitlines()
        assert lines, "exit 2 says why"
        for line in lines:
            assert line.startswith("found ") or (
                ": error: " in line and line.rstrip().endswith("]")), line
        assert output is None or not output.exists(), "no partial output file"


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="privspec-fuzz-"))
    (folder / "scores.csv").write_text(_SCORES, encoding="utf-8")
    (folder / "strategy.csv").write_text(_STRATEGY, encoding="utf-8")
    return folder


def _validate_then_render(folder: Path, text: str) -> None:
    spec = folder / "fuzz.privspec.yaml"
    spec.write_text(text, encoding="utf-8")
    code, err = _run("validate", str(spec))
    _assert_located(code, err)
    if code == 0:
        output = folder / "fuzz.json"
        output.unlink(missing_ok=True)
        code, err = _run("--no-cache", "--quiet", "--time-budget", "2", "render", str(spec),
                         "-f", "json", "-o", str(output))
        _assert_located(code, err, output)


@FUZZ
@given(mutated_specs())
def test_mutated_specs_of_the_new_kinds_are_reported_or_refused_by_located_lines(
        data: dict[str, Any]) -> None:
    try:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:  # pragma: no cover - every value drawn is representable
        return
    _validate_then_render(_folder(), text)


@FUZZ
@given(mutated_texts())
def test_yaml_tags_aliases_bombs_and_duplicate_keys_are_located(text: str) -> None:
    _validate_then_render(_folder(), text)


# -- score files ---------------------------------------------------------------------------

def _npz(**arrays: Any) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


_NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30),
                     st.sampled_from(["9" * 5000, "1e400", "-0", "0x1p3", "", "nan", "true"]))


@st.composite
def score_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A score file as CSV, JSON or NPZ: well formed or not, finite or not."""
    kind = draw(st.sampled_from(["csv", "json", "npz", "bytes"]))
    values = draw(st.lists(_NUMBERS, max_size=40))
    labels = draw(st.lists(st.sampled_from(["0", "1", "2", "1.0", "x", ""]),
                           min_size=len(values), max_size=len(values)))
    if kind == "csv":
        header = draw(st.sampled_from(["score,member", "member,score", '"score","member"',
                                       "score", ""]))
        rows = [f"{value},{label}" for value, label in zip(values, labels, strict=True)]
        return "scores.csv", (header + "\n" + "\n".join(rows)).encode()
    if kind == "json":
        members = ", ".join(str(v) for v in values[::2])
        others = ", ".join(str(v) for v in values[1::2])
        return "scores.json", draw(st.sampled_from([
            f'{{"in": [{members}], "out": [{others}]}}', f'{{"in": [{members}]}}',
            "[" * draw(st.integers(1, 100_000)), f'{{"score": [{members}], "member": 1}}']
        )).encode()
    if kind == "npz":
        shape = draw(st.sampled_from([(20,), (5, 4), (20, 1), (0,), ()]))
        dtype = draw(st.sampled_from(["<f8", "<f4", "<i8", "|b1", "<U2", "<c16"]))
        array = np.zeros(shape, dtype=dtype)
        return "scores.npz", _npz(**{"in": array, "out": np.arange(20.0)})
    return draw(st.sampled_from(["scores.csv", "scores.json", "scores.npz"])), draw(
        st.binary(max_size=300))


@FUZZ
@given(score_files())
def test_score_files_give_scores_or_located_problems(file: tuple[str, bytes]) -> None:
    name, data = file
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's warnings reach users as raw messages
        try:
            scores = audit.parsed_scores(name, data, "0" * 64, audit.Columns())
        except SpecError as error:
            assert error.diagnostics
            for problem in error.diagnostics:
                assert problem.line >= 1 and problem.column >= 1 and "\n" not in problem.message
            return
    for values in (scores.members, scores.non_members):
        assert values.ndim == 1 and np.isfinite(values).all()


def _problem(name: str, data: bytes) -> str:
    with pytest.raises(SpecError) as caught:
        audit.parsed_scores(name, data, "0" * 64, audit.Columns())
    return "\n".join(f"{d.line}:{d.column}: {d.path}: {d.message} [{d.code}]"
                     for d in caught.value.diagnostics)


def test_json_nested_too_deeply_or_with_a_5000_digit_number_is_located() -> None:
    """Both were RecursionError and ValueError tracebacks."""
    assert _problem("s.json", b'{"in": ' + b"[" * 100_000) == (
        "1:1: : invalid JSON: lists or objects nested too deeply (a score file's lists hold "
        "numbers) [scores/invalid]")
    assert _problem("s.json", b"[" * 100_000) == (
        "1:1: : a JSON score file is an object with lists 'in' and 'out', or 'score' and "
        "'member' [scores/invalid]")
    huge = '{"in": [' + ", ".join(["9" * 5000] * 12) + '], "out": [' + ", ".join(["1"] * 12) + "]}"
    assert _problem("s.json", huge.encode()).splitlines()[0] == (
        "1:9: in[0]: a score is a finite number (no NaN, infinity, string or boolean) "
        "[scores/invalid]")
    ints = json.dumps({"in": list(range(12)), "out": list(range(12))}).encode()
    assert audit.parsed_scores("s.json", ints, "0" * 64, audit.Columns()).members.size == 12


def test_a_header_alone_warns_nothing() -> None:
    """numpy's 'loadtxt: input contained no data' UserWarning reached stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "0 scores of members" in _problem("s.csv", b"score,member\n")


def test_npz_matrices_are_refused_and_large_arrays_before_they_unpack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5 × 4 array was read as 20 scores; an array of any size was unpacked whole."""
    matrix = _npz(**{"in": np.zeros((5, 4)), "out": np.arange(20.0)})
    assert _problem("s.npz", matrix) == (
        "1:1: in: a list of scores (a 1-D array), not an array of shape (5, 4) "
        "[scores/invalid]")
    column = _npz(**{"in": np.arange(20.0).reshape(20, 1), "out": np.arange(20.0)})
    assert audit.parsed_scores("s.npz", column, "0" * 64, audit.Columns()).members.size == 20
    monkeypatch.setattr(audit, "MAX_SCORES", 100)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("in", "out"):
            member = io.BytesIO()
            np.save(member, np.zeros(100_000))
            archive.writestr(f"{name}.npy", member.getvalue())
    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__", _never_unpacked)
    assert _problem("s.npz", buffer.getvalue()) == (
        "1:1: in: unpacks to 800,128 bytes, more than 100 scores [io/too-large]")


def _never_unpacked(*_: object) -> None:
    raise AssertionError("unpacked before its size was checked")


# -- sweep --vary --------------------------------------------------------------------------

_SWEEP_DATA = {**_HEAD, "mechanism": {"dpsgd": {"noise_multiplier": 1.0, "sampling_rate": 0.01,
                                                 "steps": 100}}}
_FIELDS = ["mechanism.dpsgd.steps", "mechanism.dpsgd.noise_multiplier", "steps",
           "sampling_rate", "mechanism.dpsgd", "mechanism[0].x", "", "\x00"]
_NUMBER_TEXTS = ["1", "-1", "0", "1e308", "-1.7976931348623157e308", "1.7976931348623157e308",
                 "1e400", "5e-324", "nan", "inf", "1_0", "٣", "", " ", "0x1", "4.5", "9" * 400]


@st.composite
def vary_options(draw: st.DrawFn) -> str:
    field = draw(st.sampled_from(_FIELDS))
    number = st.sampled_from(_NUMBER_TEXTS)
    values = draw(st.one_of(
        st.lists(number, min_size=1, max_size=4).map(",".join),
        st.builds(lambda scale, a, b, n: f"{scale}:{a}:{b}:{n}", st.sampled_from(["lin", "log"]),
                  number, number, st.sampled_from(["1", "2", "3", "100000", "100001", "x",
                                                   "9" * 5000])),
        st.text(max_size=20)))
    return f"{field}={values}"


@FUZZ
@given(st.lists(vary_options(), min_size=1, max_size=3))
def test_vary_gives_finite_values_or_says_what_is_allowed(options: list[str]) -> None:
    try:
        axes = parse_axes(copy.deepcopy(_SWEEP_DATA), options)
    except SweepError as error:
        assert str(error) and "\n" not in str(error)
        return
    for axis in axes:
        assert axis.values and all(math.isfinite(value) for value in axis.values)


def test_a_linear_range_across_the_doubles_stays_finite() -> None:
    """STOP − START overflowed to ∞: NaN values, and a ValueError for whole numbers."""
    (steps,) = parse_axes(_SWEEP_DATA, ["mechanism.dpsgd.steps=lin:-1e308:1e308:3"])
    assert steps.values[1] == 0 and steps.values[0] == -steps.values[2] < 0
    (sigma,) = parse_axes(_SWEEP_DATA, [
        "mechanism.dpsgd.noise_multiplier=lin:-1.7976931348623157e308:1.7976931348623157e308:5"])
    assert all(math.isfinite(value) for value in sigma.values) and sigma.values[2] == 0
