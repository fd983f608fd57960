"""What a report is computed from, besides the numbers: the spec's SHA-256 and the
versions of privspec and its numerical stack (light: no numerical import, so that the
report cache can name an entry without them)."""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import metadata
from typing import TYPE_CHECKING

from privspec.version import __version__

if TYPE_CHECKING:
    from privspec.spec.models import Spec


def spec_sha256(spec: Spec) -> str:
    """SHA-256 of the spec's canonical JSON (comments and layout do not change it)."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@functools.cache
def package_versions() -> dict[str, str]:
    """Versions of privspec and of the numerical stack its figures depend on."""
    versions = {"privspec": __version__}
    for package in ("dp-accounting", "numpy", "scipy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:  # pragma: no cover - broken installs
            versions[package] = "unknown"
    return versions
