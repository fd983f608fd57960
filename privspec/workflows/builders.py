"""Specs built in Python, for training scripts and notebooks.

At the end of a DP-SGD training run, without Opacus or any accountant of its own::

    import privspec
    from privspec.report.render import render

    spec = privspec.spec_from_dpsgd(
        noise_multiplier=1.1, batch_size=256, dataset_size=60_000, steps=10_000,
        title="MNIST classifier", unit="one training example")
    report = privspec.evaluate(spec)
    Path("privacy.md").write_text(render(report, "markdown"), encoding="utf-8")
    Path("train.privspec.yaml").write_text(privspec.spec_to_yaml(spec), encoding="utf-8")

Specs are validated exactly as a file is: a mistake raises
:class:`privspec.spec.diagnostics.SpecError` whose diagnostics name the field
(``mechanism.dpsgd.noise_multiplier: must be greater than 0``).  This module
imports neither numpy nor dp-accounting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privspec.spec.models import Spec

#: The filename diagnostics give for a spec built by :func:`spec_from_dpsgd`.
BUILT_SPEC_NAME = "<spec_from_dpsgd>"


def spec_from_dpsgd(
    *,
    noise_multiplier: float,
    title: str,
    unit: str = "one training example",
    steps: int | None = None,
    epochs: float | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    sampling_rate: float | None = None,
    neighbouring: str = "add-or-remove",
    sampling: str = "poisson",
    partial_batch: str | None = None,
    description: str | None = None,
    deltas: Sequence[float] | None = None,
    discretization: float | None = None,
    budget: dict[str, Any] | None = None,
) -> Spec:
    """A spec of DP-SGD: ``steps`` (or ``epochs``) Poisson-subsampled Gaussian steps.

    Give the sampling as ``batch_size`` (expected batch size) with ``dataset_size``,
    or as ``sampling_rate``, and how batches were drawn as ``sampling`` (stated in the
    spec either way), and for ``sampling="shuffled"`` whether each epoch's partial last
    batch was ``partial_batch="kept"`` (PyTorch's default) or ``"dropped"``; the length
    as ``steps`` or ``epochs``. ``deltas`` are
    the δ's of the report's ε(δ) (default 1e-5, 1e-6, 1e-9), ``discretization`` the
    accountant's interval (default 1e-4), ``budget`` a ``budget:`` section
    (``{"max_mu": 1.0}``) for ``privspec check``. Raises ``SpecError`` for invalid
    values, with the same diagnostics as a spec file.
    """
    dpsgd: dict[str, Any] = {"noise_multiplier": noise_multiplier, "sampling": sampling}
    for name, value in (("sampling_rate", sampling_rate), ("batch_size", batch_size),
                        ("dataset_size", dataset_size), ("steps", steps), ("epochs", epochs),
                        ("partial_batch", partial_batch)):
        if value is not None:
            dpsgd[name] = value
    data: dict[str, Any] = {"privspec": 1, "title": title}
    if description is not None:
        data["description"] = description
    data.update(unit=unit, neighbouring=neighbouring, mechanism={"dpsgd": dpsgd})
    if deltas is not None:
        data["report"] = {"deltas": list(deltas)}
    if discretization is not None:
        data["accounting"] = {"discretization": discretization}
    if budget is not None:
        data["budget"] = dict(budget)
    from privspec.spec.loader import spec_from_data

    return spec_from_data(data, BUILT_SPEC_NAME)


def spec_to_yaml(spec: Spec, *, comment: str | None = None) -> str:
    """``spec`` as the text of a ``*.privspec.yaml`` file (defaults left out, budget kept),
    which ``privspec.spec.loader.load_spec_text`` reads back as an equal spec (checked).
    Each line of ``comment`` becomes a comment line; ValueError when it holds a control
    or bidirectional-override character."""
    data: dict[str, Any] = _stating_sampling(spec.model_dump(mode="json", exclude_defaults=True))
    if spec.budget is not None:  # excluded from dumps (a policy, not part of the report); last
        data["budget"] = spec.budget.model_dump(mode="json", exclude_defaults=True)
    return spec_file_text(data, (comment or "").splitlines(), BUILT_SPEC_NAME, spec)


#: What a one-line YAML comment must not hold: a line break (which would end it and
#: start live YAML), another control character, or a bidirectional override that would
#: make it display other than it reads.
_UNSAFE_IN_COMMENT = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def unsafe_character(text: str) -> str | None:
    """The first character of ``text`` a spec file's comment (or a name written in one)
    must not hold, as ``U+XXXX``; None when there is none."""
    found = _UNSAFE_IN_COMMENT.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


def spec_file_text(data: dict[str, Any], comments: Sequence[str] = (), name: str = "<spec>",
                   spec: Spec | None = None) -> str:
    """Spec data as a spec file's text: one-line comments, then the data as the YAML
    emitter writes it (no string of the data is pasted into YAML).  The text is read
    back with privspec's loader and must hold exactly ``data`` and be the spec validated
    from it (or ``spec``): InternalError otherwise.  SpecError when ``data`` is not a valid spec;
    ValueError when a comment holds a character of ``unsafe_character``."""
    from privspec.errors import InternalError
    from privspec.spec.loader import (
        dump_spec_data,
        load_spec_text,
        load_yaml_text,
        spec_from_data,
    )

    intended = spec if spec is not None else spec_from_data(data, name)
    for line in comments:
        unsafe = unsafe_character(line)
        if unsafe is not None:
            raise ValueError(f"a comment line holds {unsafe}, which a spec file's comment "
                             f"cannot hold: {line!r}")
    text = "".join(f"# {line}\n" for line in comments) + dump_spec_data(data)
    if load_yaml_text(text, name) != data or load_spec_text(text, name) != intended:
        raise InternalError(f"the spec file written for {name} does not read back as the "
                            "spec it was written from. This is a bug in privspec: please "
                            "report it with what was imported")
    return text


def _stating_sampling(data: Any) -> Any:
    """Spec data with every DP-SGD block saying how its batches were drawn (the default,
    Poisson, is what most runs claim and many did not do: a written spec states it)."""
    if isinstance(data, dict):
        out = {key: _stating_sampling(value) for key, value in data.items()}
        if isinstance(out.get("dpsgd"), dict):
            out["dpsgd"] = {**out["dpsgd"], "sampling": out["dpsgd"].get("sampling", "poisson")}
        return out
    if isinstance(data, list):
        return [_stating_sampling(item) for item in data]
    return data


__all__ = ["spec_from_dpsgd", "spec_to_yaml"]
