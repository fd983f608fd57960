"""privspec: declarative, tight, readable differential-privacy reports.

``privspec.evaluate(spec_or_path)`` returns a :class:`privspec.report.model.Report`.
The numerical stack (numpy, scipy, dp-accounting) is imported only when
``evaluate`` is first used, so that ``import privspec`` stays light.

For training scripts: ``privspec.spec_from_dpsgd(noise_multiplier=..., batch_size=...,
dataset_size=..., steps=..., title=...)`` builds a spec, ``privspec.spec_to_yaml(spec)``
writes it as a file, and ``privspec.report.render.render(report, "markdown")`` renders a report
(``privspec.workflows.builders``; imported on first use).  ``privspec.calibrate(spec,
vary="noise_multiplier", targets=["mu=1"])`` finds the least private value of a field
that meets the targets (``privspec.workflows.calibration``).  ``privspec.from_dp_event(event,
unit=..., neighbouring=..., sampling=...)`` and ``privspec.from_opacus(history, ...)`` build
a spec from what a run recorded (``privspec.workflows.importing``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from privspec.version import __version__

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec
    from privspec.workflows.builders import spec_from_dpsgd, spec_to_yaml
    from privspec.workflows.calibration import calibrate
    from privspec.workflows.importing import spec_from_dp_event as from_dp_event
    from privspec.workflows.importing import spec_from_opacus as from_opacus

#: Names imported from their module on first use (PEP 562), to keep ``import privspec`` light.
_LAZY = {"spec_from_dpsgd": "privspec.workflows.builders:spec_from_dpsgd",
         "spec_to_yaml": "privspec.workflows.builders:spec_to_yaml",
         "calibrate": "privspec.workflows.calibration:calibrate",
         "from_dp_event": "privspec.workflows.importing:spec_from_dp_event",
         "from_opacus": "privspec.workflows.importing:spec_from_opacus"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name].split(":")
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'privspec' has no attribute {name!r}")


def evaluate(spec: Spec | str | Any, **kwargs: Any) -> Report:
    """Evaluate a spec (a ``Spec``, a dict, or a path to a YAML file) into a ``Report``.

    The report is kept in privspec's report cache and read from it the next time
    (``cache=False`` or ``PRIVSPEC_NO_CACHE=1``: neither; ``privspec.report.cache``)."""
    from privspec.report.cache import evaluate as _evaluate

    return _evaluate(spec, **kwargs)


__all__ = ["__version__", "calibrate", "evaluate", "from_dp_event", "from_opacus",
           "spec_from_dpsgd", "spec_to_yaml"]
