"""A report-cache entry that is no entry (a FIFO, a link to a device, a body nested
deeper than the JSON reader goes) is not trusted and never hangs, fills memory or
crashes the command: the report is evaluated again and the entry replaced."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from spec_texts import ONE_GAUSSIAN

ROOT = Path(__file__).resolve().parent.parent
SPEC = ONE_GAUSSIAN
#: Plants the entry of the spec's report (``how``), then evaluates the spec.
PROBE = """
import hashlib, json, os, sys
from privspec.report import cache, store
from privspec.spec.loader import load_spec
spec = load_spec(sys.argv[1])
folder = store.directory()
folder.mkdir(parents=True)
path = folder / (cache.key(spec, {}) + ".entry")
how = sys.argv[2]
if how == "deep":
    key, body = cache.key(spec, {}), b"[" * 100000
    header = {"format": store.ENTRY_FORMAT, "key": key, "sha256": hashlib.sha256(body).hexdigest()}
    path.write_bytes(json.dumps(header, sort_keys=True).encode() + b"\\n" + body)
elif how == "fifo":
    os.mkfifo(path)
else:
    path.symlink_to("/dev/zero")
print(cache.evaluate(spec).gdp.mu)
"""


@pytest.mark.parametrize("how", ["deep", "fifo", "device"])
def test_an_entry_that_is_no_entry_is_evaluated_again(tmp_path: Path, how: str) -> None:
    spec = tmp_path / "g.privspec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(ROOT),
                   "PRIVSPEC_CACHE_DIR": str(tmp_path / "cache")}
    environment.pop("PRIVSPEC_NO_CACHE", None)
    done = subprocess.run(
        ["bash", "-c", 'ulimit -v 3000000; exec "$@"', "-", sys.executable, "-c", PROBE,
         str(spec), how], env=environment, capture_output=True, text=True, timeout=60,
        check=False)
    assert done.returncode == 0 and done.stdout == "1.0\n", done.stderr
