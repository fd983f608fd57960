"""The command line (``privspec …``): one typer application."""

from privspec.cli.app import app, main

__all__ = ["app", "main"]
