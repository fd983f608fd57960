"""The report layer: the frozen report model, the evaluation that fills it, and its
rendering (wording, conservative number formatting, templates and figures)."""

from privspec.report.model import Report

__all__ = ["Report"]
