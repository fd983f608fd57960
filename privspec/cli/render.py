"""``privspec render``: the reports (Markdown, LaTeX, HTML, JSON, the registry record)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.loading import audited_or_exit, evaluate_or_exit, load_all_or_exit
from privspec.cli.options import OPTIONS
from privspec.cli.output import EXIT_CHECK_FAILED, EXIT_OK, fail
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

#: (format, variant) of one document to render.
Target = tuple[str, str | None]
#: Where a document goes (None: stdout) and its text (bytes for a figure).
Document = tuple[str | None, str | bytes]

Specs = Annotated[list[str], typer.Argument(
    metavar="SPEC", help="Spec files (*.privspec.yaml) to render.", show_default=False)]
Formats = Annotated[list[str] | None, typer.Option(
    "--format", "-f", metavar="FORMAT[:VARIANT]",
    help="markdown, latex, html, json or registry (a draft OpenDP Deployments Registry "
    "record), optionally with a variant (markdown:model-card, latex:standalone); repeat it "
    "or separate with commas for several. Default: the spec's report.formats.",
    show_default=False)]
Variant = Annotated[str | None, typer.Option(
    "--variant", help="Variant for the formats given without one: markdown: report "
    "(default) or model-card; latex: fragment (default: fragment and macros files) or "
    "standalone; or a template of --template-dir.", show_default=False)]
Output = Annotated[str | None, typer.Option(
    "--output", "-o", metavar="FILE", help="Write the document to FILE (one spec and "
    "one format; LaTeX macros go to FILE's stem + '-macros.tex'). Default: stdout.",
    show_default=False)]
OutputDir = Annotated[str | None, typer.Option(
    "--output-dir", "-d", metavar="DIR", help="Write each document to DIR/<spec "
    "stem><suffix>: .md, -model-card.md, .tex and -macros.tex, -standalone.tex, .html, "
    ".json; Markdown's figures to -tradeoff.svg, -tradeoff.png, -risk.svg and -risk.png.",
    show_default=False)]
Check = Annotated[bool, typer.Option(
    "--check", help="Write nothing: render in memory, compare with the files of -o or "
    "--output-dir, print a unified diff and exit 1 if any is missing or stale.")]
TemplateDir = Annotated[str | None, typer.Option(
    "--template-dir", metavar="DIR", help="Templates overriding the built-in ones, "
    "same layout (markdown/report.md.j2, latex/fragment.tex.j2, ...); rendered in a "
    "sandbox.", show_default=False)]
MacroPrefix = Annotated[str | None, typer.Option(
    "--macro-prefix", metavar="NAME", help="LaTeX macro prefix, letters only (default: "
    "'privspec' + the spec file's name, e.g. privspecCifarOneZero...).",
    show_default=False)]


def render(
    specs: Specs, formats: Formats = None, variant: Variant = None,
    output: Output = None, output_dir: OutputDir = None,
    check: Check = False, template_dir: TemplateDir = None,
    macro_prefix: MacroPrefix = None,
) -> None:
    """Render privacy reports (Markdown, LaTeX, HTML, JSON, a registry record) of the specs.

    Documents go to stdout (several are separated by a blank line) unless -o or
    --output-dir is given; diagnostics go to stderr. Written Markdown shows the
    trade-off and risk figures from files beside it (<stem>-tradeoff.svg and .png,
    <stem>-risk.svg and .png; they need matplotlib: pip install 'matplotlib>=3.8');
    Markdown on stdout has none. LaTeX draws them with pgfplots; HTML inlines them. Nothing is written unless
    every spec loads, evaluates and renders; each file is replaced atomically.
    Exit 0 when done, 1 when --check finds a stale file, 2 when it cannot run.
    """
    from privspec.report import figures

    requested = _requested_or_exit(formats or [], variant, output, output_dir, check,
                                   macro_prefix)
    loaded = load_all_or_exit(specs)
    plan = _RenderPlan(output=None if output == "-" else output, output_dir=output_dir,
                       macro_prefix=macro_prefix, template_dir=template_dir,
                       plotting=figures.available())
    documents: list[Document] = []
    for path, spec in loaded:
        targets = requested or [(name, variant) for name in spec.report.formats]
        if plan.output is not None and (len(loaded) > 1 or len(targets) > 1):
            raise fail("render", "--output takes one spec and one format; use --output-dir "
                       "for more")
        report = evaluate_or_exit("render", spec, path, spec_path=path)
        if spec.audit is not None:
            report = audited_or_exit(spec, path, report)
        documents += plan.documents(path, report, targets, _budget_options(spec))
    if all(destination is None for destination, _ in documents):
        typer.echo("\n".join(text for _, text in documents if isinstance(text, str)), nl=False)
        raise typer.Exit(EXIT_OK)
    files = _files_or_exit(documents)
    if check:
        _check_files_and_exit(files)
    _write_or_exit(files, specs)


def _requested_or_exit(formats: list[str], variant: str | None, output: str | None,
                       output_dir: str | None, check: bool, macro_prefix: str | None
                       ) -> list[Target]:
    """The documents asked for on the command line (none: each spec's own formats); one
    line and exit 2 when the options contradict each other."""
    from privspec.report.render import RenderError

    failed = functools.partial(fail, "render")
    if output is not None and output_dir is not None:
        raise failed("give either --output or --output-dir, not both")
    if check and output in (None, "-") and output_dir is None:
        raise failed("--check compares with files: give --output FILE or --output-dir DIR")
    if macro_prefix is not None and not macro_prefix.isalpha():
        raise failed(f"--macro-prefix is letters only, got {macro_prefix!r}")
    try:
        return _render_targets(formats, variant)
    except RenderError as error:
        raise failed(str(error)) from None


def _render_targets(formats: list[str], variant: str | None) -> list[Target]:
    """``["markdown", "latex:standalone", "json,latex"]`` -> (format, variant) pairs."""
    from privspec.report.render import FORMATS, RenderError

    targets: list[Target] = []
    for item in formats:
        for word in filter(None, (part.strip() for part in item.split(","))):
            name, _, own = word.partition(":")
            name = name.lower()
            if name not in FORMATS:
                raise RenderError(f"unknown format {name!r}; choose from {', '.join(FORMATS)}"
                                  " (a variant after ':', e.g. latex:standalone)")
            chosen = own or variant
            if name in ("json", "registry") and chosen and not own:
                chosen = None  # --variant applies to the formats that have it
            if (name, chosen) not in targets:
                targets.append((name, chosen))
    return targets


def _files_or_exit(documents: list[Document]) -> dict[str, str | bytes]:
    """The documents by file; two for one file exit 2."""
    files: dict[str, str | bytes] = {}
    for destination, text in documents:
        assert destination is not None
        if destination in files:
            raise fail("render", f"two documents would be written to "
                       f"{printable(destination)}; give the specs different file names")
        files[destination] = text
    return files


def _check_files_and_exit(files: Mapping[str, str | bytes]) -> None:
    """``--check``: exit 1 when a file is missing or stale (each said), else 0."""
    stale = _report_stale_files(files)
    if stale:
        typer.echo(f"{stale} of {len(files)} file(s) out of date; re-run without --check",
                   err=True)
        raise typer.Exit(EXIT_CHECK_FAILED)
    typer.echo(f"{len(files)} file(s) up to date", err=True)
    raise typer.Exit(EXIT_OK)


def _write_or_exit(files: Mapping[str, str | bytes], specs: Sequence[str]) -> None:
    """Every file written, or none (exit 2 in one line); ``wrote FILE`` for each."""
    from privspec.cli.files import write_atomically

    try:
        write_atomically(files, inputs=specs)
    except OSError as error:
        raise fail("render", f"cannot write {printable(error.filename or '')}: "
                   f"{error.strerror or error}") from None
    for destination in files:
        typer.echo(f"wrote {printable(destination)}", err=True)


@dataclass
class _RenderPlan:
    """Where ``render`` puts each spec's documents (None: stdout) and how it renders them."""

    output: str | None
    output_dir: str | None
    macro_prefix: str | None
    template_dir: str | None
    plotting: bool
    missing_plot_noted: bool = False

    def documents(self, path: str, report: Report, targets: list[Target],
                  global_options: Sequence[str] = ()) -> list[Document]:
        """(destination or None for stdout, text; bytes for a figure) of one spec.

        Each document prints the command that renders it again, in one canonical form
        whatever the spelling of the paths or the folder privspec was started in: run in
        the spec file's folder, with the spec's file name and the other paths relative
        to that folder (``global_options``: the budgets that override the spec's)."""
        import os

        from privspec.report.naming import spec_stem

        options = self._command_options(os.path.dirname(os.path.abspath(path)))
        # (the JSON report names its spec as the command does)
        report = report.model_copy(update={"spec_path": os.path.basename(path)})
        # Every file of this spec is <base><suffix> (with -o, the main one is -o itself).
        base = (os.path.splitext(self.output)[0] if self.output is not None else
                os.path.join(self.output_dir, spec_stem(path)) if self.output_dir is not None
                else None)
        out: list[Document] = []
        for name, chosen in targets:
            out += self._documents_of(path, report, (name, chosen), base,
                                      (options, global_options), out)
        return out

    def _command_options(self, folder: str) -> list[str]:
        """The options of the command a document prints, paths relative to ``folder``."""
        options = (["-o", _relative_to(self.output, folder)] if self.output is not None else
                   ["--output-dir", _relative_to(self.output_dir, folder)]
                   if self.output_dir is not None else [])
        options += ["--macro-prefix", self.macro_prefix] if self.macro_prefix else []
        options += (["--template-dir", _relative_to(self.template_dir, folder)]
                    if self.template_dir is not None else [])
        return options

    def _documents_of(self, path: str, report: Report, target: Target, base: str | None,
                      options: tuple[list[str], Sequence[str]], earlier: list[Document]
                      ) -> list[Document]:
        """One target's documents, and Markdown's figures unless ``earlier`` has them
        (``options``: the printed command's, and the global ones)."""
        import os

        from privspec.report import figures
        from privspec.report.render import (
            RenderError,
            default_command,
            figure_paths,
            render_documents,
        )

        name, chosen = target
        figure_files: tuple[str, ...] | None = None
        if name == "markdown" and base is not None and self.plotting:
            figure_files = figure_paths(self.output or base + ".md",
                                        audit=report.audit is not None)
        if ((name == "html" or (name == "markdown" and base is not None))
                and not self.plotting and not self.missing_plot_noted):
            self.missing_plot_noted = True
            typer.echo(f"privspec render: note: no figure, matplotlib is not installed "
                       f"({figures.INSTALL_HINT})", err=True)
        try:
            rendered = render_documents(
                report, name, variant=chosen, template_dir=self.template_dir,
                command=default_command(report, name, chosen, *options),
                macro_prefix=self.macro_prefix,
                figure=None if figure_files is None else
                tuple(os.path.basename(file) for file in figure_files),
                basename=None if base is None else os.path.basename(base))
        except RenderError as error:
            raise fail("render", f"{printable(path)}: {error}") from None
        out: list[Document] = []
        for document in rendered:
            main_part = document is rendered[-1]
            out.append((None if base is None else
                        self.output if self.output is not None and main_part
                        else base + document.suffix, document.text))
        drawings = (figures.figure_bytes, figures.figure_bytes,
                    figures.risk_figure_bytes, figures.risk_figure_bytes,
                    figures.audit_figure_bytes, figures.audit_figure_bytes)
        for figure_file, draw, form in zip(figure_files or (), drawings,
                                           ("svg", "png") * 3, strict=False):
            if all(destination != figure_file for destination, _ in [*earlier, *out]):
                # (the report and its model card share the figures)
                out.append((figure_file, draw(report, form)))
        return out


def _relative_to(path: str, folder: str) -> str:
    """``path`` relative to ``folder`` with '/' separators (absolute where it has no
    relative form: another drive)."""
    import os
    from pathlib import PurePath

    try:
        return PurePath(os.path.relpath(os.path.abspath(path), folder)).as_posix()
    except ValueError:  # pragma: no cover - Windows, another drive
        return PurePath(os.path.abspath(path)).as_posix()


def _budget_options(spec: Spec) -> list[str]:
    """The global options (``--memory-budget``, ``--time-budget``, or their environment
    variables) that override a budget of ``spec`` with another value: they may change
    its figures, so the printed command states them."""
    options = []
    for option, given, own in (
            ("--memory-budget", OPTIONS.memory_budget, spec.accounting.memory_budget),
            ("--time-budget", OPTIONS.time_budget, spec.accounting.time_budget)):
        if given is not None and given != own:
            options += [option, str(int(given)) if given.is_integer() else repr(given)]
    return options


def _report_stale_files(files: Mapping[str, str | bytes]) -> int:
    """Compare each file with what was rendered: a unified diff on stdout and one line on
    stderr per missing or stale file; returns how many there are."""
    import difflib

    stale = 0
    for destination, text in files.items():
        current: str | bytes | None
        try:
            if isinstance(text, bytes):
                with open(destination, "rb") as binary:
                    current = binary.read()
            else:
                with open(destination, encoding="utf-8", newline="") as stream:
                    current = stream.read()
        except OSError:
            current = None
        if current == text:
            continue
        stale += 1
        state = "missing" if current is None else "stale"
        if isinstance(text, bytes) or isinstance(current, bytes):
            typer.echo(f"{printable(destination)}: {state} (figure)", err=True)
            continue
        diff = difflib.unified_diff(
            (current or "").splitlines(keepends=True), text.splitlines(keepends=True),
            fromfile=f"{destination} (committed)" if current is not None else "/dev/null",
            tofile=f"{destination} (rendered now)")
        typer.echo("".join(diff), nl=False)
        typer.echo(f"{printable(destination)}: {state}", err=True)
    return stale
