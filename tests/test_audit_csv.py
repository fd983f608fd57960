"""CSV score files: numpy's parser (the fast path) reads exactly what the row-by-row
reading accepts, bit for bit, and leaves everything else to it, which locates every bad
cell."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privspec.spec.diagnostics import SpecError
from privspec.workflows import audit
from privspec.workflows.audit import Columns

FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SCORE_CELLS: dict[str, Callable[[float], str]] = {
    "repr": repr, "17g": lambda x: f"{x:.17g}", "e": lambda x: f"{x:e}",
    "spaced": lambda x: f" {x!r}\t", "quoted": lambda x: f'"{x!r}"',
    "upper": lambda x: repr(x).upper(), "plus": lambda x: f"+{x!r}" if x >= 0 else repr(x)}
#: Membership cells: the row-by-row reading takes 0 and 1, with spaces around them.
LABEL_CELLS = {1: ["1", "1", "1", " 1", "1 ", "+1", "01", "1.0", '"1"'],
               0: ["0", "0", "0", " 0", "0 ", "-0", "00", "+0", '"0"']}


@st.composite
def score_files(draw: st.DrawFn) -> str:
    """A CSV score file in one of the shapes people write, with one odd cell at most."""
    rows = draw(st.lists(st.tuples(FLOATS, st.sampled_from([0, 1])), min_size=20,
                         max_size=60))
    rows += [(x, label) for x in (0.5, -0.25) for label in (0, 1)] * 5
    style = draw(st.sampled_from(sorted(SCORE_CELLS)))
    odd = draw(st.sampled_from(["none", "label", "score"]))
    at = draw(st.integers(0, len(rows) - 1))
    order = draw(st.sampled_from(["score,member", "member,score", "id,score,member"]))
    quoted = draw(st.booleans())
    lines = [",".join(f'"{name}"' for name in order.split(",")) if quoted else order]
    for i, (x, label) in enumerate(rows):
        score = SCORE_CELLS[style if odd == "score" and i == at else "repr"](x)
        member = (draw(st.sampled_from(LABEL_CELLS[label])) if odd == "label" and i == at
                  else str(label))
        cells = {"score": score, "member": member, "id": str(i)}
        lines.append(",".join(cells[name] for name in order.split(",")))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + draw(st.sampled_from(["", newline]))


def _outcome(text: str) -> tuple[bytes, bytes] | str:
    """The scores read from ``text`` (their bytes), or the problems' messages."""
    try:
        members, non_members = audit._from_csv("s.csv", text, Columns())
    except SpecError as error:
        return "\n".join(str(d) for d in error.diagnostics)
    return members.tobytes(), non_members.tobytes()


@settings(max_examples=300)
@given(score_files())
def test_numpys_parser_reads_what_the_rows_read(text: str) -> None:
    fast = _outcome(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(audit, "_plain_csv", lambda *args: None)
        assert fast == _outcome(text)


def test_plain_files_take_numpys_parser() -> None:
    values = np.random.default_rng(0).normal(size=200)
    lines = ["score,member", *(f"{x!r},{i % 2}" for i, x in enumerate(values.tolist()))]
    for newline in ("\n", "\r\n"):
        for end in ("", newline):
            plain = audit._plain_csv(newline.join(lines) + end, 2, 0, 1)
            assert plain is not None
            assert plain[0].tobytes() == values[1::2].tobytes()
            assert plain[1].tobytes() == values[0::2].tobytes()


@pytest.mark.parametrize("label", ["+1", "01", "-0", "00"])
def test_a_label_other_than_0_or_1_is_refused_however_plain_the_file(label: str) -> None:
    lines = ["score,member", *(f"{i / 10},{i % 2}" for i in range(40))]
    lines[3] = f"0.5,{label}"
    with pytest.raises(SpecError) as raised:
        audit._from_csv("s.csv", "\n".join(lines) + "\n", Columns())
    (problem,) = raised.value.diagnostics
    assert (problem.line, problem.column, problem.path) == (4, 5, "member")
    assert problem.message == f"{label!r}: membership is 1 (in) or 0 (out)"
