"""The ``privspec`` command line. The only module that knows about the terminal,
files and exit codes: 0 fine, 1 ran but a check failed, 2 could not run.

Numerical modules are imported inside the commands that need them, so that
``privspec validate`` never imports numpy, scipy or dp-accounting.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.action import action
from privspec.cli.files import write_atomically as _write_atomically
from privspec.errors import Code, PrivspecError
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

app = typer.Typer(
    name="privspec",
    help="Turn a *.privspec.yaml mechanism description into an honest privacy report.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_CANNOT_RUN = 2

app.command()(action)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Typer's standalone mode prints usage errors itself and exits with their code (2);
    every command ends with ``typer.Exit`` or returns (0)."""
    try:
        app(args=argv, prog_name="privspec", standalone_mode=True)
    except SystemExit as stop:
        if stop.code is None:
            return EXIT_OK
        return stop.code if isinstance(stop.code, int) else EXIT_CANNOT_RUN
    return EXIT_OK  # pragma: no cover - standalone mode always exits


# --- commands: validate, schema (spec language) -----------------------------


class DiagnosticsFormatChoice(StrEnum):
    """How ``validate`` prints problems."""

    gcc = "gcc"
    json = "json"
    github = "github"


@app.command()
def validate(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files (*.privspec.yaml) to check.", show_default=False)],
    diagnostics_format: Annotated[DiagnosticsFormatChoice, typer.Option(
        "--diagnostics-format",
        help="gcc: one FILE:LINE:COL line per problem on stderr; json: a JSON array on "
        "stdout; github: GitHub Actions annotations on stdout.",
        case_sensitive=False)] = DiagnosticsFormatChoice.gcc,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No summary line, only the problems.")] = False,
) -> None:
    """Check spec files without computing anything: exit 0 if all are valid, 2 if not.

    Every problem is reported at once, one line each, with file, line, column,
    the path in the spec and what is allowed (a conflict between fields that needs
    a field with an error of its own is reported once that field is fixed). Does
    not import the numerical stack, so it is fast enough for an editor or a
    pre-commit hook.
    """
    from privspec.spec.diagnostics import Diagnostic, SpecError, format_diagnostics
    from privspec.spec.loader import load_spec

    problems: list[Diagnostic] = []
    invalid = 0
    for spec in specs:
        try:
            load_spec(spec)
        except SpecError as error:
            invalid += 1
            problems.extend(error.diagnostics)
    if diagnostics_format is DiagnosticsFormatChoice.json:
        typer.echo(format_diagnostics(problems, "json"))
    elif diagnostics_format is DiagnosticsFormatChoice.github and problems:
        typer.echo(format_diagnostics(problems, "github"))
    elif problems:
        typer.echo(format_diagnostics(problems, "gcc"), err=True)
    if not quiet:
        noun = "spec" if len(specs) == 1 else "specs"
        if invalid:
            many = "problem" if len(problems) == 1 else "problems"
            typer.echo(f"found {len(problems)} {many} in {invalid} of {len(specs)} {noun}",
                       err=True)
        else:
            typer.echo(f"{len(specs)} {noun} valid", err=True)
    raise typer.Exit(EXIT_CANNOT_RUN if invalid else EXIT_OK)


@app.command()
def schema(
    output: Annotated[str, typer.Option(
        "--output", "-o", help="Where to write the schema ('-' for stdout).")
    ] = "schemas/privspec.schema.json",
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 if the file is missing or stale.")] = False,
) -> None:
    """Write the JSON Schema of a spec (for editors), generated from the models."""
    from pathlib import Path

    from privspec.spec.schema import json_schema_text

    text = json_schema_text()
    if output == "-":
        typer.echo(text, nl=False)
        raise typer.Exit(EXIT_OK)
    path = Path(output)
    if check:
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            state = "missing" if current is None else "stale"
            typer.echo(printable(f"{output}: {state}; regenerate it with 'privspec schema -o "
                                 f"{output}'"), err=True)
            raise typer.Exit(EXIT_CHECK_FAILED)
        typer.echo(f"{printable(output)}: up to date", err=True)
        raise typer.Exit(EXIT_OK)
    try:
        _write_atomically({output: text})
    except OSError as error:
        typer.echo(f"{printable(output)}: cannot write: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"wrote {printable(output)}", err=True)

# --- commands: evaluate (numbers) -------------------------------------------


class EvaluateFormat(StrEnum):
    """How ``evaluate`` prints its numbers."""

    text = "text"
    json = "json"


def _fail(command: str, message: str) -> typer.Exit:
    """Say ``privspec COMMAND: error: MESSAGE`` on stderr, each line :func:`printable`;
    return the Exit (2) to raise."""
    lines = f"privspec {command}: error: {message}".split("\n")
    typer.echo("\n".join(printable(line) for line in lines), err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


@dataclass
class _GlobalOptions:
    """The options given before the command (``privspec --debug render …``)."""

    traceback: bool = False
    quiet: bool = False
    memory_budget: float | None = None
    time_budget: float | None = None


_OPTIONS = _GlobalOptions()


def _print_version(given: bool) -> None:
    """``privspec --version``: privspec, and the versions a report's numbers depend on."""
    if not given:
        return
    from importlib import metadata

    from privspec import __version__

    parts = [f"privspec {__version__}"]
    for package in ("dp-accounting", "numpy", "scipy"):
        try:
            parts.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:  # pragma: no cover - broken installs
            parts.append(f"{package} (not installed)")
    typer.echo(", ".join(parts))
    raise typer.Exit(EXIT_OK)


@app.callback(invoke_without_command=False)
def _options(
    context: typer.Context,
    debug: Annotated[bool, typer.Option(
        "--debug", envvar="PRIVSPEC_DEBUG",
        help="When privspec fails on a valid spec, also print the traceback (for a bug "
             "report).")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", envvar="PRIVSPEC_QUIET",
        help="No progress line on stderr (shown on a terminal once a computation has "
             "run for 2 seconds).")] = False,
    memory_budget: Annotated[float | None, typer.Option(
        "--memory-budget", envvar="PRIVSPEC_MEMORY_BUDGET", min=0.05, max=1024,
        help="Memory one computation may take, in GiB, for every spec (overrides their "
             "accounting.memory_budget; default 1).", show_default=False)] = None,
    time_budget: Annotated[float | None, typer.Option(
        "--time-budget", envvar="PRIVSPEC_TIME_BUDGET", min=1, max=86_400,
        help="Time one evaluation may take, in seconds on a 2-core laptop as estimated "
             "before it starts, for every spec (overrides their accounting.time_budget; "
             "default 60).", show_default=False)] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", envvar="PRIVSPEC_NO_CACHE",
        help="Evaluate every spec, neither reading nor keeping reports in the report "
             "cache (privspec cache info).")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=lambda given: _print_version(given),
        help="Print privspec's version and those of the numerical stack its numbers "
             "depend on, then exit.")] = False,
) -> None:
    """Turn a *.privspec.yaml mechanism description into an honest privacy report."""
    _OPTIONS.traceback, _OPTIONS.quiet = debug, quiet
    _OPTIONS.memory_budget, _OPTIONS.time_budget = memory_budget, time_budget
    if no_cache:  # for this command only
        from privspec.report.cache import bypassed

        context.with_resource(bypassed())


class _ProgressLine:
    """One line on stderr, rewritten in place, once a computation has run for 2 s: what
    is being done and how much of the run is (``progress.Overall``: never less than
    before)."""

    DELAY, INTERVAL = 2.0, 0.2

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.width = 0

    def __call__(self, what: str, fraction: float) -> None:
        now = time.monotonic()
        if now - self.start < self.DELAY or now - self.last < self.INTERVAL:
            return
        self.last = now
        line = f"privspec: {what} (run about {fraction:.0%} done, {now - self.start:.0f} s)"
        sys.stderr.write("\r" + line.ljust(self.width))
        sys.stderr.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()




def _evaluate_or_exit(command: str, spec: Spec, label: str,
                      spec_path: str | None = None) -> Report:
    """Evaluate ``spec``; the evaluator's refusal exits 2 with one line, no traceback
    (unless ``--debug``): ``FILE:LINE:COL: error: PATH: …`` when it names where in the
    spec file the cause is written."""
    from privspec.numerics import progress
    from privspec.report.cache import evaluate as evaluate_spec

    line = _ProgressLine() if sys.stderr.isatty() and not _OPTIONS.quiet else None
    try:
        with progress.reporting(None if line is None else progress.Overall(line)):
            return evaluate_spec(spec, spec_path=spec_path, memory_budget=_OPTIONS.memory_budget,
                                 time_budget=_OPTIONS.time_budget)
    except PrivspecError as error:
        raise _refused(command, error, label, spec_path) from None
    finally:
        if line is not None:
            line.close()


def _refused(command: str, error: PrivspecError, label: str,
             spec_path: str | None, *, github: bool = False) -> typer.Exit:
    """Print the evaluator's refusal of ``label`` in one line, in the diagnostics' form
    where it names a spec path (at its line and column in the file; the traceback too
    with ``--debug``): exit 2.  With ``github``, a workflow annotation on stdout."""
    from privspec.errors import EvaluationError
    from privspec.spec.diagnostics import Diagnostic, format_gcc_line, format_github_line
    from privspec.spec.loader import path_to_str

    if _OPTIONS.traceback and error.__cause__ is not None:
        import traceback

        traceback.print_exception(error.__cause__, file=sys.stderr)
    path = error.path if isinstance(error, EvaluationError) else None
    if path is None and not github:
        return _fail(command, f"{printable(label)}: cannot evaluate: {error}")
    line, column = (None if path is None else _refusal_position(spec_path, path)) or (1, 1)
    code = error.code if isinstance(error, EvaluationError) else Code.EVALUATION_REFUSED
    diagnostic = Diagnostic(label, line, column, "" if path is None else path_to_str(path),
                            f"cannot evaluate: {error}", code)
    if github:
        typer.echo(format_github_line(diagnostic))
    else:
        typer.echo(format_gcc_line(diagnostic), err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def _refusal_position(spec_path: str | None, path: tuple[str | int, ...]
                      ) -> tuple[int, int] | None:
    """(line, column) where ``path`` is written in the spec file, or the nearest part of
    it that is (a budget left at its default is not in the file: its section, or the
    mechanism, which drives the cost); None without a file."""
    from privspec.spec.loader import position_of

    if not spec_path:
        return None
    for written in (*(path[:n] for n in range(len(path), 0, -1)), ("mechanism",)):
        position = position_of(spec_path, written)
        if position is not None:
            return position
    return None


def _limit_position(spec_path: str, source: str) -> tuple[int, int]:
    """(line, column) of a violated limit: its key in the spec (``budget.max_mu``), or,
    for a limit given on the command line (``--require-tier1``), the mechanism whose
    figure exceeds it; the first line when the file does not say where."""
    import re

    written: tuple[str | int, ...] = ("mechanism",)
    if source.startswith("budget."):
        written = tuple(int(part) if part.isdigit() else part
                        for part in re.findall(r"[^.\[\]]+", source))
    return _refusal_position(spec_path, written) or (1, 1)


def _load_all_or_exit(paths: list[str]) -> list[tuple[str, Spec]]:
    """Load every spec; if any is invalid, print all their diagnostics and exit 2."""
    from privspec.spec.diagnostics import Diagnostic, SpecError, format_diagnostics
    from privspec.spec.loader import load_spec

    loaded: list[tuple[str, Spec]] = []
    problems: list[Diagnostic] = []
    for path in paths:
        try:
            loaded.append((path, load_spec(path)))
        except SpecError as error:
            problems.extend(error.diagnostics)
    if problems:
        typer.echo(format_diagnostics(problems, "gcc"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    return loaded


@app.command()
def evaluate(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files (*.privspec.yaml) to evaluate.", show_default=False)],
    output_format: Annotated[EvaluateFormat, typer.Option(
        "--format", "-f", help="text: a one-line summary per spec; json: the report model.",
        case_sensitive=False)] = EvaluateFormat.text,
) -> None:
    """Compute μ, regret, the verdict and ε(δ) for each spec (no document rendering).

    Rounding in the text summary is conservative: μ, ε, regret and advantage up.
    The JSON is the full, unrounded report model that every renderer uses.  A spec
    privspec will not evaluate is said in one line and the others still are (exit 2).
    """
    from privspec.report import formatting as fmt

    refused = 0
    for path, spec in _load_all_or_exit(specs):
        try:
            report = _evaluate_or_exit("evaluate", spec, path, spec_path=path)
        except typer.Exit:  # (said on stderr): the next specs are still evaluated
            refused += 1
            continue
        if output_format is EvaluateFormat.json:
            typer.echo(report.model_dump_json(indent=2))
            continue
        gdp = report.gdp
        if gdp.mu is None:
            head = "no finite μ"
        elif gdp.bound:
            head = f"μ = {fmt.fmt_mu(gdp.mu)} (a closed-form bound: see the report's caveats)"
        else:
            head = f"μ = {fmt.fmt_mu(gdp.mu)}, regret {fmt.fmt_regret_of(gdp)}"
        epsilons = ", ".join(f"ε = {fmt.fmt_epsilon(e.epsilon)} at δ = {fmt.fmt_given(e.delta)}"
                             for e in report.epsilons)
        # Caveats that change what the figures mean are named (the report words them);
        # the floor's, in nearly every report, is not.
        named = [w.code for w in report.warnings if w.code != "accounting/floor"]
        said = f"; caveats (see the report): {', '.join(named)}" if named else ""
        typer.echo(f"{printable(path)}: {head}, Tier {'I' if gdp.tier == 1 else 'II'}, "
                   f"advantage {fmt.fmt_advantage(gdp.advantage)}; {epsilons}{said}")
    if refused:
        raise typer.Exit(EXIT_CANNOT_RUN)


#: The largest ε ``convert`` turns into μ (μ ≈ √(2ε), well within its solver's range).
LARGEST_CONVERTED_EPSILON = 1e11
TABLE3_EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0)
TABLE3_DELTAS = (1e-5, 1e-6, 1e-9)


@app.command()
def convert(
    epsilon: Annotated[list[float] | None, typer.Option(
        "--epsilon", "-e", help="A legacy ε (repeatable).", show_default=False)] = None,
    delta: Annotated[list[float] | None, typer.Option(
        "--delta", "-d", help="A δ (repeatable).", show_default=False)] = None,
    mu: Annotated[list[float] | None, typer.Option(
        "--mu", help="A μ to convert to ε(δ) instead (repeatable).", show_default=False)] = None,
    table: Annotated[bool, typer.Option(
        "--table", help="Print Table 3 of Gomez et al. 2025: μ for ε ∈ {0.1 … 10} × δ ∈ {1e-5, 1e-6, 1e-9}."
    )] = False,
) -> None:
    """Convert between a legacy (ε, δ) claim and μ-GDP for the Gaussian mechanism.

    With --epsilon and --delta: the μ of the Gaussian mechanism that is exactly
    (ε, δ)-DP. With --mu and --delta: ε(δ) of μ-GDP. Numbers are rounded up to
    three significant digits (a larger μ or ε is the safe side).
    """
    from privspec.numerics.gdp import epsilon_from_mu_delta, mu_from_epsilon_delta

    deltas = list(delta or (TABLE3_DELTAS if table else ()))
    epsilons = list(epsilon or (TABLE3_EPSILONS if table else ()))
    problems = [f"δ must be in (0, 1), got {d:g}" for d in deltas if not 0 < d < 1]
    problems += [f"ε must be ≥ 0, got {e:g}" for e in epsilons if not e >= 0]
    # (μ of ε = 10¹¹ is about 4.5 × 10⁵; far beyond, the equation's terms overflow.)
    problems += [f"ε must be at most {LARGEST_CONVERTED_EPSILON:g}, got {e:g}"
                 for e in epsilons if e > LARGEST_CONVERTED_EPSILON]
    problems += [f"μ must be ≥ 0, got {m:g}" for m in (mu or []) if not m >= 0]
    if not deltas or not (epsilons or mu):
        problems.append("give --delta with --epsilon or --mu (or --table)")
    if problems:
        for problem in problems:
            typer.echo(printable(f"privspec convert: error: {problem}"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    from privspec.report.render import render_markdown

    tabulate = bool(epsilons) and (table or len(epsilons) * len(deltas) > 1)
    typer.echo(render_markdown(
        "markdown/convert.md.j2", deltas=deltas,
        rows=[(e, [mu_from_epsilon_delta(e, d) for d in deltas]) for e in epsilons]
        if tabulate else [],
        single=(epsilons[0], deltas[0], mu_from_epsilon_delta(epsilons[0], deltas[0]))
        if epsilons and not tabulate else None,
        from_mu=[(m, [(epsilon_from_mu_delta(m, d), d) for d in deltas]) for m in mu or []]),
        nl=False)


class TableFormat(StrEnum):
    """Formats of ``privspec table``."""

    markdown = "markdown"
    latex = "latex"
    json = "json"


@app.command()
def table(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files, one row each (e.g. examples/de-et-al-2022/*.yaml).",
        show_default=False)],
    output_format: Annotated[TableFormat, typer.Option(
        "--format", "-f", help="markdown (GFM table), latex (booktabs tabular) or json.",
        case_sensitive=False)] = TableFormat.markdown,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Write the table to FILE (atomically).",
        show_default=False)] = None,
    template_dir: Annotated[str | None, typer.Option(
        "--template-dir", metavar="DIR", help="Override markdown/table.md.j2 or "
        "latex/table.tex.j2.", show_default=False)] = None,
) -> None:
    """One before/after table for a family of specs: each spec's published claim, privspec's
    ε at the same δ, μ, regret and verdict (one row per spec, in the order given)."""
    from privspec.report.render import RenderError, render_table

    reports = [_evaluate_or_exit("table", spec, path, spec_path=path)
               for path, spec in _load_all_or_exit(specs)]
    try:
        text = render_table(reports, output_format.value, template_dir=template_dir)
    except RenderError as error:
        raise _fail("table", str(error)) from None
    _emit("table", text, output, quiet=True, inputs=specs)


# --- commands: render (reports) ---------------------------------------------


def _render_targets(formats: list[str], variant: str | None) -> list[tuple[str, str | None]]:
    """``["markdown", "latex:standalone", "json,latex"]`` -> (format, variant) pairs."""
    from privspec.report.render import FORMATS, RenderError

    targets: list[tuple[str, str | None]] = []
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


def _emit(command: str, text: str, output: str | None, *, quiet: bool = False,
          inputs: Sequence[str] = ()) -> None:
    """``text`` on stdout, or written atomically to ``output`` (then ``wrote FILE`` on
    stderr unless ``quiet``); a file that cannot be written, or is one of ``inputs``,
    exits 2 in one line."""
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        _write_atomically({output: text}, inputs=inputs)
    except OSError as error:
        raise _fail(command, f"cannot write {printable(output)}: {error.strerror or error}"
                    ) from None
    if not quiet:
        typer.echo(f"wrote {printable(output)}", err=True)


_RenderSpecs = Annotated[list[str], typer.Argument(
    metavar="SPEC", help="Spec files (*.privspec.yaml) to render.", show_default=False)]
_RenderFormats = Annotated[list[str] | None, typer.Option(
    "--format", "-f", metavar="FORMAT[:VARIANT]",
    help="markdown, latex, html, json or registry (a draft OpenDP Deployments Registry "
    "record), optionally with a variant (markdown:model-card, latex:standalone); repeat it "
    "or separate with commas for several. Default: the spec's report.formats.",
    show_default=False)]
_RenderVariant = Annotated[str | None, typer.Option(
    "--variant", help="Variant for the formats given without one: markdown: report "
    "(default) or model-card; latex: fragment (default: fragment and macros files) or "
    "standalone; or a template of --template-dir.", show_default=False)]
_RenderOutput = Annotated[str | None, typer.Option(
    "--output", "-o", metavar="FILE", help="Write the document to FILE (one spec and "
    "one format; LaTeX macros go to FILE's stem + '-macros.tex'). Default: stdout.",
    show_default=False)]
_RenderOutputDir = Annotated[str | None, typer.Option(
    "--output-dir", "-d", metavar="DIR", help="Write each document to DIR/<spec "
    "stem><suffix>: .md, -model-card.md, .tex and -macros.tex, -standalone.tex, .html, "
    ".json; Markdown's figure to -tradeoff.svg and -tradeoff.png.",
    show_default=False)]
_RenderCheck = Annotated[bool, typer.Option(
    "--check", help="Write nothing: render in memory, compare with the files of -o or "
    "--output-dir, print a unified diff and exit 1 if any is missing or stale.")]
_RenderTemplateDir = Annotated[str | None, typer.Option(
    "--template-dir", metavar="DIR", help="Templates overriding the built-in ones, "
    "same layout (markdown/report.md.j2, latex/fragment.tex.j2, ...); rendered in a "
    "sandbox.", show_default=False)]
_RenderMacroPrefix = Annotated[str | None, typer.Option(
    "--macro-prefix", metavar="NAME", help="LaTeX macro prefix, letters only (default: "
    "'privspec' + the spec file's name, e.g. privspecCifarOneZero...).",
    show_default=False)]


@app.command()
def render(
    specs: _RenderSpecs, formats: _RenderFormats = None, variant: _RenderVariant = None,
    output: _RenderOutput = None, output_dir: _RenderOutputDir = None,
    check: _RenderCheck = False, template_dir: _RenderTemplateDir = None,
    macro_prefix: _RenderMacroPrefix = None,
) -> None:
    """Render privacy reports: Markdown, LaTeX, HTML and JSON, from the evaluated spec.

    Documents go to stdout (several are separated by a blank line) unless -o or
    --output-dir is given; diagnostics go to stderr. Written Markdown shows the
    trade-off figure from files beside it (<stem>-tradeoff.svg and .png, needs
    matplotlib: pip install 'matplotlib>=3.8'); Markdown on stdout has no figure.
    LaTeX draws it with pgfplots; HTML inlines it. Nothing is written unless
    every spec loads, evaluates and renders; each file is replaced atomically.
    Exit 0 when done, 1 when --check finds a stale file, 2 when it cannot run.
    """
    from privspec.report import figures
    from privspec.report.render import RenderError

    fail = functools.partial(_fail, "render")
    if output is not None and output_dir is not None:
        raise fail("give either --output or --output-dir, not both")
    if check and output in (None, "-") and output_dir is None:
        raise fail("--check compares with files: give --output FILE or --output-dir DIR")
    if macro_prefix is not None and not macro_prefix.isalpha():
        raise fail(f"--macro-prefix is letters only, got {macro_prefix!r}")
    try:
        requested = _render_targets(formats or [], variant)
    except RenderError as error:
        raise fail(str(error)) from None

    loaded = _load_all_or_exit(specs)
    plan = _RenderPlan(output=None if output == "-" else output, output_dir=output_dir,
                       macro_prefix=macro_prefix, template_dir=template_dir,
                       plotting=figures.available())
    documents: list[tuple[str | None, str | bytes]] = []
    for path, spec in loaded:
        targets = requested or [(name, variant) for name in spec.report.formats]
        if plan.output is not None and (len(loaded) > 1 or len(targets) > 1):
            raise fail("--output takes one spec and one format; use --output-dir for more")
        report = _evaluate_or_exit("render", spec, path, spec_path=path)
        documents += plan.documents(path, report, targets, _budget_options(spec))

    if all(destination is None for destination, _ in documents):
        typer.echo("\n".join(text for _, text in documents if isinstance(text, str)), nl=False)
        raise typer.Exit(EXIT_OK)
    files: dict[str, str | bytes] = {}
    for destination, text in documents:
        assert destination is not None
        if destination in files:
            raise fail(f"two documents would be written to {printable(destination)}; "
                       "give the specs different file names")
        files[destination] = text
    if check:
        stale = _report_stale_files(files)
        if stale:
            typer.echo(f"{stale} of {len(files)} file(s) out of date; re-run without --check",
                       err=True)
            raise typer.Exit(EXIT_CHECK_FAILED)
        typer.echo(f"{len(files)} file(s) up to date", err=True)
        raise typer.Exit(EXIT_OK)
    try:
        _write_atomically(files, inputs=specs)
    except OSError as error:
        raise fail(f"cannot write {printable(error.filename or '')}: "
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

    def documents(self, path: str, report: Report, targets: list[tuple[str, str | None]],
                  global_options: Sequence[str] = ()) -> list[tuple[str | None, str | bytes]]:
        """(destination or None for stdout, text; bytes for a figure) of one spec.

        Each document prints the command that renders it again, in one canonical form
        whatever the spelling of the paths or the folder privspec was started in: run in
        the spec file's folder, with the spec's file name and the other paths relative
        to that folder (``global_options``: the budgets that override the spec's)."""
        import os

        from privspec.report import figures
        from privspec.report.render import (
            RenderError,
            default_command,
            figure_paths,
            render_documents,
            spec_stem,
        )

        out: list[tuple[str | None, str | bytes]] = []
        folder = os.path.dirname(os.path.abspath(path))
        options = (["-o", _relative_to(self.output, folder)] if self.output is not None else
                   ["--output-dir", _relative_to(self.output_dir, folder)]
                   if self.output_dir is not None else [])
        options += ["--macro-prefix", self.macro_prefix] if self.macro_prefix else []
        options += (["--template-dir", _relative_to(self.template_dir, folder)]
                    if self.template_dir is not None else [])
        # (the JSON report names its spec as the command does)
        report = report.model_copy(update={"spec_path": os.path.basename(path)})
        # Every file of this spec is <base><suffix> (with -o, the main one is -o itself).
        base = (os.path.splitext(self.output)[0] if self.output is not None else
                os.path.join(self.output_dir, spec_stem(path)) if self.output_dir is not None
                else None)
        for name, chosen in targets:
            figure_files: tuple[str, ...] | None = None
            if name == "markdown" and base is not None and self.plotting:
                figure_files = figure_paths(self.output or base + ".md")
            if ((name == "html" or (name == "markdown" and base is not None))
                    and not self.plotting and not self.missing_plot_noted):
                self.missing_plot_noted = True
                typer.echo(f"privspec render: note: no figure, matplotlib is not installed "
                           f"({figures.INSTALL_HINT})", err=True)
            try:
                rendered = render_documents(
                    report, name, variant=chosen, template_dir=self.template_dir,
                    command=default_command(report, name, chosen, options, global_options),
                    macro_prefix=self.macro_prefix,
                    figure=None if figure_files is None else
                    tuple(os.path.basename(file) for file in figure_files),
                    basename=None if base is None else os.path.basename(base))
            except RenderError as error:
                raise _fail("render", f"{printable(path)}: {error}") from None
            for document in rendered:
                main_part = document is rendered[-1]
                out.append((None if base is None else
                            self.output if self.output is not None and main_part
                            else base + document.suffix, document.text))
            drawings = (figures.figure_bytes, figures.figure_bytes,
                        figures.risk_figure_bytes, figures.risk_figure_bytes)
            for figure_file, draw, form in zip(figure_files or (), drawings,
                                               ("svg", "png", "svg", "png"), strict=False):
                if all(destination != figure_file for destination, _ in out):
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
            ("--memory-budget", _OPTIONS.memory_budget, spec.accounting.memory_budget),
            ("--time-budget", _OPTIONS.time_budget, spec.accounting.time_budget)):
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


# --- commands: plot (figures) ---------------------------------------------------


def _figure_format_or_exit(path: str, command: str) -> str:
    """The figure format of a file name (.svg, .png, .pdf), or a one-line error and exit 2."""
    import os

    from privspec.report import figures

    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension not in figures.FIGURE_FORMATS:
        typer.echo(printable(f"privspec {command}: error: {path}: a figure file ends in .svg, "
                             ".png or .pdf"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    if not figures.available():
        typer.echo(f"privspec {command}: error: figures need matplotlib: "
                   f"{figures.INSTALL_HINT}", err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    return extension


@app.command()
def plot(
    spec: Annotated[str, typer.Argument(
        metavar="SPEC", help="The spec file (*.privspec.yaml) to draw.", show_default=False)],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE", help="The figure file: .svg, .png or .pdf "
        "(written atomically).", show_default=False)],
    risk: Annotated[bool, typer.Option(
        "--risk", help="Draw the risk figure instead: the bound on an attack's success "
        "against its baseline κ (what a guess achieves), from the exact curve, from μ "
        "alone and from one (ε, δ) alone, with the report's risk scenarios.")] = False,
) -> None:
    """Draw the trade-off curve against G_μ: linear, and TPR against FPR on log–log axes.

    The exact curve (solid), the Gaussian curve G_μ of the reported μ (dashed), the
    Tier II table's rows (circles) and the best attack α* (diamond); the legend gives
    μ and regret. With --risk, the report's risk figure. Output is deterministic (no
    dates or versions), so figures can be committed. Needs matplotlib: pip install
    'privspec[plot]'. Exit 0 when written, 2 when it cannot run.
    """
    form = _figure_format_or_exit(output, "plot")
    from privspec.report import figures

    ((_, loaded),) = _load_all_or_exit([spec])
    report = _evaluate_or_exit("plot", loaded, spec, spec_path=spec)
    try:
        draw = figures.risk_figure_bytes if risk else figures.figure_bytes
        _write_atomically({output: draw(report, form)}, inputs=[spec])
    except OSError as error:
        typer.echo(printable(f"privspec plot: error: cannot write {output}: "
                             f"{error.strerror or error}"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"wrote {printable(output)}", err=True)


# --- commands: diff, check (pull requests and budgets) -----------------------


class DiffFormat(StrEnum):
    """How ``diff`` prints a comparison."""

    markdown = "markdown"
    github = "github"
    json = "json"


def _spec_from_text_or_exit(text: str, label: str) -> Spec:
    from privspec.spec.diagnostics import SpecError, format_diagnostics
    from privspec.spec.loader import load_spec_text

    try:
        return load_spec_text(text, label)
    except SpecError as error:
        typer.echo(format_diagnostics(error.diagnostics, "gcc"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None


@app.command()
def diff(
    specs: Annotated[list[str], typer.Argument(
        metavar="BASE HEAD | SPEC...", help="Two spec files to compare (old, new); with "
        "--rev, the specs to compare with their committed versions.", show_default=False)],
    rev: Annotated[str | None, typer.Option(
        "--rev", metavar="REV", help="Compare each SPEC with its version at git revision REV "
        "(e.g. origin/main), read with 'git show REV:path'.", show_default=False)] = None,
    head_rev: Annotated[str | None, typer.Option(
        "--head-rev", metavar="REV", help="With --rev: take the new version from revision "
        "REV instead of the working tree.", show_default=False)] = None,
    output_format: Annotated[DiffFormat, typer.Option(
        "--format", "-f", help="markdown: a pull-request comment or job summary; github: "
        "workflow annotations (a warning when privacy got weaker); json: the comparison "
        "with unrounded values.", case_sensitive=False)] = DiffFormat.markdown,
    fail_on_weaker: Annotated[bool, typer.Option(
        "--fail-on-weaker", help="Exit 1 when privacy got weaker in any comparison, or the "
        "numbers are not comparable.")] = False,
    plot_file: Annotated[str | None, typer.Option(
        "--plot", metavar="FILE", help="Also draw both trade-off curves (and their G_μ) on "
        "one figure: .svg, .png or .pdf; one comparison only. Needs matplotlib: pip install "
        "'privspec[plot]'.", show_default=False)] = None,
) -> None:
    """Compare two versions of a spec: μ, regret, verdict, advantage, ε(δ), the Tier II
    table, and the spec fields that changed.

    μ going up means privacy got weaker. Numbers are rounded conservatively and
    changes towards less privacy. A changed unit or neighbouring relation is
    flagged: the numbers then protect different things. Exit 0 when done (1 with
    --fail-on-weaker and a weaker result), 2 when it cannot run.
    """
    from privspec.workflows.diffing import (
        SpecDiff,
        aligned,
        diff_reports,
        github_annotations,
        json_from_diffs,
        markdown_from_diff,
    )

    fail = functools.partial(_fail, "diff")
    pairs = _diff_pairs(specs, rev, head_rev)
    plot_form = None
    if plot_file is not None:
        if len(pairs) != 1:
            raise fail("--plot draws one comparison; give one spec (or BASE HEAD)")
        plot_form = _figure_format_or_exit(plot_file, "diff")

    results: list[tuple[str, SpecDiff]] = []
    for path, old_text, old_label, new_text, new_label in pairs:
        if rev is None:
            (_, before), (_, after) = _load_all_or_exit([old_label, new_label])
        else:
            before = _spec_from_text_or_exit(old_text, old_label)
            after = (_spec_from_text_or_exit(new_text, new_label) if head_rev is not None
                     else _load_all_or_exit([path])[0][1])
        old, new = aligned(before, after)
        reports = _evaluate_or_exit("diff", old, path), _evaluate_or_exit("diff", new, path)
        results.append((path, diff_reports(before, after, *reports, before_label=old_label,
                                           after_label=new_label)))
        if plot_file is not None and plot_form is not None:
            from privspec.report.figures import comparison_bytes

            try:
                _write_atomically({plot_file: comparison_bytes(*reports, plot_form)},
                                  inputs=specs)
            except OSError as error:
                raise fail(f"cannot write {printable(plot_file)}: "
                           f"{error.strerror or error}") from None
            typer.echo(f"wrote {printable(plot_file)}", err=True)

    diffs = [d for _, d in results]
    if output_format is DiffFormat.json:
        typer.echo(json_from_diffs(diffs), nl=False)
    elif output_format is DiffFormat.github:
        for path, result in results:
            typer.echo(github_annotations(result, path))
    else:
        typer.echo("\n".join(markdown_from_diff(d) for d in diffs), nl=False)
    weaker = any(d.verdict == "weaker" or not d.comparable for d in diffs)
    raise typer.Exit(EXIT_CHECK_FAILED if fail_on_weaker and weaker else EXIT_OK)


def _diff_pairs(specs: list[str], rev: str | None, head_rev: str | None
                ) -> list[tuple[str, str, str, str, str]]:
    """What ``diff`` compares: (file, old text, old label, new text, new label) each; the
    texts are empty where the file is read from the working tree."""
    from privspec.workflows.git import DiffError, read_at_revision

    fail = functools.partial(_fail, "diff")
    if rev is None:
        if head_rev is not None:
            raise fail("--head-rev goes with --rev")
        if len(specs) != 2:
            raise fail(f"give two specs (BASE HEAD), or --rev REV with specs; got "
                       f"{len(specs)} spec{'s' if len(specs) != 1 else ''}")
        return [(specs[1], "", specs[0], "", specs[1])]
    pairs = []
    try:
        for path in specs:
            old_text, old_label = read_at_revision(path, rev)
            new_text, new_label = (read_at_revision(path, head_rev) if head_rev is not None
                                   else ("", path))
            pairs.append((path, old_text, old_label, new_text, new_label))
    except DiffError as error:
        raise fail(str(error)) from None
    return pairs


class CheckFormat(StrEnum):
    """How ``check`` prints violated limits."""

    text = "text"
    github = "github"


@app.command()
def check(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files (*.privspec.yaml) to check.", show_default=False)],
    max_mu: Annotated[float | None, typer.Option(
        "--max-mu", metavar="X", help="Largest acceptable μ (a spec without a finite μ "
        "exceeds it).", show_default=False)] = None,
    max_epsilon: Annotated[float | None, typer.Option(
        "--max-epsilon", metavar="X", help="Largest acceptable ε at --delta.",
        show_default=False)] = None,
    delta: Annotated[float | None, typer.Option(
        "--delta", metavar="D", help="The δ of --max-epsilon.", show_default=False)] = None,
    max_advantage: Annotated[float | None, typer.Option(
        "--max-advantage", metavar="A", help="Largest acceptable advantage TPR − FPR of the "
        "best attack, a probability (0.1 = 10 percentage points).", show_default=False)] = None,
    require_tier1: Annotated[bool, typer.Option(
        "--require-tier1", help="Require Tier I: μ alone tells the story.")] = False,
    max_risk: Annotated[list[str] | None, typer.Option(
        "--max-risk", metavar="RISK@PARAM=P", help="Largest acceptable success of an attack "
        "(repeatable): reidentification@N=P (among N candidates), attribute@K=P (K equally "
        "likely values), reconstruction@KAPPA=P (a guess succeeds with KAPPA), "
        "accuracy@PI=P (membership at base rate PI). E.g. reidentification@10000=0.001.",
        show_default=False)] = None,
    output_format: Annotated[CheckFormat, typer.Option(
        "--format", "-f", help="text: one line per violated limit on stdout; github: "
        "workflow error annotations.", case_sensitive=False)] = CheckFormat.text,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No line for specs within budget, no summary.")] = False,
) -> None:
    """Check specs against a privacy budget: exit 0 within budget, 1 over it, 2 on bad input.

    The limits are the spec's own 'budget:' section plus the ones given here
    (both apply). One line per violated limit: 'FILE: WHAT = ACTUAL exceeds the
    limit LIMIT (SOURCE)'. Values are compared unrounded and printed rounded
    conservatively. A spec with no limits at all passes, with a note.
    """
    from privspec.spec.diagnostics import Diagnostic, format_diagnostics
    from privspec.workflows.budget import check_spec, limits_for, limits_from_options

    try:
        extra = limits_from_options(max_mu=max_mu, max_epsilon=max_epsilon, delta=delta,
                                    max_advantage=max_advantage, require_tier1=require_tier1,
                                    max_risk=max_risk)
    except ValueError as error:
        raise _fail("check", str(error)) from None
    loaded = _load_all_or_exit(specs)
    over = refused = 0
    for path, spec in loaded:
        if not limits_for(spec, extra):
            if not quiet:
                typer.echo(f"{printable(path)}: no budget to check (no 'budget:' section and "
                           "no --max-* option)", err=True)
            continue
        try:
            outcomes = check_spec(spec, extra, spec_path=path,
                                  memory_budget=_OPTIONS.memory_budget,
                                  time_budget=_OPTIONS.time_budget)
        except PrivspecError as error:  # the evaluator's refusal, as every command's;
            _refused("check", error, path, path,  # the other specs are still checked
                     github=output_format is CheckFormat.github)
            refused += 1
            continue
        failed = [o for o in outcomes if not o.ok]
        over += bool(failed)
        for outcome in failed:
            if output_format is CheckFormat.github:
                typer.echo(format_diagnostics([Diagnostic(
                    path, *_limit_position(path, outcome.limit.source),
                    outcome.limit.source, outcome.message, Code.BUDGET_EXCEEDED)], "github"))
            else:
                typer.echo(printable(f"{path}: {outcome.message}"))
        if not failed and not quiet:
            typer.echo(printable(f"{path}: within budget: " + "; ".join(
                o.message.replace(" within the limit ", " ≤ ") for o in outcomes)), err=True)
    if refused:  # not all could be checked: no verdict on the budget (each line said why)
        raise typer.Exit(EXIT_CANNOT_RUN)
    if not quiet:
        noun = "spec" if len(specs) == 1 else "specs"
        typer.echo(f"{over} of {len(specs)} {noun} over budget" if over
                   else f"{len(specs)} {noun} within budget", err=True)
    raise typer.Exit(EXIT_CHECK_FAILED if over else EXIT_OK)


@app.command()
def export(
    spec: Annotated[str, typer.Argument(
        metavar="SPEC", help="The spec file (*.privspec.yaml) to export.", show_default=False)],
    dp_event: Annotated[bool, typer.Option(
        "--dp-event", help="Export the mechanism as dp-accounting's DpEvent (its "
        "named-tuple form as JSON), with the neighbouring relation to account it under.")
    ] = False,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Write here instead of stdout (atomically).",
        show_default=False)] = None,
) -> None:
    """Export a spec for other tools, so that anyone can re-check a report with them.

    --dp-event: the mechanism as dp-accounting's event, e.g. to run its PLD or RDP
    accountant on it: DpEvent.from_named_tuple of the JSON's "event" (read it as you
    would any untrusted file), an accountant built with its "neighboring_relation".
    What the event states more loosely than the spec is listed under "notes".
    """
    import json

    from privspec.workflows.dp_event import export_dp_event

    if not dp_event:
        raise _fail("export", "say what to export: --dp-event")
    ((_, loaded),) = _load_all_or_exit([spec])
    text = json.dumps(export_dp_event(loaded).as_json(), indent=2, ensure_ascii=False) + "\n"
    _emit("export", text, output, inputs=[spec])


from privspec.cli.cache import app as cache  # noqa: E402
from privspec.cli.calibrate import calibrate  # noqa: E402 (it uses the helpers above)
from privspec.cli.importing import app as importing  # noqa: E402

app.command()(calibrate)
app.add_typer(importing, name="import")
app.add_typer(cache, name="cache")

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
