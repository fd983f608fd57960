"""`privspec table`: the De et al. 2022 before/after table is one command, and stays current."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from privspec.cli import main

FAMILY = Path("examples/de-et-al-2022")
ROWS = sorted(glob.glob(str(FAMILY / "table14-*.privspec.yaml"))) + sorted(
    glob.glob(str(FAMILY / "table17-*.privspec.yaml")))


def test_committed_table_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(ROWS) == 10
    assert main(["table", *ROWS]) == 0
    assert capsys.readouterr().out == (FAMILY / "table.md").read_text(encoding="utf-8")


def test_table_numbers_beat_the_published_rdp_epsilons(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "--format", "json", *ROWS]) == 0
    rows = json.loads(capsys.readouterr().out)
    for row in rows:
        claim = row["published"]
        # Tight PLD accounting gives a smaller ε than the RDP accountant De et al. used ...
        assert claim["epsilon_privspec"] < claim["epsilon"]
        # ... and every row is Tier I (position paper, Table 2).
        assert row["tier"] == 1
    eps8 = next(r for r in rows if r["spec_path"].endswith("table14-eps8.privspec.yaml"))
    assert 1.567 <= eps8["mu"] <= 1.569
    assert 1.0e-3 <= eps8["regret"] <= 1.3e-3
    assert eps8["published"]["epsilon_privspec"] == pytest.approx(7.42, abs=0.01)


def test_table_latex_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "table.tex"
    assert main(["table", "--format", "latex", "-o", str(out), ROWS[0]]) == 0
    assert "\\toprule" in out.read_text(encoding="utf-8")
    assert main(["table", str(tmp_path / "missing.privspec.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
