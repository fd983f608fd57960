"""Every kind's numeric fields at their extremes, each run through the CLI in its own
process with 60 s and 1 GiB of address space: a report whose figures stay within the
closed-form bounds, or one located line that says what to change. Never a raw Python
message, a traceback, "a bug in privspec", or a partial output file.

The examples Hypothesis draws are few per run (each is a process of about a second);
the database keeps failures, and ``PRIVSPEC_EXTREME_EXAMPLES`` runs more.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privspec.numerics.bounds import bound_of
from privspec.spec.loader import spec_from_data
from privspec.spec.models import event_of

LIMIT_SECONDS = 60
LIMIT_BYTES = 2**30

TINY, HUGE = [1e-300, 1e-12, 1e-6], [1e6, 1e12, 1e300]
EPSILONS = [1e-9, 1e-6, 0.01, 1.0, 10.0, 100.0, 650.0, 699.0, 701.0, 1e3, 1e9]
RATES = [1e-12, 1e-9, 1e-4, 0.01, 0.5, 0.999999, 1.0]
COUNTS = [1, 2, 1000, 10**6, 10**7]
SCALES = [*TINY, 1e-3, 0.1, 1.0, 10.0, *HUGE]


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    pick = st.sampled_from
    return st.one_of(
        st.builds(lambda s, d: {"gaussian": {"sigma": s, "sensitivity": d}},
                  pick(SCALES), pick([1e-300, 1.0, 1e6, 1e300])),
        st.builds(lambda e: {"laplace": {"epsilon": e}}, pick(EPSILONS)),
        st.builds(lambda b: {"laplace": {"scale": b}}, pick(SCALES)),
        st.builds(lambda s: {"discrete_gaussian": {"sigma": s}}, pick(SCALES)),
        st.builds(lambda r: {"discrete_gaussian": {"rho": r}}, pick(SCALES)),
        st.builds(lambda e: {"discrete_laplace": {"epsilon": e}}, pick(EPSILONS)),
        st.builds(lambda e: {"pure_dp": {"epsilon": e}}, pick(EPSILONS)),
        st.builds(lambda e, d: {"approximate_dp": {"epsilon": e, "delta": d}},
                  pick([0.0, *EPSILONS]), pick([1e-300, 1e-20, 1e-6, 0.5])),
        st.builds(lambda z, q, t: {"dpsgd": {"noise_multiplier": z, "sampling_rate": q,
                                             "steps": t}},
                  pick([1e-6, 0.1, 0.5, 1.0, 10.0, 1e3, 1e6]), pick(RATES), pick(COUNTS)),
    )


def _mechanism() -> st.SearchStrategy[dict[str, Any]]:
    leaf = _leaf()
    return st.one_of(
        leaf,
        st.builds(lambda c, m: {"repeat": {"count": c, "mechanism": m}}, st.sampled_from(COUNTS),
                  leaf),
        st.builds(lambda q, m: {"poisson_sampled": {"sampling_rate": q, "mechanism": m}},
                  st.sampled_from(RATES), leaf),
        st.builds(lambda ms: {"compose": [{"mechanism": m} for m in ms]},
                  st.lists(leaf, min_size=2, max_size=4)),
    )


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def _run(tmp: Path, data: dict[str, Any]) -> tuple[int, str, Path]:
    spec_file = tmp / "extreme.privspec.yaml"
    spec_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    output = tmp / "extreme.json"
    output.unlink(missing_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "privspec.cli", "render", str(spec_file), "-f", "json",
         "-o", str(output)],
        capture_output=True, text=True, timeout=LIMIT_SECONDS, preexec_fn=_limit,
        check=False, env={**os.environ, "PRIVSPEC_QUIET": "1"})
    return result.returncode, result.stderr, output


@settings(max_examples=int(os.environ.get("PRIVSPEC_EXTREME_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(mechanism=_mechanism(), relation=st.sampled_from(["add-or-remove", "replace-one"]))
def test_extreme_specs_end_in_a_true_report_or_a_located_refusal(
        tmp_path: Path, mechanism: dict[str, Any], relation: str) -> None:
    data = {"privspec": 1, "title": "extreme", "unit": "one record",
            "neighbouring": relation, "mechanism": mechanism}
    code, err, output = _run(tmp_path, data)
    assert "Traceback" not in err and "bug in privspec" not in err, err
    if code == 2:
        lines = err.strip().splitlines()
        assert lines and all(": error: " in line for line in lines), err
        assert all("cannot evaluate" in line or line.rstrip().endswith("]")
                   for line in lines), err
        assert not output.exists()
        return
    assert code == 0, err
    report = json.loads(output.read_text(encoding="utf-8"))
    spec = spec_from_data(data)
    bound = bound_of(event_of(spec.mechanism), relation == "replace-one")
    mu = report["gdp"]["mu"]
    if mu is not None and math.isfinite(bound.mu):
        assert mu <= bound.mu * (1 + 1e-9) + 1e-300
    if math.isfinite(bound.epsilon):
        for row in report["epsilons"]:
            assert row["epsilon"] is not None
            assert row["epsilon"] <= bound.epsilon * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("mechanism", [
    {"gaussian": {"sigma": 1e-300}},
    {"dpsgd": {"noise_multiplier": 1e-6, "sampling_rate": 0.5, "steps": 10**7}},
    {"repeat": {"count": 10**7, "mechanism": {"repeat": {"count": 10**7,
                                                         "mechanism": {"pure_dp": {
                                                             "epsilon": 650}}}}}},
    {"discrete_laplace": {"epsilon": 1e-9}},
    # μ = 10⁻²⁸⁸ beside a grid release: σ = 1/μ squared overflowed (a "bug" message)
    {"compose": [{"mechanism": {"gaussian": {"sigma": 1e-12, "sensitivity": 1e-300}}},
                 {"mechanism": {"laplace": {"epsilon": 1e-9}}}]},
])
def test_known_extremes_run_within_the_limits(tmp_path: Path,
                                              mechanism: dict[str, Any]) -> None:
    data = {"privspec": 1, "title": "extreme", "unit": "one record",
            "neighbouring": "add-or-remove", "mechanism": mechanism}
    code, err, _ = _run(tmp_path, data)
    assert code in (0, 2), err
    assert "Traceback" not in err and "bug in privspec" not in err, err


def _matrix_factorization(strategy: dict[str, Any], steps: int, participation: dict[str, Any],
                          noise_multiplier: float = 1.0) -> dict[str, Any]:
    return {"matrix_factorization": {"strategy": strategy, "steps": steps,
                                     "noise_multiplier": noise_multiplier,
                                     "participation": participation}}


def _random_allocation(noise_multiplier: float, batch: int, size: int, epochs: int
                       ) -> dict[str, Any]:
    return {"dpsgd": {"sampling": "random-allocation", "noise_multiplier": noise_multiplier,
                      "batch_size": batch, "dataset_size": size, "epochs": epochs}}


# Measured on two cores shared three ways: each under 8 s.
@pytest.mark.parametrize(("unit", "mechanism"), [
    ({"records_per_unit": 10_000}, {"gaussian": {"sigma": 1.0}}),
    ({}, _matrix_factorization({"tree": {}}, 10**7, {"once": {}})),
    # refused at validation, naming min_separation and times
    ({}, _matrix_factorization({"tree": {}}, 10**7, {"separated": {"times": 10**7,
                                                                  "min_separation": 1}})),
    ({}, _matrix_factorization({"tree": {"online": True}}, 10**7,
                               {"separated": {"times": 2, "min_separation": 10**9}})),
    ({}, _matrix_factorization({"banded_toeplitz": {"coefficients": [1.0, 0.5, 0.25]}}, 10**7,
                               {"separated": {"times": 10**4, "min_separation": 1000}})),
    ({}, _matrix_factorization({"banded_toeplitz": {"coefficients": [1.0, 0.5]}}, 10**7,
                               {"cyclic_poisson": {"block": 10, "sampling_rate": 0.01}})),
    # 1,000 overlapping participations: the pattern search was a RecursionError
    ({}, _matrix_factorization({"banded_toeplitz": {"coefficients": [1.0, 0.5]}}, 1000,
                               {"separated": {"times": 1000, "min_separation": 1}}, 1e-6)),
    ({}, _matrix_factorization({"tree": {}}, 1000, {"once": {}}, 1e6)),
    ({}, _random_allocation(1.0, 1, 10**7, 1)),
    ({}, _random_allocation(1.0, 10, 100, 10**7)),
    ({}, _random_allocation(1e-6, 10, 1000, 1)),
    ({"unit_level": True}, _random_allocation(1.0, 100, 10**6, 2)),
])
def test_new_kinds_at_their_extremes_run_within_the_limits(
        tmp_path: Path, unit: dict[str, Any], mechanism: dict[str, Any]) -> None:
    data = {"privspec": 1, "title": "extreme", "unit": "one user", **unit,
            "neighbouring": "add-or-remove", "mechanism": mechanism}
    code, err, output = _run(tmp_path, data)
    assert "Traceback" not in err and "bug in privspec" not in err, err
    if code == 2:
        assert all(": error: " in line and line.rstrip().endswith("]")
                   for line in err.strip().splitlines()), err
        assert not output.exists()
        return
    assert code == 0, err
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["gdp"]["mu"] is None or report["gdp"]["mu"] > 0
