"""privspec's errors: one base class for every error raised on purpose, and the stable
codes of the diagnostics that report a spec's problems.

The README's list of codes is generated from ``Code`` (``codes_markdown``;
``tests/test_errors.py`` keeps it current).  Codes are stable: add new ones, never
change a meaning.  No imports beyond the standard library: every layer uses this.
"""

from __future__ import annotations

from enum import StrEnum

#: The command line's exit codes: fine, ran but a check failed, could not run.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_CANNOT_RUN = 2


class Code(StrEnum):
    """The ``area/slug`` code of a diagnostic."""

    IO_NOT_FOUND = "io/not-found"
    IO_IS_A_DIRECTORY = "io/is-a-directory"
    IO_UNREADABLE = "io/unreadable"
    IO_TOO_LARGE = "io/too-large"
    IO_ENCODING = "io/encoding"
    YAML_SYNTAX = "yaml/syntax"
    YAML_TAB = "yaml/tab"
    YAML_INVALID_CHARACTER = "yaml/invalid-character"
    YAML_DUPLICATE_KEY = "yaml/duplicate-key"
    YAML_ALIAS = "yaml/alias"
    YAML_TOO_DEEP = "yaml/too-deep"
    YAML_MULTIPLE_DOCUMENTS = "yaml/multiple-documents"
    YAML_UNSUPPORTED_TAG = "yaml/unsupported-tag"
    YAML_COMPLEX_KEY = "yaml/complex-key"
    YAML_INVALID_SCALAR = "yaml/invalid-scalar"
    SPEC_EMPTY = "spec/empty"
    SPEC_NOT_A_MAPPING = "spec/not-a-mapping"
    SPEC_UNKNOWN_KEY = "spec/unknown-key"
    SPEC_MISSING_KEY = "spec/missing-key"
    SPEC_INVALID_TYPE = "spec/invalid-type"
    SPEC_INVALID_VALUE = "spec/invalid-value"
    SPEC_UNKNOWN_KIND = "spec/unknown-kind"
    SPEC_CONFLICT = "spec/conflict"
    BUDGET_EXCEEDED = "budget/exceeded"
    EVALUATION_REFUSED = "evaluation/refused"
    EVALUATION_INTERNAL = "evaluation/internal"
    SCORES_INVALID = "scores/invalid"


class PrivspecError(Exception):
    """Base of every error privspec raises on purpose; ``str(error)`` is written for the
    user (one line per problem), so a caller can print it without a traceback."""


class EvaluationError(PrivspecError):
    """A valid spec that privspec cannot evaluate, with what to change.

    ``path`` is the spec path of the mechanism it concerns (``("mechanism", "compose",
    1, "mechanism", "dpsgd")``), when known: the CLI prints it with its line and column.
    """

    code = Code.EVALUATION_REFUSED

    def __init__(self, message: str, path: tuple[str | int, ...] | None = None) -> None:
        super().__init__(message)
        self.path = path


class InternalError(EvaluationError):
    """A failure of privspec itself on a valid spec (a bug): the message says so and asks
    for the spec in a bug report; the cause keeps the traceback."""

    code = Code.EVALUATION_INTERNAL


#: What each code means, for the documentation.
CODE_MEANINGS: dict[Code, str] = {
    Code.IO_NOT_FOUND: "there is no file at that path",
    Code.IO_IS_A_DIRECTORY: "the path is a directory, not a spec file",
    Code.IO_UNREADABLE: "the file exists but cannot be read (permissions, a device), or "
    "symbolic links lead to a file whose name does not end in .yaml, .yml or .json",
    Code.IO_TOO_LARGE: ("the file is larger than a spec can be (1,000,000 characters or "
                        "50,000 YAML values)"),
    Code.IO_ENCODING: "the file is not UTF-8 text",
    Code.YAML_SYNTAX: "the text is not YAML",
    Code.YAML_TAB: "a tab is used for indentation (YAML allows only spaces)",
    Code.YAML_INVALID_CHARACTER: "a control character or other character YAML forbids",
    Code.YAML_DUPLICATE_KEY: "a key appears twice in one mapping (YAML would keep the last)",
    Code.YAML_ALIAS: "an anchor or alias (`&a`, `*a`): specs spell every value out",
    Code.YAML_TOO_DEEP: "mappings or lists nested deeper than a spec can be",
    Code.YAML_MULTIPLE_DOCUMENTS: "more than one YAML document (`---`) in one file",
    Code.YAML_UNSUPPORTED_TAG: "a YAML tag such as `!!python/object`",
    Code.YAML_COMPLEX_KEY: "a key that is not a plain string",
    Code.YAML_INVALID_SCALAR: "a value YAML cannot read as a number, string or boolean",
    Code.SPEC_EMPTY: "the file holds no spec",
    Code.SPEC_NOT_A_MAPPING: "the spec (or a part of it) is not a mapping of keys to values",
    Code.SPEC_UNKNOWN_KEY: "a key the spec language does not have (with a suggestion)",
    Code.SPEC_MISSING_KEY: "a required key is missing",
    Code.SPEC_INVALID_TYPE: "a value of the wrong type, e.g. a number written as a string",
    Code.SPEC_INVALID_VALUE: "a value out of its allowed range",
    Code.SPEC_UNKNOWN_KIND: "a mechanism kind the spec language does not have",
    Code.SPEC_CONFLICT: "fields that contradict each other, or a mechanism the relation "
    "cannot account",
    Code.BUDGET_EXCEEDED: "a limit of the spec's budget, or given to `privspec check`, is "
    "exceeded (GitHub annotations of `privspec check`)",
    Code.EVALUATION_REFUSED: "a valid spec privspec will not evaluate as it stands (a cost or "
    "a range it cannot compute), with what to change",
    Code.EVALUATION_INTERNAL: "privspec itself failed on a valid spec: a bug, to be reported "
    "with the spec (`--debug` shows the traceback)",
    Code.SCORES_INVALID: "an attack's score file (`privspec audit`) holds something other "
    "than finite scores and 0/1 membership labels, too few scores, or is not CSV, JSON or NPZ",
}


def codes_markdown() -> str:
    """The table of codes the README shows."""
    rows = [f"| `{code}` | {CODE_MEANINGS[code]} |" for code in Code]
    return "\n".join(["| code | meaning |", "|---|---|", *rows])


__all__ = ["CODE_MEANINGS", "EXIT_CANNOT_RUN", "EXIT_CHECK_FAILED", "EXIT_OK", "Code",
           "EvaluationError", "InternalError", "PrivspecError", "codes_markdown"]
