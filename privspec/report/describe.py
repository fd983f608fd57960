"""The mechanism in plain words, so that a privacy claim cannot be quoted out of context.

No numerical imports: parameters are echoed as the spec gives them (they are
inputs, not privacy claims, so they are not rounded in either direction).
"""

from __future__ import annotations

from privspec.report.formatting import fmt_given
from privspec.report.model import MechanismSummary, StageSummary
from privspec.spec import models as s


def _num(value: float) -> str:
    """A parameter as written: integers with thousands separators, others with 6 digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}"


def _rate(block: s._SamplingRate, records: str = "records") -> str:
    if block.batch_size is not None and block.dataset_size is not None:
        return (f"expected batch {_num(block.batch_size)} of {_num(block.dataset_size)} "
                f"{records} (rate {block.rate():.3g})")
    return f"rate {_num(block.rate())}"


def describe(node: s._Node) -> str:
    """One phrase describing ``node`` (recursively)."""
    b = node.block
    if isinstance(b, s.Gaussian):
        if b.noise_multiplier is not None:
            return f"Gaussian noise with noise multiplier {_num(b.noise_multiplier)}"
        assert b.sigma is not None
        return f"Gaussian noise with σ = {_num(b.sigma)} (L2 sensitivity {_num(b.sensitivity or 1)})"
    if isinstance(b, s.Laplace):
        scale = b.scale if b.scale is not None else b.sensitivity / (b.epsilon or 1)
        return (f"Laplace noise of scale {_num(scale)} (L1 sensitivity {_num(b.sensitivity)}, "
                f"ε = {_num(b.sensitivity / scale)})")
    if isinstance(b, s.DiscreteGaussian):
        if b.rho is not None:
            return (f"discrete Gaussian noise for ρ = {_num(b.rho)} "
                    f"(sensitivity {b.sensitivity})")
        assert b.sigma is not None
        return f"discrete Gaussian noise with σ = {_num(b.sigma)} (sensitivity {b.sensitivity})"
    if isinstance(b, s.DiscreteLaplace):
        if b.scale is not None:
            return f"discrete Laplace noise of scale {_num(b.scale)} (sensitivity {b.sensitivity})"
        return f"discrete Laplace noise for ε = {_num(b.epsilon or 0)} (sensitivity {b.sensitivity})"
    if isinstance(b, s.RandomizedResponse):
        how = (f"ε = {_num(b.epsilon)}" if b.epsilon is not None
               else f"answers flipped with probability {_num(b.flip_probability or 0)}")
        return f"randomized response over {b.categories} answers ({how})"
    if isinstance(b, s.PureDP):
        return f"a mechanism known only to be ε-DP with ε = {_num(b.epsilon)}"
    if isinstance(b, s.ApproximateDP):
        return (f"a mechanism known only to be (ε, δ)-DP with ε = {_num(b.epsilon)}, "
                f"δ = {fmt_given(b.delta)}")
    if isinstance(b, s.PoissonSampled):
        return f"{describe(b.mechanism)}, on a Poisson-sampled batch ({_rate(b)})"
    if isinstance(b, s.FixedSizeSampled):
        return (f"{describe(b.mechanism)}, on a batch of {_num(b.batch_size)} of "
                f"{_num(b.dataset_size)} records sampled without replacement")
    if isinstance(b, s.Repeat):
        inner = describe(b.mechanism)
        if b.epochs is not None:
            return f"{inner}, for {_num(b.epochs)} epochs ({_num(b.times())} runs)"
        return f"{inner}, run {_num(b.times())} times"
    if isinstance(b, s.DPSGD):
        return (f"DP-SGD: {_num(b.times())} steps"
                + (f" ({_num(b.epochs)} epochs)" if b.epochs is not None else "")
                + f", Poisson sampling with {_rate(b, 'examples')}, "
                f"noise multiplier {_num(b.noise_multiplier)}")
    if isinstance(b, s.ComposeNode):
        parts = [
            (f"{stage.name}: " if stage.name else "")
            + describe(stage.mechanism)
            + (f" (×{_num(stage.repeat)})" if stage.repeat > 1 else "")
            for stage in b.compose
        ]
        return f"{len(parts)} stages on the same data: " + "; ".join(parts)
    raise TypeError(f"no description for {type(b).__name__}")  # pragma: no cover


def summarize_mechanism(spec: s.Spec, stage_mus: list[float | None] | None = None
                        ) -> MechanismSummary:
    """The report's restatement of the mechanism: a summary and the top-level stages,
    with each stage's own μ when the evaluator computed it."""
    root = spec.mechanism
    block = root.block
    if isinstance(block, s.ComposeNode):
        mus = stage_mus if stage_mus is not None else [None] * len(block.compose)
        stages = [StageSummary(name=st.name, description=describe(st.mechanism),
                               repeat=st.repeat, mu=mu)
                  for st, mu in zip(block.compose, mus, strict=True)]
    else:
        stages = [StageSummary(name=None, description=describe(root), repeat=1)]
    if isinstance(block, s.ComposeNode) and all(st.name for st in block.compose):
        # The stages are listed one by one beside the summary: name them only.
        names = ", ".join(
            f"{st.name}" + (f" (×{_num(st.repeat)})" if st.repeat > 1 else "")
            for st in block.compose)
        summary = f"{len(block.compose)} stages on the same data: {names}."
    else:
        summary = f"{describe(root)}."
    return MechanismSummary(kind=root.kind, noun=noun_for(spec),
                            summary=summary[0].upper() + summary[1:], stages=stages)


def noun_for(spec: s.Spec) -> str:
    """What the report calls the mechanism: 'training run', 'pipeline', 'survey' or 'release'."""
    kinds = {kind for _, kind, _ in s.walk(spec.mechanism)}
    if spec.mechanism.kind == "dpsgd":
        return "training run"
    if spec.mechanism.kind == "compose" and "dpsgd" in kinds:
        return "pipeline"
    if spec.mechanism.kind == "randomized_response":
        return "survey"
    return "release"
