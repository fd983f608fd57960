"""Workflows built on reports: budgets, comparisons of two versions of a spec, and
specs built from code."""
