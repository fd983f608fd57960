"""Property: whatever goes in, the loader returns a Spec or raises SpecError with
well-formed diagnostics; never another exception, never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privspec.spec.diagnostics import Diagnostic, SpecError, format_gcc_line
from privspec.spec.loader import load_spec, load_spec_text
from privspec.spec.models import MECHANISM_KINDS, Spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_TEXTS = [p.read_text(encoding="utf-8")
                 for p in sorted((ROOT / "examples").glob("*.privspec.yaml"))]
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

TOKENS = [
    "privspec", "title", "unit", "neighbouring", "mechanism", "report", "deltas", "compose",
    "repeat", "name", "sigma", "noise_multiplier", "sampling_rate", "batch_size",
    "dataset_size", "steps", "epochs", "count", "add-or-remove", "replace-one", *MECHANISM_KINDS,
    ":", ": ", "- ", "\n", "\n  ", "\n    ", "\t", "{", "}", "[", "]", ",", "&a ", "*a", "!!str ",
    "!!python/object:os.system ", "? ", "|", ">", "'", '"', "#", "---\n", "...\n", "%YAML 1.2\n",
    "1", "-1.1", "1e-5", "1E6", ".inf", ".nan", "0", "1e999", "~", "null", "true", "yes", "0x1F",
    "9" * 50, '"a\\nb"', "\ufeff", "\x00", "é", "\U0001f600",
]


def _check(outcome: Spec | tuple[Diagnostic, ...]) -> None:
    if isinstance(outcome, Spec):
        return
    assert outcome, "a SpecError must carry at least one diagnostic"
    for problem in outcome:
        assert problem.line >= 1 and problem.column >= 1
        assert problem.message and "/" in problem.code
        assert "\n" not in format_gcc_line(problem)


def _from_text(text: str) -> Spec | tuple[Diagnostic, ...]:
    try:
        return load_spec_text(text, "fuzz.yaml")
    except SpecError as error:
        return error.diagnostics


def _from_bytes(data: bytes) -> Spec | tuple[Diagnostic, ...]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.privspec.yaml"
        path.write_bytes(data)
        try:
            return load_spec(path)
        except SpecError as error:
            return error.diagnostics


@FUZZ
@given(st.binary(max_size=2000))
def test_any_bytes(data: bytes) -> None:
    _check(_from_bytes(data))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80).map("".join))
def test_yaml_like_token_soup(text: str) -> None:
    _check(_from_text(text))


@st.composite
def mutated_examples(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(EXAMPLE_TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        choice = draw(st.integers(0, 2))
        if choice == 0:
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        elif choice == 1:
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        else:
            text = text[:at] + draw(st.text(max_size=5)) + text[at:]
    return text


@FUZZ
@given(mutated_examples())
def test_mutated_examples(text: str) -> None:
    _check(_from_text(text))
    _check(_from_bytes(text.encode("utf-8", errors="surrogatepass")))
