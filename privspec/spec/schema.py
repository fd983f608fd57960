"""The JSON Schema of a privspec file, generated from the models in ``privspec.spec.models``.

The schema is committed as ``schemas/privspec.schema.json`` so that editors
(``# yaml-language-server: $schema=...``) can complete and check specs; a test
fails when the committed file drifts from the models (regenerate it with
``privspec schema``).  A schema checks shapes, types and ranges; the
cross-field rules (e.g. batch larger than dataset) are only checked by
``privspec validate``.
"""

from __future__ import annotations

import json
from typing import Any

from privspec.spec.models import SPEC_VERSION, Spec

#: Where ``privspec schema`` writes by default, relative to the working directory.
DEFAULT_SCHEMA_PATH = "schemas/privspec.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = f"urn:privspec:spec:{SPEC_VERSION}"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec, as a mapping."""
    body = Spec.model_json_schema(mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        **body,
        "title": f"privspec spec, version {SPEC_VERSION}",
    }


def json_schema_text() -> str:
    """The schema as deterministic text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


__all__ = ["DEFAULT_SCHEMA_PATH", "json_schema", "json_schema_text"]
