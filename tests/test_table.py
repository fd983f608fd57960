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


def test_rows_with_one_title_are_told_apart_by_their_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two versions of one spec keep their title: each row then names its file, escaped."""
    text = (FAMILY / "table14-eps8.privspec.yaml").read_text(encoding="utf-8")
    first, second = tmp_path / "v1.privspec.yaml", tmp_path / "v2 *|*.privspec.yaml"
    first.write_text(text, encoding="utf-8")
    second.write_text(text.replace("noise_multiplier: ", "noise_multiplier: 1"),
                      encoding="utf-8")
    other = ROWS[1]
    assert main(["table", str(first), str(second), other]) == 0
    rows = [line.split(" | ")[0] for line in capsys.readouterr().out.splitlines()[2:4]]
    title = rows[0].removeprefix("| ").removesuffix(" (v1.privspec.yaml)")
    assert rows == [f"| {title} (v1.privspec.yaml)", f"| {title} (v2 \\*\\|\\*.privspec.yaml)"]
    assert main(["table", "-f", "latex", str(first), str(second)]) == 0
    assert "(v2 *\\textbar{}*.privspec.yaml)" in capsys.readouterr().out
    assert main(["table", "-f", "json", str(first), str(second), other]) == 0
    labels = [row["label"] for row in json.loads(capsys.readouterr().out)]
    assert labels[1].endswith("(v2 *|*.privspec.yaml)") and "(" not in labels[2]


def test_the_note_does_not_credit_plds_for_a_closed_form(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A plain Gaussian is accounted in closed form: the table's note names no PLDs."""
    spec = tmp_path / "gaussian.privspec.yaml"
    spec.write_text("privspec: 1\ntitle: g\nunit: one record\nneighbouring: add-or-remove\n"
                    "mechanism: {gaussian: {sigma: 2}}\n", encoding="utf-8")
    assert main(["--no-cache", "table", str(spec)]) == 0
    note = capsys.readouterr().out.splitlines()[-1]
    assert "PLD" not in note and "from its pessimistic accounting" in note
