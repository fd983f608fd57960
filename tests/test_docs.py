"""The documentation site: its reference pages are generated from the code and current,
it builds with warnings as errors, and every command it shows runs."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_COMMAND_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def test_the_reference_pages_are_generated_and_current() -> None:
    done = subprocess.run([sys.executable, str(DOCS / "generate_reference.py"), "--check"],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, check=False, cwd=ROOT,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "spec" / "index.html").is_file()


def _pages_with_commands() -> list[Path]:
    return [page for page in sorted(DOCS.rglob("*.md"))
            if _COMMAND_BLOCK.search(page.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page", _pages_with_commands(), ids=lambda p: p.stem)
def test_every_command_in_the_docs_runs(tmp_path: Path, page: Path) -> None:
    """A page's commands run in order in a copy of the examples (a later one may read
    what an earlier one wrote, as a reader's would)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "build").mkdir()
    for block in _COMMAND_BLOCK.findall(page.read_text(encoding="utf-8")):
        for command in (line for line in block.splitlines() if line.strip()):
            words = shlex.split(command)
            assert words[0] == "privspec", f"{page.name}: only privspec commands: {command}"
            done = subprocess.run([sys.executable, "-m", "privspec", *words[1:]], cwd=tmp_path,
                                  capture_output=True, text=True, check=False, timeout=300)
            assert done.returncode == 0, f"{page.name}: {command}\n{done.stderr}"


def test_the_python_in_the_docs_runs(tmp_path: Path) -> None:
    """Each page's Python blocks, run in order as one script."""
    for page in sorted(DOCS.rglob("*.md")):
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
        if not blocks:
            continue
        done = subprocess.run([sys.executable, "-c", "\n".join(blocks)], cwd=tmp_path,
                              capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, f"{page.name}:\n{done.stderr[-2000:]}"


def _listed_commands(capsys: pytest.CaptureFixture[str], *group: str) -> list[str]:
    """The commands ``privspec [GROUP] --help`` lists, in its order."""
    from privspec.cli.app import main

    main([*group, "--help"])
    listing = capsys.readouterr().out.split("Commands:\n", 1)[1]
    return [line.split()[0] for line in listing.splitlines() if line.startswith("  ")]


def test_every_command_has_a_readme_row_and_a_reference_section_in_help_order(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`privspec --help` lists its commands in the README table's order, and the README
    and the command-line reference leave none of them, nor a group's commands, out."""
    listed = _listed_commands(capsys)
    groups = {"import", "cache"}
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    rows = list(dict.fromkeys(re.findall(r"^\| `privspec (?:--[\w-]+ )*([a-z][\w-]*)",
                                         readme, re.MULTILINE)))
    assert sorted(rows) == sorted(listed)
    assert [name for name in listed if name not in groups] == [
        name for name in rows if name not in groups]
    reference = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    lines = [f"{name} {sub}" if name in groups else name for name in listed
             for sub in (_listed_commands(capsys, name) if name in groups else [""])]
    sections = re.findall(r"^## `privspec ([^`]+)`", reference, re.MULTILINE)
    assert sorted(sections) == sorted(line.strip() for line in lines)


def test_the_python_in_the_docs_imports_only_the_public_api() -> None:
    """What the docs teach to import is the public API ARCHITECTURE.md names, never a
    module that may move."""
    public = {("privspec.render", "render"), ("privspec.diagnostics", "SpecError"),
              ("privspec.spec", "Spec"), ("privspec.report", "Report")}
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    for page in pages:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"),
                                re.DOTALL):
            for module, names in re.findall(r"^from (privspec\S*) import (.+)$", block,
                                            re.MULTILINE):
                for name in names.split(","):
                    assert (module, name.strip()) in public, f"{page.name}: {module}.{name}"
