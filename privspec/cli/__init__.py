"""The command line (``privspec …``): ``privspec.cli.app`` builds the typer application."""

from privspec.cli.app import main

__all__ = ["main"]
