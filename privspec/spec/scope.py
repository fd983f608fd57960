"""The ``scope:`` block: what a guarantee covers, in the terms reporting guidance asks
for (Ponomareva et al., "How to DP-fy ML", JAIR 2023, §5; NIST SP 800-226).  Every field
is optional; a report prints those given, and always says what no privacy number covers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from privspec.spec.base import _Strict

#: A web address, as ``scope.code`` takes it (``messages`` words a mismatch).
WEB_ADDRESS = r"^https?://[^\s]+$"

Text = Annotated[str, Field(min_length=1, max_length=300)]
Access = Literal["training", "hyper-parameter tuning", "preprocessing", "evaluation",
                 "data selection"]


class Scope(_Strict):
    """What the guarantee covers and what it does not."""

    released: Text | None = Field(
        None, description="What is released, e.g. 'the final model only' or 'every "
        "checkpoint' (a guarantee for the final model says nothing about checkpoints).")
    covers: Annotated[list[Access], Field(min_length=1, max_length=5)] | None = Field(
        None, description="The data accesses the mechanism accounts for: training, "
        "hyper-parameter tuning, preprocessing, evaluation, data selection. Accesses not "
        "listed are not covered.")
    trust_model: Literal["central", "local", "shuffle", "federated"] | None = Field(
        None, description="Who sees the data before noise is added: 'central' (a trusted "
        "curator), 'local' (each person randomizes their own data), 'shuffle' or "
        "'federated'.")
    releases: Literal["one", "many"] | None = Field(
        None, description="'one' release, or 'many' (a system that releases again as data "
        "arrive: the guarantee then holds per release unless the spec composes them).")
    unprotected: Annotated[list[Text], Field(min_length=1, max_length=20)] | None = Field(
        None, description="Quantities released exactly, without protection (invariants, "
        "e.g. 'total population of each state').")
    code: Annotated[str, Field(min_length=8, max_length=300,
                               pattern=WEB_ADDRESS)] | None = Field(
        None, description="A link to the code that implements the mechanism (http or https).")
