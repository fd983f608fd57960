"""The report's section "What an attack achieved" in every format: the bounds in words,
the scores' count and SHA-256, the boxes drawn; a hostile score-file name stays text in
each; a spec's audit: block cannot reach files outside its folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from spec_texts import ONE_GAUSSIAN

import privspec
from privspec.cli import main
from privspec.report import figures
from privspec.report import formatting as fmt
from privspec.report.model import Report
from privspec.report.render import render_documents
from privspec.spec.loader import load_spec_text
from privspec.workflows.audit import AuditSettings, Columns, read_scores, with_audit

SPEC = ONE_GAUSSIAN
HOSTILE = "x`<b>*_[l](j)$&%#{}~^\\input{secret}\u202e.csv"


def _audited(tmp_path: Path, mu: float, name: str = "scores.npz") -> Report:
    rng = np.random.default_rng(0)
    path = tmp_path / name
    with open(path, "wb") as handle:
        np.savez(handle, **{"in": rng.normal(mu, 1.0, 5000), "out": rng.normal(0.0, 1.0, 5000)})
    scores = read_scores(str(path))
    report = privspec.evaluate(load_spec_text(SPEC))
    return with_audit(report, scores, AuditSettings(str(path), Columns(), 0.95, False))


def test_every_format_has_the_section(tmp_path: Path) -> None:
    report = _audited(tmp_path, 2.0)
    audit = report.audit
    assert audit is not None and audit.contradiction and audit.mu_lower > 1.5
    assert audit.clearest_contradiction is not None
    assert audit.clearest_contradiction.tpr_low > audit.clearest_contradiction.tpr_certified
    (markdown,) = render_documents(report, "markdown")
    assert "**What an attack achieved.**" in markdown.text
    assert "5,000 scores of examples that were in" in markdown.text
    assert f"`{audit.sha256}`" in markdown.text and "**Contradiction:**" in markdown.text
    (html,) = render_documents(report, "html")
    assert "<h2>What an attack achieved</h2>" in html.text
    assert 'id="audit-figure"' in html.text and "Contradiction:" in html.text
    latex = render_documents(report, "latex")[-1].text
    assert "\\textbf{What an attack achieved.}" in latex and "privspec contradiction" in latex
    data = json.loads(report.model_dump_json())
    assert data["audit"]["sha256"] == audit.sha256 and len(data["audit"]["boxes"]) > 10
    plain = privspec.evaluate(load_spec_text(SPEC))
    assert "audit" not in json.loads(plain.model_dump_json())
    assert "What an attack achieved" not in render_documents(plain, "markdown")[0].text


def test_an_honest_attack_is_no_contradiction(tmp_path: Path) -> None:
    report = _audited(tmp_path, 1.0)
    assert report.audit is not None and not report.audit.contradiction
    (markdown,) = render_documents(report, "markdown")
    assert "No box lies entirely above the certified curve" in markdown.text


def test_the_figure_is_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    report = _audited(tmp_path, 2.0)
    first = figures.audit_figure_bytes(report, "svg")
    assert first == figures.audit_figure_bytes(_audited(tmp_path, 2.0), "svg")
    assert b"<svg" in first and first != figures.audit_figure_bytes(
        _audited(tmp_path, 1.0), "svg")


def test_a_hostile_score_file_name_stays_text(tmp_path: Path) -> None:
    report = _audited(tmp_path, 2.0, HOSTILE)
    (html,) = render_documents(report, "html")
    assert "<b>" not in html.text and "&lt;b&gt;" in html.text and "\u202e" not in html.text
    (markdown,) = render_documents(report, "markdown")
    line = next(line for line in markdown.text.splitlines()
                if line.startswith("**What an attack achieved.**"))
    assert "from ``x`<b>*_[l](j)$&%#{}~^\\input{secret}.csv`` (SHA-256" in line
    assert "\u202e" not in markdown.text
    latex = render_documents(report, "latex", variant="standalone")[-1].text
    assert "\\input{secret}" not in latex


def test_a_hostile_name_compiles_without_running_tex(tmp_path: Path) -> None:
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        if os.environ.get("PRIVSPEC_REQUIRE_TEX"):
            pytest.fail("PRIVSPEC_REQUIRE_TEX is set but pdflatex is not on PATH")
        pytest.skip("pdflatex not installed")
    report = _audited(tmp_path, 2.0, HOSTILE)
    (tmp_path / "secret.tex").write_text("\\typeout{SECRET READ}\n", encoding="utf-8")
    (tmp_path / "report.tex").write_text(
        render_documents(report, "latex", variant="standalone")[-1].text, encoding="utf-8")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error",
                           "-shell-escape", "report.tex"], cwd=tmp_path, capture_output=True,
                          text=True, errors="replace", timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "SECRET READ" not in done.stdout.splitlines()


def test_render_writes_the_audit_figure_beside_markdown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(1)
    lines = ["score,member", *(f"{x!r},1" for x in rng.normal(1.0, 1.0, 200).tolist()),
             *(f"{x!r},0" for x in rng.normal(0.0, 1.0, 200).tolist())]
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    digest = hashlib.sha256((tmp_path / "scores.csv").read_bytes()).hexdigest()
    spec = tmp_path / "g.privspec.yaml"
    spec.write_text(SPEC + f"audit:\n  scores: scores.csv\n  sha256: '{digest}'\n",
                    encoding="utf-8")
    assert main(["render", str(spec), "-f", "markdown", "--output-dir",
                 str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "g-audit.svg").is_file()
    assert (tmp_path / "out" / "g-audit.png").is_file()
    assert "](g-audit.svg)" in (tmp_path / "out" / "g.md").read_text(encoding="utf-8")
    capsys.readouterr()


def test_the_audit_block_cannot_leave_the_specs_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("password,hunter2\n", encoding="utf-8")
    folder = tmp_path / "repo"
    folder.mkdir()
    spec = folder / "g.privspec.yaml"
    for path in ("../secret.csv", "/etc/passwd", "a/../../secret.csv"):
        spec.write_text(SPEC + f"audit:\n  scores: {path}\n  sha256: '{'a' * 64}'\n",
                        encoding="utf-8")
        assert main(["validate", str(spec)]) == 2
        assert "inside it (no leading '/', drive or '..')" in capsys.readouterr().err
    (folder / "link.csv").symlink_to(secret)
    spec.write_text(SPEC + f"audit:\n  scores: link.csv\n  sha256: '{'a' * 64}'\n",
                    encoding="utf-8")
    assert main(["audit", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "leads out of the spec's folder" in err and "hunter2" not in err
    (folder / "text.csv").write_text("password,hunter2\n", encoding="utf-8")
    spec.write_text(SPEC + f"audit:\n  scores: text.csv\n  sha256: '{'a' * 64}'\n",
                    encoding="utf-8")
    assert main(["audit", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "audit.sha256: the score file" in err and "hunter2" not in err


def test_a_contradiction_of_an_uncertified_curve_says_so(tmp_path: Path) -> None:
    from privspec.cli.audit import findings
    from privspec.report.model import Caveat
    from privspec.workflows.audit import audit_report

    path = tmp_path / "scores.npz"
    rng = np.random.default_rng(0)
    np.savez(path, **{"in": rng.normal(2.0, 1.0, 3000), "out": rng.normal(0.0, 1.0, 3000)})
    scores = read_scores(str(path))
    report = privspec.evaluate(load_spec_text(SPEC))
    certified = audit_report(report, scores)
    assert certified.certified and not any("note:" in line for line in findings(certified,
                                                                                scores))
    loose = report.model_copy(update={"warnings": [
        Caveat(code="accounting/uncertified-composition", message="no bound")]})
    outcome = audit_report(loose, scores)
    assert outcome.contradictions and not outcome.certified
    assert any("composed without a stated error bound" in line
               for line in findings(outcome, scores))


def _one_run_report(tmp_path: Path, p_in: float, one_run: bool = True) -> Report:
    """A pure ε = 1 report audited by canaries guessed right with probability ``p_in``."""
    rng = np.random.default_rng(0)
    path = tmp_path / "canaries.npz"
    with open(path, "wb") as handle:
        np.savez(handle, **{"in": (rng.random(3000) < p_in).astype(float),
                            "out": (rng.random(3000) < 1 - p_in).astype(float)})
    spec = SPEC.replace("gaussian: {sigma: 1, sensitivity: 1}", "pure_dp: {epsilon: 1}")
    report = privspec.evaluate(load_spec_text(spec))
    return with_audit(report, read_scores(str(path)),
                      AuditSettings(str(path), Columns(), 0.95, False, one_run=one_run))


def test_every_format_shows_the_one_run_bound_when_asked(tmp_path: Path) -> None:
    report = _one_run_report(tmp_path, np.exp(3.0) / (1 + np.exp(3.0)))
    assert report.audit is not None
    first = report.audit.one_run[0]
    assert first.delta == 0 and first.epsilon_certified == 1 and first.contradicts
    assert first.canaries == 6000 and 0 < first.correct <= first.guesses
    lower, right, guesses = (fmt.fmt_lower(first.epsilon_lower),
                             fmt.fmt_count(first.correct), fmt.fmt_count(first.guesses))
    assert lower.startswith("2.")
    said = f"ε ≥ {lower} at δ = 0, from {right} right guesses of {guesses}; this report " \
           "certifies ε = 1"
    (markdown,) = render_documents(report, "markdown")
    assert "**One run.** Separately" in markdown.text and "6,000 scores" in markdown.text
    assert f"- {said}. **Contradiction:** the bound exceeds it" in markdown.text
    assert "the attack does not contradict this report" not in markdown.text
    (html,) = render_documents(report, "html")
    assert f"<li>{said}. <strong>Contradiction:</strong>" in html.text
    latex = render_documents(report, "latex")[-1].text
    assert (f"\\item $\\varepsilon \\geq {fmt.fmt_lower(first.epsilon_lower, 'latex')}$ at "
            "$\\delta = 0$") in latex and "\\textbf{One run.}" in latex
    data = json.loads(report.model_dump_json())["audit"]["one_run"][0]
    assert data == {"delta": 0.0, "epsilon_lower": first.epsilon_lower, "canaries": 6000,
                    "guesses": first.guesses, "correct": first.correct,
                    "epsilon_certified": 1.0, "contradicts": True}


def test_the_one_run_bound_is_left_out_unless_asked(tmp_path: Path) -> None:
    report = _one_run_report(tmp_path, 0.6, one_run=False)
    assert report.audit is not None and report.audit.one_run == []
    for form in ("markdown", "html", "latex"):
        assert "One run" not in render_documents(report, form)[-1].text
    fair = _one_run_report(tmp_path, 0.6)
    assert fair.audit is not None and not any(r.contradicts for r in fair.audit.one_run)
    (markdown,) = render_documents(fair, "markdown")
    assert "**One run.**" in markdown.text and "Contradiction" not in markdown.text
    assert "the attack does not contradict this report" in markdown.text


def test_the_specs_audit_block_asks_for_the_one_run_bound(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(2)
    lines = ["score,member", *(f"{x!r},1" for x in (rng.random(500) < 0.6).astype(float).tolist()),
             *(f"{x!r},0" for x in (rng.random(500) < 0.4).astype(float).tolist())]
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    digest = hashlib.sha256((tmp_path / "scores.csv").read_bytes()).hexdigest()
    spec = tmp_path / "g.privspec.yaml"
    spec.write_text(SPEC + f"audit:\n  scores: scores.csv\n  sha256: '{digest}'\n"
                    "  one_run: true\n", encoding="utf-8")
    assert main(["render", str(spec), "-f", "json", "--output-dir", str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "g.json").read_text(encoding="utf-8"))
    assert data["audit"]["one_run"][0]["delta"] == 0.0
    capsys.readouterr()
    assert main(["audit", str(spec)]) == 0
    assert "one run (Steinke, Nasr & Jagielski 2023" in capsys.readouterr().out
    assert main(["audit", str(spec), "--no-one-run"]) == 0
    assert "one run" not in capsys.readouterr().out


def test_the_one_run_bound_compiles(tmp_path: Path) -> None:
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        if os.environ.get("PRIVSPEC_REQUIRE_TEX"):
            pytest.fail("PRIVSPEC_REQUIRE_TEX is set but pdflatex is not on PATH")
        pytest.skip("pdflatex not installed")
    report = _one_run_report(tmp_path, np.exp(3.0) / (1 + np.exp(3.0)))
    (tmp_path / "report.tex").write_text(
        render_documents(report, "latex", variant="standalone")[-1].text, encoding="utf-8")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error",
                           "report.tex"], cwd=tmp_path, capture_output=True, text=True,
                          errors="replace", timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
