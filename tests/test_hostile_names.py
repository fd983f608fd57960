"""Hostile file names, titles and revision names from a pull request: through ``privspec
action`` on a real repository, and through ``diff``, ``check`` and ``validate``, nothing
they say becomes Markdown markup, a second comment marker, a mention, or a workflow
command in the log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from git_repo import commit, git, init_repo
from git_repo import hermetic_git as hermetic_git  # an autouse fixture
from markdown_it import MarkdownIt
from markdown_it.token import Token

from privspec.cli import main as privspec_main
from privspec.report.escaping import WORD_JOINER, escape_markdown, markdown_code, markdown_fenced
from privspec.spec.diagnostics import printable
from privspec.workflows.pull_request import (
    COMMENT_LIMIT,
    COMMENT_MARKER,
    Section,
    comment_from_sections,
    comment_length,
    fitted_comment,
)

#: File names (each ends in .privspec.yaml) that try to rewrite the comment or the log.
HOSTILE = [
    "0\n<!--\nx",
    "x`<img src=x onerror=alert(1)>`y",
    "<details><summary>open me",
    "# heading",
    "a\n# heading",
    COMMENT_MARKER,
    "```\n<b>fence</b>",
    "ping @octo-org",
    "see #123",
    "::error file=README.md,line=1::forged",
    "x\n::add-mask::secret",
    "y##[add-mask]secret",
]
#: A title with the same tricks (titles come from the spec's text).
TITLE = "Counts @octo-org/team #42 <img src=x> <!-- privspec-action --> ::warning::w"


#: The HTML privspec writes itself: the marker and the collapsed details of a diff.
OWN_HTML = {COMMENT_MARKER, "<details><summary>Details: the trade-off table and every spec "
            "change</summary>", "</details>"}


def gaussian_spec(sigma: float, title: str = "One Gaussian count") -> str:
    """A spec whose evaluation is closed-form (fast)."""
    return (f"privspec: 1\ntitle: {title!r}\nunit: one person\nneighbouring: add-or-remove\n"
            f"mechanism:\n  gaussian: {{sigma: {sigma}, sensitivity: 1.0}}\n"
            "budget:\n  max_mu: 0.3\n")


def _name(index: int, hostile: str) -> str:
    return f"specs/{index:02d}{hostile}.privspec.yaml"


def _tokens(markdown: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(markdown)


def _walk(tokens: list[Token]) -> list[Token]:
    out = []
    for token in tokens:
        out.append(token)
        out.extend(_walk(token.children or []))
    return out


def _shown(tokens: list[Token]) -> str:
    """Every text a reader sees (text, code spans, code blocks), word joiners removed."""
    parts = [t.content for t in _walk(tokens) if t.type in ("text", "code_inline", "fence")]
    return "\n".join(parts).replace(WORD_JOINER, "")


def _assert_inert_markdown(markdown: str, headings: int) -> list[Token]:
    """No HTML, image or link, exactly ``headings`` headings, at most one marker, no
    mention or issue reference GitHub would link."""
    tokens = _tokens(markdown)
    kinds = [t.type for t in _walk(tokens)]
    html = {t.content.strip() for t in _walk(tokens) if t.type in ("html_block", "html_inline")}
    assert html <= OWN_HTML
    assert "image" not in kinds and "link_open" not in kinds
    assert kinds.count("heading_open") == headings
    assert markdown.count("<!--") == markdown.count(COMMENT_MARKER) <= 1
    texts = "\n".join(t.content for t in _walk(tokens) if t.type == "text")
    assert not re.search(r"@[A-Za-z0-9]", texts)  # (GitHub links none in code)
    assert not re.search(r"#[0-9]", texts)
    return tokens


def _assert_log_lines(text: str, *, allowed: tuple[str, ...] = (), stopped: bool = False
                      ) -> None:
    """No line a runner would run as a workflow command (other than ``allowed``); with
    ``stopped`` (commands stopped), only no line that starts with ``::``."""
    for line in text.splitlines():
        if line in allowed:
            continue
        assert not line.lstrip().startswith("::"), line
        assert stopped or "##[" not in line, line


def test_action_comment_and_log_keep_hostile_names_as_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    root = init_repo(tmp_path / "repo")
    renamed_from = "specs/old @octo-org <!-- x -->.privspec.yaml"
    titled = "specs/titled.privspec.yaml"
    base = commit(root, {renamed_from: gaussian_spec(2.0), titled: gaussian_spec(2.0)}, "base")
    git(root, "checkout", "-q", "-b", "hostile-@octo-org")
    files: dict[str, str | None] = {
        _name(i, hostile): gaussian_spec(2.0 + i / 10, TITLE) for i, hostile in enumerate(HOSTILE)}
    files[_name(99, "```\n<b>fence</b>")] = "privspec: 1\ntitle: [\n"  # invalid: a fenced block
    files[titled] = gaussian_spec(2.0, TITLE)
    git(root, "mv", renamed_from, "specs/new ````name <!-- privspec-action -->.privspec.yaml")
    head = commit(root, files, "hostile names")
    monkeypatch.chdir(root)
    comment_file, summary = tmp_path / "comment.md", tmp_path / "summary.md"
    code = privspec_main(["action", "--base", base, "--head", "hostile-@octo-org",
                          "--comment-file", str(comment_file), "--summary-file", str(summary),
                          "--github-output", ""])
    assert code == 2  # the invalid spec
    captured = capfd.readouterr()
    comment = comment_file.read_text(encoding="utf-8")
    assert comment.startswith(COMMENT_MARKER + "\n")
    sections = len(HOSTILE) + 3
    tokens = _assert_inert_markdown(comment, headings=1 + sections)
    shown = _shown(tokens)
    for hostile in HOSTILE:
        assert " ".join(_name(HOSTILE.index(hostile), hostile).split()) in shown
    assert "specs/new ````name <!-- privspec-action -->.privspec.yaml" in shown
    assert "renamed from" in comment and "old @octo-org <!-- x -->" in shown
    assert "Counts @octo-org/team #42 <img src=x>" in shown
    assert summary.read_text(encoding="utf-8") == comment + "\n"
    # the log: the comment between stop-commands and its resume line, nothing forged
    out = captured.out.splitlines()
    start = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", out[0])
    assert start and out[-1] == f"::{start.group(1)}::"
    assert head not in start.group(1)
    _assert_log_lines(captured.out, allowed=(out[0], out[-1]), stopped=True)
    _assert_log_lines(captured.err)
    assert captured.err.count("\n") == len(HOSTILE) + 2  # one line per spec over budget
    assert "x\\n::add-mask::secret" in captured.err


def test_stop_commands_token_is_random(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"a.privspec.yaml": gaussian_spec(2.0)}, "base")
    monkeypatch.chdir(root)
    tokens = set()
    for _ in range(2):
        assert privspec_main(["action", "--base", base, "--comment-file",
                              str(tmp_path / "c.md"), "--summary-file", ""]) == 0
        tokens.add(capsys.readouterr().out.splitlines()[0])
    assert len(tokens) == 2


def test_forty_changed_specs_fit_in_one_comment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's 40 changed specs made an 87,300-character comment; GitHub refuses
    more than 65,536: the comment keeps every spec's overview line, the job summary the rest."""
    root = init_repo(tmp_path / "repo")
    names = [f"specs/run-{i:02d}.privspec.yaml" for i in range(40)]
    base = commit(root, {name: gaussian_spec(2.0) for name in names}, "base")
    head = commit(root, {name: gaussian_spec(1.5) for name in names}, "less noise")
    monkeypatch.chdir(root)
    comment_file, summary = tmp_path / "comment.md", tmp_path / "summary.md"
    assert privspec_main(["action", "--base", base, "--head", head, "--comment-file",
                          str(comment_file), "--summary-file", str(summary)]) == 1
    comment, whole = comment_file.read_text(encoding="utf-8"), summary.read_text(encoding="utf-8")
    assert comment_length(whole) > COMMENT_LIMIT >= comment_length(comment)
    assert comment.startswith(COMMENT_MARKER + "\n") and whole.startswith(COMMENT_MARKER + "\n")
    assert "❌ **40 of 40 changed specs over budget.**" in comment
    for name in names:
        assert f"- `{name}`: Privacy got weaker: μ 0.5 → " in comment
        assert f":{name}` → `" in whole  # its section
    assert "shortened to stay within GitHub's limit of 65,536 characters" in comment
    assert "**Privacy got weaker.**" not in comment
    assert whole.count("**Privacy got weaker.**") == 40


def test_overview_is_cut_when_even_it_is_too_long() -> None:
    sections = [Section(f"specs/{'n' * 3000}{i}.privspec.yaml", "removed") for i in range(40)]
    whole = comment_from_sections(sections, "abc1234", "def5678")
    comment = fitted_comment(sections, "abc1234", "def5678", whole)
    assert comment_length(comment) <= COMMENT_LIMIT < comment_length(whole)
    listed = comment.count("`: removed")
    assert 0 < listed < 40 and f"- and {40 - listed} more changed specs" in comment
    # an emoji counts twice: GitHub may count UTF-16 code units
    assert comment_length("❌🔒") == 3


@pytest.mark.parametrize("hostile", [*HOSTILE, TITLE])
def test_markdown_helpers_keep_text_as_text(hostile: str) -> None:
    inline = f"- {escape_markdown(hostile)} and {markdown_code(hostile)}\n"
    tokens = _assert_inert_markdown(inline, headings=0)
    assert [t.type for t in tokens].count("bullet_list_open") == 1
    flat = " ".join(hostile.split())
    assert _shown(tokens).count(flat) == 2
    block = markdown_fenced(f"before\n{hostile}\nafter")
    tokens = _assert_inert_markdown(block, headings=0)
    assert [t.type for t in tokens] == ["fence"]
    assert tokens[0].content.replace(WORD_JOINER, "") == f"before\n{hostile}\nafter\n"


def _write(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path.relative_to(directory))


@pytest.mark.parametrize("hostile", [h for h in HOSTILE if "::" in h or "##[" in h or "\n" in h])
def test_plain_text_lines_of_validate_check_and_diff(
        hostile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    bad = _write(tmp_path, f"{hostile}.privspec.yaml", "privspec: 1\ntitle: [\n")
    assert privspec_main(["validate", bad]) == 2
    err = capfd.readouterr().err
    _assert_log_lines(err)
    assert len(err.splitlines()) == 2 and printable(bad) in err  # the problem, the count
    assert privspec_main(["validate", "--diagnostics-format", "github", bad]) == 2
    out = capfd.readouterr().out
    assert len(out.splitlines()) == 1 and out.startswith("::error file=")
    assert privspec_main(["validate", "--diagnostics-format", "json", bad]) == 2
    _assert_log_lines(capfd.readouterr().out)
    good = _write(tmp_path, f"good {hostile}.privspec.yaml", gaussian_spec(1.0))
    assert privspec_main(["check", good]) == 1
    captured = capfd.readouterr()
    _assert_log_lines(captured.out + captured.err)
    assert len(captured.out.splitlines()) == 1
    assert privspec_main(["evaluate", good]) == 0
    out = capfd.readouterr().out
    _assert_log_lines(out)
    assert len(out.splitlines()) == 1
    older = _write(tmp_path, f"older {hostile}.privspec.yaml", gaussian_spec(2.0, TITLE))
    assert privspec_main(["diff", older, good]) == 0
    markdown = capfd.readouterr().out
    _assert_inert_markdown(markdown, headings=1)
    _assert_log_lines(markdown)


def test_a_link_to_a_file_that_is_not_a_spec_is_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    """A pull request adds ``x.privspec.yaml -> /etc/passwd``: validate says what the link
    is and quotes nothing of the file; a link to a spec is read as before."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\nd:x:1:1::/:/bin/sh\n",
                                     encoding="utf-8")
    (tmp_path / "x.privspec.yaml").symlink_to(tmp_path / "passwd")
    (tmp_path / "real.privspec.yaml").write_text(gaussian_spec(2.0), encoding="utf-8")
    (tmp_path / "link.privspec.yaml").symlink_to("real.privspec.yaml")
    assert privspec_main(["validate", "x.privspec.yaml", "link.privspec.yaml"]) == 2
    err = capfd.readouterr().err
    assert err.splitlines() == [
        f"x.privspec.yaml:1:1: error: a symbolic link to {tmp_path / 'passwd'}, which is not a "
        "spec file (a spec's name ends in .yaml, .yml or .json); privspec reads no other file "
        "through a link [io/unreadable]", "found 1 problem in 1 of 2 specs"]
    # named directly, a file that is not a spec is not quoted either
    assert privspec_main(["validate", "passwd"]) == 2
    err = capfd.readouterr().err
    assert "root" not in err and "not a single value [spec/not-a-mapping]" in err
