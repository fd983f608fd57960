"""libyaml's parser and PyYAML's own give the reader the same data, positions and problems,
or the same diagnostics: the spec means the same whichever PyYAML is installed."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privspec.spec import yaml_reader
from privspec.spec.diagnostics import SpecError
from privspec.spec.loader import load_spec_text
from privspec.spec.messages import LISTED_PROBLEMS
from privspec.spec.yaml_reader import MAX_NODES, read_text
from tests.test_fuzz_loader import EXAMPLE_TEXTS, FUZZ, TOKENS, mutated_examples

pytestmark = pytest.mark.skipif(yaml_reader.LIBYAML is None, reason="PyYAML without libyaml")

HEAD = "privspec: 1\ntitle: t\nunit: one example\nneighbouring: add-or-remove\n"
#: Texts on which libyaml's events differ from PyYAML's (so PyYAML's parser reads them).
DIFFERING = [
    "k: >#\n", "k: |-#x\n  a\n", "a: {b: , c}\n", "a: [b, {c: }]\n", "a: {b, c: }\n",
    "a: {s?b: 1}\n", "a: 1\tb\n", "a: 'x'", "a:\n  - b", "a: '\ufeffx'\n", "a: b\r\nc: d\r\n",
    "a: [\n", "a: {b: 1, b?: 2\n", "- \n- 1\n", "? \n: 1\n", "a: !!str 1\n", "%YAML 1.1\n---\na: 1\n",
]


def _plain(value: Any) -> Any:
    """The data with NaN made comparable."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return type(value).__name__, value


def _read(text: str) -> Any:
    try:
        data, builder = read_text(text, "f.yaml")
    except SpecError as error:
        return error.diagnostics
    return _plain(data), builder.positions, builder.problems


@pytest.fixture
def pure_python() -> Iterator[None]:
    """A PyYAML without libyaml, for the duration of a test."""
    kept = yaml_reader.LIBYAML
    yaml_reader.LIBYAML = None
    yield
    yaml_reader.LIBYAML = kept


def _same_both_ways(text: str) -> None:
    with_libyaml = _read(text)
    kept, yaml_reader.LIBYAML = yaml_reader.LIBYAML, None
    try:
        assert _read(text) == with_libyaml
    finally:
        yaml_reader.LIBYAML = kept


@pytest.mark.parametrize("text", EXAMPLE_TEXTS + DIFFERING)
def test_examples_and_known_differences_read_the_same(text: str) -> None:
    _same_both_ways(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80).map("".join))
def test_token_soup_reads_the_same(text: str) -> None:
    _same_both_ways(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80).map(lambda tokens: "".join(tokens)
                                                         + "\n"))
def test_token_soup_with_a_final_line_break_reads_the_same(text: str) -> None:
    _same_both_ways(text)


@settings(FUZZ, max_examples=50)
@given(mutated_examples())
def test_mutated_examples_read_the_same(text: str) -> None:
    _same_both_ways(text)


@pytest.mark.parametrize("tail", ["", "# a tab:\t, so PyYAML's parser reads it\n"])
def test_the_largest_list_is_refused_in_one_located_line(tail: str) -> None:
    """The largest spec the caps let through (a list of as many values as are allowed)
    and the smallest they stop are each refused in one line that says where, by either
    parser."""
    for extra, line, message in ((20, 6, "unknown key 'extra'"),
                                 (-1, 6, f"more than {MAX_NODES:,} YAML values")):
        values = ",".join(["0"] * (MAX_NODES - extra))
        with pytest.raises(SpecError) as refused:
            load_spec_text(HEAD + "mechanism: {laplace: {scale: 1}}\nextra: [" + values
                           + "]\n" + tail)
        (problem,) = refused.value.diagnostics
        assert problem.line == line and message in problem.message


def test_many_problems_are_listed_in_a_hundred_lines_and_one_more(pure_python: None) -> None:
    """Thousands of unknown, duplicated or hidden-character keys are refused with the
    first ``LISTED_PROBLEMS`` in the file and one line saying how many more."""
    keys = "".join(f"k{i}: 0\nk{i}: 0\nextra{i}: '\\x01'\n" for i in range(1_000))
    with pytest.raises(SpecError) as refused:
        load_spec_text(HEAD + "mechanism: {laplace: {scale: 1}}\n" + keys)
    problems = refused.value.diagnostics
    assert len(problems) == LISTED_PROBLEMS + 1
    assert [problem.line for problem in problems[:3]] == [7, 8, 10]
    assert problems[-1].line == problems[-2].line
    assert problems[-1].message.startswith("… and up to 1,900 more problems")


def test_a_misspelt_key_is_one_problem_among_many() -> None:
    """A misspelling is still reported once (as unknown, with the suggestion), not also
    as a missing key, when it is one of many unknown keys."""
    keys = "".join(f"k{i}: 0\n" for i in range(500))
    with pytest.raises(SpecError) as refused:
        load_spec_text("privspec: 1\ntitle: t\nuint: one example\nneighbouring: "
                       "add-or-remove\nmechanism: {laplace: {scale: 1}}\n" + keys)
    problems = refused.value.diagnostics
    assert "did you mean 'unit'?" in problems[0].message
    assert all(problem.code != "spec/missing-key" for problem in problems)
