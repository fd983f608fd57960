"""The ``audit:`` block: an attack's score file that ``privspec audit`` (and ``privspec
check``) hold against the report's certified curve, named with its SHA-256 so that the
scores audited are the ones committed (docs/audit.md). The file itself is read by the
audit, not by the loader: ``privspec validate`` stays quick."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from privspec.spec.base import _Strict, conflict, raise_if
from privspec.spec.named_file import outside_reason

#: What the file is, in messages.
NOUN = "score file"

ColumnName = Annotated[str, Field(min_length=1, max_length=100)]


class AuditBlock(_Strict):
    """The score file of an attack on the mechanism, and how to read it."""

    scores: Annotated[str, Field(min_length=1, max_length=1000)] = Field(
        description="The score file, relative to the spec's folder: CSV (a score and a 0/1 "
        "membership column), JSON ({\"in\": [...], \"out\": [...]} or the two columns) or "
        "NPZ.")
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] = Field(
        description="The SHA-256 of the score file, 64 lower-case hexadecimal digits "
        "(privspec audit prints it): a different file is refused.")
    score_column: ColumnName = Field("score", description="The score column (CSV, or the "
                                     "column form of JSON and NPZ).")
    label_column: ColumnName = Field("member", description="The membership column: 1 for "
                                     "an example that was in, 0 for one that was out.")
    confidence: Annotated[float, Field(ge=0.5, le=0.999999, allow_inf_nan=False)] = Field(
        0.95, description="Probability with which every statement of the audit holds at "
                          "once (the one-run bound's, on their own).")
    holdout: bool = Field(
        False, description="Choose one threshold per direction on half the scores and "
        "test it on the other half, instead of a fixed set of pooled-score quantiles.")
    one_run: bool = Field(
        False, description="Also the one-run bound on ε (Steinke, Nasr & Jagielski 2023), "
        "for scores of canaries each inserted with probability 1/2 into one training run; "
        "the report's audit section shows it (docs/audit.md).")

    @model_validator(mode="after")
    def _inside_the_spec_folder(self) -> AuditBlock:
        """A spec comes from strangers: it may name a file beside it or below, never one
        elsewhere on the machine that audits it."""
        reason = outside_reason(self.scores, NOUN)
        if reason is not None:
            raise_if([conflict("scores", reason, self.scores)], "AuditBlock")
        return self
