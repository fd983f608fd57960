"""Specs read from git (``privspec action``, ``privspec diff --rev``) read the files they
name (strategy files) at the same revision, never from the working tree, and a base
version that cannot be read fails closed: a pull request cannot weaken a spec by making
its base unreadable."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from git_repo import commit, git, init_repo
from git_repo import hermetic_git as hermetic_git  # an autouse fixture

from privspec.cli import main as privspec_main
from privspec.spec.diagnostics import SpecError
from privspec.spec.named_file import NamedFileError
from privspec.workflows.git import RevisionFolder, spec_at_revision

STRATEGY = "1.0,0,0\n0.5,1.0,0\n0.25,0.5,1.0\n"
OTHER_STRATEGY = "1.0,0,0\n0.5,1.0,0\n0.125,0.5,1.0\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def mf_spec(noise: float, file: str = "strategy.csv", strategy: str = STRATEGY) -> str:
    return f"""privspec: 1
title: t
unit: one user
neighbouring: add-or-remove
mechanism:
  matrix_factorization:
    strategy: {{matrix: {{file: {file}, sha256: '{sha(strategy)}'}}}}
    steps: 3
    noise_multiplier: {noise}
    participation: {{once: {{}}}}
accounting: {{discretization: 1e-3}}
"""


def _action(tmp_path: Path, base: str, head: str) -> tuple[int, str]:
    comment = tmp_path / "comment.md"
    code = privspec_main(["action", "--base", base, "--head", head, "--fail-on-weaker", "true",
                          "--comment-file", str(comment), "--summary-file", "",
                          "--github-output", ""])
    return code, comment.read_text(encoding="utf-8") if comment.exists() else ""


def test_a_weakened_spec_whose_base_strategy_is_gone_from_the_work_tree_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attack: the pull request weakens the spec (noise 8 → 0.3) and moves its
    strategy to another file; the base spec's file is not in the checked-out head."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"mf.privspec.yaml": mf_spec(8), "strategy.csv": STRATEGY}, "base")
    git(root, "checkout", "-q", "-b", "feature")
    head = commit(root, {"mf.privspec.yaml": mf_spec(0.3, "s2.csv", OTHER_STRATEGY),
                         "s2.csv": OTHER_STRATEGY, "strategy.csv": None}, "weaker")
    monkeypatch.chdir(root)
    code, comment = _action(tmp_path, base, head)
    assert code == 1, comment
    assert "**Privacy got weaker.**" in comment and "new spec" not in comment


def test_strategy_files_are_read_at_each_revision_not_in_the_work_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"specs/mf.privspec.yaml": mf_spec(8),
                         "specs/strategy.csv": STRATEGY}, "base")
    head = commit(root, {"specs/mf.privspec.yaml": mf_spec(0.3)}, "weaker")
    (root / "specs" / "strategy.csv").write_text("not the committed file\n", encoding="utf-8")
    monkeypatch.chdir(root / "specs")
    code, comment = _action(tmp_path, base, head)
    assert code == 1, comment
    assert "**Privacy got weaker.**" in comment
    assert privspec_main(["diff", "--rev", base, "--head-rev", head, "--fail-on-weaker",
                          "mf.privspec.yaml"]) == 1


def test_a_base_spec_that_cannot_be_read_fails_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = init_repo(tmp_path / "repo")
    # the base names a strategy file that is not committed (it is in the work tree only)
    base = commit(root, {"mf.privspec.yaml": mf_spec(8)}, "base")
    (root / "strategy.csv").write_text(STRATEGY, encoding="utf-8")
    head = commit(root, {"mf.privspec.yaml": mf_spec(0.3), "strategy.csv": STRATEGY}, "weaker")
    monkeypatch.chdir(root)
    code, comment = _action(tmp_path, base, head)
    assert code == 2, comment
    assert "- `mf.privspec.yaml`: invalid base spec" in comment
    assert "### Invalid base spec: `mf.privspec.yaml`" in comment
    assert ":7:31: error: mechanism.matrix_factorization.strategy.matrix.file: no such file " \
           "at revision" in comment
    capsys.readouterr()
    assert privspec_main(["diff", "--rev", base, "mf.privspec.yaml"]) == 2
    err = capsys.readouterr().err
    assert f"{base}:mf.privspec.yaml:7:31: error:" in err and len(err.splitlines()) == 1


def _symlink_commit(root: Path, name: str, target: str) -> str:
    os.symlink(target, root / name)
    git(root, "add", name)
    git(root, "commit", "-q", "--no-gpg-sign", "-m", "link")
    return git(root, "rev-parse", "HEAD")


def test_revision_folder_refuses_what_is_not_a_committed_regular_file(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo")
    commit(root, {"specs/strategy.csv": STRATEGY, "specs/sub/x.csv": STRATEGY}, "files")
    revision = _symlink_commit(root / "specs", "link.csv", "strategy.csv")
    folder = RevisionFolder(str(root), revision, "specs", "abc")
    assert folder.read("strategy.csv", 1000, "strategy file") == STRATEGY.encode()
    assert folder.read("./sub/x.csv", 1000, "strategy file") == STRATEGY.encode()
    for name, says in [("missing.csv", "no such file at revision abc"),
                       ("sub", "is a directory at revision abc"),
                       ("link.csv", "is not a regular file at revision abc"),
                       ("*.csv", "no such file at revision abc")]:
        with pytest.raises(NamedFileError, match=says):
            folder.read(name, 1000, "strategy file")
    with pytest.raises(NamedFileError, match="larger than the 10 bytes"):
        folder.read("strategy.csv", 10, "strategy file")


def test_spec_at_revision_reads_nothing_outside_the_spec_folder(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo")
    revision = commit(root, {"strategy.csv": STRATEGY,
                             "specs/mf.privspec.yaml": mf_spec(1, "../strategy.csv")}, "up")
    with pytest.raises(SpecError, match="inside it"):
        spec_at_revision(str(root), revision, "specs/mf.privspec.yaml")


def test_a_spec_at_a_revision_is_read_as_a_spec_file_on_disk_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Not UTF-8, a symbolic link, too large: one located line each (the action said
    nothing but a traceback for the first), never a file read past the limit."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"a.privspec.yaml": mf_spec(8), "strategy.csv": STRATEGY}, "base")
    (root / "a.privspec.yaml").write_bytes(b"privspec: 1\ntitle: \xff\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "--no-gpg-sign", "-m", "binary")
    monkeypatch.chdir(root)
    code, comment = _action(tmp_path, base, "HEAD")
    assert code == 2
    assert ":a.privspec.yaml:2:8: error: not UTF-8 text: byte 0xFF" in comment
    linked = _symlink_commit(root, "b.privspec.yaml", "a.privspec.yaml")
    with pytest.raises(SpecError, match="is not a regular file at revision"):
        spec_at_revision(str(root), linked, "b.privspec.yaml")
    huge = commit(root, {"c.privspec.yaml": "#" * 1_000_001}, "huge")
    with pytest.raises(SpecError, match="larger than the 1,000,000 bytes a spec file may"):
        spec_at_revision(str(root), huge, "c.privspec.yaml")
