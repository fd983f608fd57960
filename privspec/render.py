"""Public import path of the renderer (``from privspec.render import render``); the
code is in :mod:`privspec.report.render`."""

from privspec.report.render import FORMATS, RenderError, render

__all__ = ["FORMATS", "RenderError", "render"]
