"""The registry of mechanism kinds: one module per kind (its model, the event it
releases, its description, its properties), listed here in the order the schema and
the documentation show them.  A new kind is a new module and one line below."""

from __future__ import annotations

from privspec.spec.kind import Kind
from privspec.spec.kinds import (
    approximate_dp,
    compose,
    discrete_gaussian,
    discrete_laplace,
    dpsgd,
    fixed_size_sampled,
    gaussian,
    laplace,
    poisson_sampled,
    pure_dp,
    randomized_response,
    repeat,
)

KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    gaussian.KIND,
    laplace.KIND,
    discrete_gaussian.KIND,
    discrete_laplace.KIND,
    randomized_response.KIND,
    pure_dp.KIND,
    approximate_dp.KIND,
    poisson_sampled.KIND,
    fixed_size_sampled.KIND,
    repeat.KIND,
    dpsgd.KIND,
    compose.KIND,
)}

__all__ = ["KINDS", "Kind"]
