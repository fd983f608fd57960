"""The mechanism in plain words, so that a privacy claim cannot be quoted out of context.

No numerical imports: parameters are echoed as the spec gives them (they are
inputs, not privacy claims, so they are not rounded in either direction).
"""

from __future__ import annotations

from typing import Any

from privspec.report.formatting import fmt_given
from privspec.report.model import MechanismSummary, StageSummary
from privspec.spec import models as s
from privspec.spec.kinds import KINDS


def _num(value: float) -> str:
    """A parameter as written: integers with thousands separators, others with 6 digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}"


class _Words:
    """``privspec.spec.kind.Words``: how kinds write their parameters in a report."""

    def num(self, value: float) -> str:
        return _num(value)

    def given(self, value: float) -> str:
        return fmt_given(value)

    def rate(self, block: Any, records: str = "records") -> str:
        if block.batch_size is not None and block.dataset_size is not None:
            return (f"expected batch {_num(block.batch_size)} of {_num(block.dataset_size)} "
                    f"{records} (rate {block.rate():.3g})")
        return f"rate {_num(block.rate())}"

    def of(self, node: Any) -> str:
        return describe(node)


_WORDS = _Words()


def describe(node: s._Node) -> str:
    """One phrase describing ``node`` (its kind's ``describe``, recursively)."""
    return KINDS[node.kind].describe(node.block, _WORDS)


def summarize_mechanism(spec: s.Spec, stage_mus: list[float | None] | None = None
                        ) -> MechanismSummary:
    """The report's restatement of the mechanism: a summary and the top-level stages,
    with each stage's own μ when the evaluator computed it."""
    root = spec.mechanism
    composed: list[s.Stage] | None = root.block if KINDS[root.kind].nesting == "stages" else None
    if composed is not None:
        mus = stage_mus if stage_mus is not None else [None] * len(composed)
        stages = [StageSummary(name=st.name, description=describe(st.mechanism),
                               repeat=st.repeat, mu=mu)
                  for st, mu in zip(composed, mus, strict=True)]
    else:
        stages = [StageSummary(name=None, description=describe(root), repeat=1)]
    if composed is not None and all(st.name for st in composed):
        # The stages are listed one by one beside the summary: name them only.
        names = ", ".join(
            f"{st.name}" + (f" (×{_num(st.repeat)})" if st.repeat > 1 else "")
            for st in composed)
        summary = f"{len(composed)} stages on the same data: {names}."
    else:
        summary = f"{describe(root)}."
    return MechanismSummary(kind=root.kind, noun=noun_for(spec),
                            summary=summary[0].upper() + summary[1:], stages=stages)


def noun_for(spec: s.Spec) -> str:
    """What the report calls the mechanism: its kind's noun ('training run', 'survey'),
    'pipeline' for stages that include a training run, or 'release'."""
    root = KINDS[spec.mechanism.kind]
    nouns = {KINDS[kind].noun for _, kind, _ in s.walk(spec.mechanism)}
    if root.nesting == "stages" and "training run" in nouns:
        return "pipeline"
    return root.noun or "release"
