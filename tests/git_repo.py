"""Temporary git repositories with small DP-SGD specs, for the diff, action and pre-commit tests.

Specs use a coarse discretization (1e-3) and few steps so that each evaluation takes a
fraction of a second.  Git runs with its own identity and no user configuration.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

#: Environment for git and pre-commit: no user or system configuration, a fixed identity.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "privspec tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "privspec tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}


def dpsgd_spec(noise_multiplier: float = 1.1, steps: int = 200, *, title: str = "Small DP-SGD run",
               unit: str = "one training example", neighbouring: str = "add-or-remove",
               budget: str = "") -> str:
    """The text of a small DP-SGD spec; ``budget`` is YAML lines under ``budget:``."""
    text = f"""# A small DP-SGD spec for tests.
privspec: 1
title: {title}
unit: {unit}
neighbouring: {neighbouring}
mechanism:
  dpsgd:
    noise_multiplier: {noise_multiplier}
    batch_size: 100
    dataset_size: 10000
    steps: {steps}
accounting:
  discretization: 1e-3
"""
    if budget:
        text += "budget:\n" + "".join(f"  {line}\n" for line in budget.strip().splitlines())
    return text


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its stdout, stripped."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_ENV})
    return done.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or with None, delete) ``files``, commit everything; the new commit's id."""
    for name, text in files.items():
        target = repo / name
        if text is None:
            git(repo, "rm", "-q", name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        git(repo, "add", name)
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Git without the user's configuration, and none of a GitHub runner's variables (a
    test module imports this fixture to use it)."""
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "RUNNER_TEMP"):
        monkeypatch.delenv(name, raising=False)
