"""``privspec cache info|clear``: the evaluated reports kept between commands
(``privspec.report.cache``, in ``privspec.report.store``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from privspec.report.store import Usage

app = typer.Typer(name="cache", no_args_is_help=True, add_completion=False,
                  help="The report cache: every command keeps the report it evaluated, so "
                  "that the next one on an unchanged spec reads it instead (in "
                  "$PRIVSPEC_CACHE_DIR, else $XDG_CACHE_HOME/privspec or ~/.cache/privspec; "
                  "least recently used reports beyond 200 MiB are removed; a directory another "
                  "user owns or may write is not used). --no-cache or PRIVSPEC_NO_CACHE=1 "
                  "bypasses it.")


def _size(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _usage_or_exit(command: str, clear: bool) -> Usage:
    """What the cache holds (``clear``: held, now removed); exit 2 with one line when its
    directory cannot be read."""
    from privspec.report import store

    try:
        return store.clear() if clear else store.usage()
    except OSError as error:
        typer.echo(f"privspec cache {command}: error: {error}", err=True)
        raise typer.Exit(2) from None


@app.command()
def info() -> None:
    """Print where the cache is, how many reports it holds and their size, and why it
    is not used when another user owns or may write its directory."""
    from privspec.report.store import MAX_BYTES

    usage = _usage_or_exit("info", clear=False)
    typer.echo(f"directory: {usage.directory}\nreports: {usage.entries}\n"
               f"size: {_size(usage.size)} (at most {_size(MAX_BYTES)})")
    if usage.untrusted is not None:
        typer.echo(f"not used: {usage.untrusted}")


@app.command()
def clear() -> None:
    """Remove every report from the cache (nothing else in its directory)."""
    removed = _usage_or_exit("clear", clear=True)
    typer.echo(f"removed {removed.entries} reports ({_size(removed.size)}) from {removed.directory}")
