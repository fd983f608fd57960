"""privspec: declarative, tight, readable differential-privacy reports.

``privspec.evaluate(spec_or_path)`` returns a :class:`privspec.report.Report`.
The numerical stack (numpy, scipy, dp-accounting) is imported only when
``evaluate`` is first used, so that ``import privspec`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from privspec.report import Report
    from privspec.spec import Spec


def evaluate(spec: Spec | str | Any, **kwargs: Any) -> Report:
    """Evaluate a spec (a ``Spec``, a dict, or a path to a YAML file) into a ``Report``."""
    from privspec.evaluation import evaluate as _evaluate

    return _evaluate(spec, **kwargs)


__all__ = ["__version__", "evaluate"]
