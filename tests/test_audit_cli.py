"""``privspec audit`` and ``privspec check --audit``: exit 0 within the certificate, 1 on
a contradiction, 2 on bad input; score files' problems located like every input error
(file:line:column, one line each, code scores/invalid); the spec's audit: block and its
SHA-256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from spec_texts import ONE_GAUSSIAN

from privspec.cli import main

SPEC = ONE_GAUSSIAN


def _scores(mu: float, n: int = 5000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


def _csv(path: Path, members: np.ndarray, non_members: np.ndarray) -> Path:
    lines = ["score,member", *(f"{float(x)!r},1" for x in members),
             *(f"{float(x)!r},0" for x in non_members)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "gaussian.privspec.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_scores_within_the_certificate_exit_0(spec: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    scores = _csv(tmp_path / "scores.csv", *_scores(1.0))
    code, out, _ = _run(capsys, "audit", spec, "--scores", scores)
    assert code == 0
    digest = hashlib.sha256(scores.read_bytes()).hexdigest()
    assert f"5,000 scores in, 5,000 out, SHA-256 {digest}" in out
    assert "no contradiction" in out and "μ ≥ 0." in out and "certified μ = 1" in out


def test_a_stronger_attack_is_a_contradiction_exit_1(spec: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Scores from μ = 2 against a spec certifying μ = 1, in every format the reader takes."""
    members, non_members = _scores(2.0)
    np.savez(tmp_path / "scores.npz", **{"in": members, "out": non_members})
    (tmp_path / "scores.json").write_text(json.dumps(
        {"in": members.tolist(), "out": non_members.tolist()}), encoding="utf-8")
    for name in ("scores.npz", "scores.json"):
        code, out, _ = _run(capsys, "audit", spec, "--scores", tmp_path / name)
        assert code == 1 and "contradiction: the attack 'score ≥" in out
    code, out, _ = _run(capsys, "audit", spec, "--scores", tmp_path / "scores.npz",
                        "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["contradiction"] and data["mu_lower"] > 1.5
    assert data["scores"]["members"] == 5000 and len(data["boxes"]) > 10
    scores = _csv(tmp_path / "scores.csv", members, non_members)
    code, out, _ = _run(capsys, "check", spec, "--audit", scores)
    assert code == 1 and "contradiction at 95 % confidence" in out
    assert _run(capsys, "check", spec, "--audit", _csv(tmp_path / "fine.csv", *_scores(1.0))
                )[0] == 0


def test_columns_are_named_by_options(spec: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    members, non_members = _scores(1.0, 100)
    lines = ["loss,id,in_training", *(f"{-x},{i},1" for i, x in enumerate(members)),
             *(f"{-x},{i},0" for i, x in enumerate(non_members))]
    scores = tmp_path / "losses.csv"
    scores.write_text("\n".join(lines), encoding="utf-8")
    code, _, err = _run(capsys, "audit", spec, "--scores", scores)
    assert code == 2
    assert err.splitlines() == [
        f"{scores}:1:1: error: no column named 'score' in the header (it has 'loss', 'id', "
        "'in_training'); name the columns with --score-column and --label-column "
        "[scores/invalid]",
        f"{scores}:1:1: error: no column named 'member' in the header (it has 'loss', 'id', "
        "'in_training'); name the columns with --score-column and --label-column "
        "[scores/invalid]"]
    assert _run(capsys, "audit", spec, "--scores", scores, "--score-column", "loss",
                "--label-column", "in_training")[0] == 0


def test_a_column_named_twice_is_refused_not_guessed(spec: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Two columns named 'score' (a join's leftover): the first was read, silently."""
    members, non_members = _scores(1.0, 100)
    lines = ["score,score,member", *(f"{x},0,1" for x in members),
             *(f"{x},0,0" for x in non_members)]
    scores = tmp_path / "twice.csv"
    scores.write_text("\n".join(lines), encoding="utf-8")
    code, _, err = _run(capsys, "audit", spec, "--scores", scores)
    assert code == 2
    assert err.splitlines() == [
        f"{scores}:1:1: error: the header names 'score' 2 times: name each column once, or "
        "choose others with --score-column and --label-column [scores/invalid]"]


def test_plain_and_quoted_csv_read_the_same(tmp_path: Path) -> None:
    """numpy's parser reads plain files; quotes, CRLF or ragged lines go row by row."""
    from privspec.workflows.audit import read_scores

    members, non_members = _scores(1.0, 50)
    plain = read_scores(str(_csv(tmp_path / "plain.csv", members, non_members)))
    text = (tmp_path / "plain.csv").read_text(encoding="utf-8")
    for name, variant in (("quoted.csv", text.replace("score,member", '"score","member"')),
                          ("crlf.csv", text.replace("\n", "\r\n")),
                          ("blank.csv", text.replace("\n", "\n\n", 3))):
        (tmp_path / name).write_text(variant, encoding="utf-8", newline="")
        read = read_scores(str(tmp_path / name))
        assert np.array_equal(read.members, plain.members)
        assert np.array_equal(read.non_members, plain.non_members)
    assert np.array_equal(plain.members, members)


def test_csv_problems_are_located(spec: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    rows = [f"{0.1 * i},{i % 2}" for i in range(40)]
    rows[2] = "nan,1"
    rows[5] = "0.5,2"
    rows[7] = "0.5"
    rows[9] = "high,0"
    scores = tmp_path / "bad.csv"
    scores.write_text("score,member\n" + "\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = _run(capsys, "audit", spec, "--scores", scores)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"{scores}:4:1: error: score: 'nan': a score is a finite number (no NaN or "
        "infinity) [scores/invalid]",
        f"{scores}:7:5: error: member: '2': membership is 1 (in) or 0 (out) [scores/invalid]",
        f"{scores}:9:1: error: 1 cells where the header names 2 [scores/invalid]",
        f"{scores}:11:1: error: score: 'high' is not a number: a score is a finite number "
        "[scores/invalid]"]


def test_json_problems_are_located(spec: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "bad.json"
    scores.write_text('{"in": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],\n'
                      ' "out": [0, 1, NaN, 3, 4, 5, 6, 7, 8, "9", 10]}\n', encoding="utf-8")
    code, _, err = _run(capsys, "audit", spec, "--scores", scores)
    assert code == 2
    problem = "a score is a finite number (no NaN, infinity, string or boolean) [scores/invalid]"
    assert err.splitlines() == [f"{scores}:2:16: error: out[2]: {problem}",
                                f"{scores}:2:39: error: out[9]: {problem}"]
    scores.write_text('{"in": [1, 2,,]}', encoding="utf-8")
    code, _, err = _run(capsys, "audit", spec, "--scores", scores)
    assert code == 2 and err.startswith(f"{scores}:1:14: error: invalid JSON: ")


def test_too_few_and_unreadable_files_are_refused(spec: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    few = _csv(tmp_path / "few.csv", *_scores(1.0, 5))
    assert _run(capsys, "audit", spec, "--scores", few)[2] == (
        f"{few}:1:1: error: 5 scores of members (in): an audit needs at least 10 of each "
        "class [scores/invalid]\n")
    pickled = tmp_path / "scores.pkl"
    pickled.write_bytes(b"\x80\x04\x95" + b"\x00" * 20)
    code, _, err = _run(capsys, "audit", spec, "--scores", pickled)
    assert code == 2 and "never unpickles" in err
    objects = tmp_path / "objects.npz"
    np.savez(objects, **{"in": np.array([{"a": 1}] * 20, dtype=object),
                         "out": np.zeros(20)})
    code, _, err = _run(capsys, "audit", spec, "--scores", objects)
    assert code == 2 and "not an NPZ file of plain numeric arrays" in err
    code, _, err = _run(capsys, "audit", spec, "--scores", tmp_path / "missing.csv")
    assert code == 2 and err.endswith("missing.csv:1:1: error: no such file [io/not-found]\n")
    code, _, err = _run(capsys, "audit", spec)
    assert code == 2 and "no scores to audit: give --scores FILE" in err


def test_the_specs_audit_block_names_the_file_and_its_digest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs").mkdir()
    scores = _csv(tmp_path / "runs" / "scores.csv", *_scores(2.0))
    digest = hashlib.sha256(scores.read_bytes()).hexdigest()
    spec = tmp_path / "gaussian.privspec.yaml"
    spec.write_text(SPEC + f"audit:\n  scores: runs/scores.csv\n  sha256: {digest}\n"
                    "  confidence: 0.99\n", encoding="utf-8")
    code, out, _ = _run(capsys, "audit", spec)
    assert code == 1 and "at least 99 %" in out
    assert _run(capsys, "check", spec)[0] == 1
    spec.write_text(SPEC + f"audit:\n  scores: runs/scores.csv\n  sha256: {'f' * 64}\n",
                    encoding="utf-8")
    code, _, err = _run(capsys, "audit", spec)
    assert code == 2
    assert err == (f"{spec}:9:3: error: audit.sha256: the score file runs/scores.csv has "
                   f"SHA-256 {digest}, not the one named here: use the file the spec names, "
                   "or update its sha256 [scores/invalid]\n")
    spec.write_text(SPEC + "audit:\n  scores: runs/scores.csv\n  sha256: abc\n",
                    encoding="utf-8")
    code, _, err = _run(capsys, "validate", spec)
    assert code == 2 and "audit.sha256" in err


def test_the_one_run_bound_can_contradict_a_pure_epsilon(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "pure.privspec.yaml"
    spec.write_text(SPEC.replace("gaussian: {sigma: 1, sensitivity: 1}",
                                 "pure_dp: {epsilon: 1}"), encoding="utf-8")
    rng = np.random.default_rng(0)
    p = np.exp(3.0) / (1 + np.exp(3.0))
    members = (rng.random(3000) < p).astype(float)
    non_members = (rng.random(3000) < 1 - p).astype(float)
    scores = _csv(tmp_path / "rr.csv", members, non_members)
    code, out, _ = _run(capsys, "audit", spec, "--scores", scores, "--one-run")
    assert code == 1
    assert "contradiction: the one-run bound ε ≥ 2." in out and "exceeds the certified ε = 1" in out
    fair = _csv(tmp_path / "fair.csv", (rng.random(3000) < 0.6).astype(float),
                (rng.random(3000) < 0.4).astype(float))
    code, out, _ = _run(capsys, "audit", spec, "--scores", fair, "--one-run", "-f", "json")
    assert code == 0 and json.loads(out)["one_run"][0]["delta"] == 0.0


@pytest.mark.parametrize("one_run", [True, False])
def test_check_and_audit_make_the_same_statements(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], one_run: bool) -> None:
    """Scores whose one-run bound contradicts a pure ε = 1 while no box does: with the
    spec's ``one_run: true`` both commands fail, without it both pass (check ignored
    the block's one_run)."""
    right, wrong, rest = [1.0] * 45, [-1.0] * 5, [0.0] * 350
    scores = _csv(tmp_path / "canaries.csv", np.array(right + wrong + rest),
                  np.array([-1.0] * 45 + [1.0] * 5 + rest))
    digest = hashlib.sha256(scores.read_bytes()).hexdigest()
    spec = tmp_path / "pure.privspec.yaml"
    spec.write_text(SPEC.replace("gaussian: {sigma: 1, sensitivity: 1}", "pure_dp: {epsilon: 1}")
                    + f"audit:\n  scores: canaries.csv\n  sha256: '{digest}'\n"
                    f"  one_run: {str(one_run).lower()}\n", encoding="utf-8")
    audited, out, _ = _run(capsys, "audit", spec)
    assert ("contradiction: the one-run bound ε ≥ 1.3" in out) is one_run
    assert "contradiction: the attack" not in out  # (no box contradicts)
    checked, out, err = _run(capsys, "check", spec)
    assert (audited, checked) == ((1, 1) if one_run else (0, 0)), (out, err)
    assert ("the one-run bound ε ≥ 1.3" in out) is one_run and "Traceback" not in err
    for option, expected in (("--one-run", 1), ("--no-one-run", 0)):
        assert _run(capsys, "audit", spec, option)[0] == expected


def test_scores_given_on_the_command_line_are_not_held_to_the_blocks_digest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--scores (check's --audit) names another file than the block: the block's SHA-256
    is the named file's, not this one's."""
    named = _csv(tmp_path / "named.csv", *_scores(2.0))
    other = _csv(tmp_path / "other.csv", *_scores(1.0))
    spec = tmp_path / "gaussian.privspec.yaml"
    spec.write_text(SPEC + f"audit:\n  scores: named.csv\n  sha256: "
                    f"'{hashlib.sha256(named.read_bytes()).hexdigest()}'\n", encoding="utf-8")
    assert _run(capsys, "audit", spec)[0] == 1
    assert _run(capsys, "audit", spec, "--scores", other)[0] == 0
    assert _run(capsys, "check", spec, "--audit", other)[0] == 0
