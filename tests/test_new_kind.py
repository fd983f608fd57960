"""A new mechanism kind is one module (ARCHITECTURE.md): added to a copy of the package,
it validates, appears in the JSON Schema, is accounted and is described in reports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KIND_MODULE = '''"""``laplace_pair``: the same query released twice with Laplace noise."""

from __future__ import annotations

from pydantic import Field

from privspec.spec.base import PositiveFloat, _Strict
from privspec.spec.events import ComposedEvent, Event, LaplaceEvent
from privspec.spec.kind import Kind, Words


class LaplacePair(_Strict):
    """Two releases with Laplace noise of scale b (sensitivity 1)."""

    scale: PositiveFloat = Field(description="Scale b of each release's noise.")


def event(block: LaplacePair, _: object) -> Event:
    return ComposedEvent(((LaplaceEvent(block.scale, 1.0), 2),))


def describe(block: LaplacePair, words: Words) -> str:
    return f"two Laplace releases of scale {words.num(block.scale)}"


KIND = Kind("laplace_pair", 25, LaplacePair, event, describe, additive=False,
            bounded_loss=True)
'''

SCRIPT = '''
import json, sys
import privspec
from privspec.render import render
from privspec.spec.schema import json_schema
head = {"privspec": 1, "title": "t", "unit": "one record", "neighbouring": "add-or-remove"}
new = privspec.evaluate({**head, "mechanism": {"laplace_pair": {"scale": 2.0}}})
old = privspec.evaluate({**head, "mechanism": {"repeat": {"count": 2, "mechanism":
                                              {"laplace": {"scale": 2.0}}}}})
print(json.dumps({"new": new.gdp.mu, "old": old.gdp.mu, "pure": new.pure_epsilon,
                  "markdown": render(new, "markdown"),
                  "schema": "LaplacePairNode" in json.dumps(json_schema())}))
'''


def test_a_new_kind_is_one_module(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "privspec", tmp_path / "privspec",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "privspec" / "spec" / "kinds" / "laplace_pair.py").write_text(
        KIND_MODULE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(tmp_path),
                                                      "PATH": "/usr/bin:/bin",
                                                      "PRIVSPEC_NO_CACHE": "1"})
    result = json.loads(done.stdout)
    assert result["new"] == result["old"] and abs(result["pure"] - 1.0) < 1e-6
    assert "Two Laplace releases of scale 2." in result["markdown"]
    assert result["schema"]
