"""What a report's files and labels are named after: the spec file's stem, in ASCII
words (``render.py``'s file names, labels and macros; ``registry.py``'s ``url_slug``)."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privspec.report.model import Report

_SPEC_SUFFIXES = (".privspec.yaml", ".privspec.yml", ".yaml", ".yml", ".json")


def spec_stem(path: str | os.PathLike[str]) -> str:
    """``examples/cifar10.privspec.yaml`` -> ``cifar10``: the base of output file names."""
    name = PurePath(path).name
    for suffix in _SPEC_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def ascii_folded(text: str) -> str:
    """``text`` with accents dropped and every other non-ASCII character left out."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def slug_for(report: Report, separator: str = "-") -> str:
    """The report's name in lower-case ASCII words (from the spec file's stem, or the
    title when it has no file), joined by ``separator``: ``cifar10-eps8``."""
    base = spec_stem(report.spec_path) if report.spec_path else report.title
    words = (word.lower() for word in re.findall(r"[A-Za-z0-9]+", ascii_folded(base)))
    return separator.join(words) or "report"
