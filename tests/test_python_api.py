"""The Python API for notebooks and training scripts: ``privspec.evaluate`` on a dict or a
``Spec``, ``privspec.spec_from_dpsgd``, ``privspec.spec_to_yaml`` and rendering, with
``import privspec`` staying light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import privspec
from privspec.report import formatting as fmt
from privspec.report.render import render
from privspec.spec.diagnostics import SpecError
from privspec.spec.loader import load_spec, load_spec_text
from privspec.spec.models import DPSGD, Spec

TRAINING = {
    "privspec": 1,
    "title": "MNIST classifier",
    "unit": "one training example",
    "neighbouring": "add-or-remove",
    "mechanism": {"dpsgd": {"noise_multiplier": 1.1, "batch_size": 256,
                            "dataset_size": 60_000, "steps": 300}},
    "report": {"deltas": [1e-5]},
    "accounting": {"discretization": 1e-3},
}


def _built() -> Spec:
    return privspec.spec_from_dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60_000,
                                    steps=300, title="MNIST classifier", deltas=[1e-5],
                                    discretization=1e-3)


def test_evaluate_takes_a_dict_a_spec_or_a_path(tmp_path: Path) -> None:
    from_dict = privspec.evaluate(TRAINING)
    from_model = privspec.evaluate(Spec.model_validate(TRAINING))
    path = tmp_path / "train.privspec.yaml"
    path.write_text(privspec.spec_to_yaml(Spec.model_validate(TRAINING)), encoding="utf-8")
    from_path = privspec.evaluate(str(path))
    assert from_dict == from_model
    assert from_dict.spec_path is None and from_path.spec_path == str(path)
    assert from_path.model_copy(update={"spec_path": None}) == from_dict
    assert from_dict.gdp.mu is not None and 0 < from_dict.gdp.mu < 1
    assert [e.delta for e in from_dict.epsilons] == [1e-5]


def test_spec_from_dpsgd_is_the_spec_a_file_would_give() -> None:
    spec = _built()
    assert spec == Spec.model_validate(TRAINING)
    assert privspec.evaluate(spec) == privspec.evaluate(TRAINING)


def test_spec_from_dpsgd_options() -> None:
    spec = privspec.spec_from_dpsgd(
        noise_multiplier=0.8, epochs=2, batch_size=100, dataset_size=10_000, title="t",
        unit="one user", description="Trained on user data.",
        budget={"max_mu": 2.0, "require_tier1": True})
    dpsgd = spec.mechanism.block
    assert isinstance(dpsgd, DPSGD)
    assert spec.unit == "one user" and spec.description == "Trained on user data."
    assert dpsgd.epochs == 2 and dpsgd.times() == 200
    assert spec.budget is not None and spec.budget.max_mu == 2.0 and spec.budget.require_tier1


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"noise_multiplier": -1.0, "sampling_rate": 0.1, "steps": 10},
     "<spec_from_dpsgd>:7:23: error: mechanism.dpsgd.noise_multiplier: must be greater than 0"),
    ({"noise_multiplier": 1.0, "sampling_rate": 0.1},
     "give 'steps' or 'epochs' (how long training runs); none was given"),
    ({"noise_multiplier": 1.0, "batch_size": 500, "dataset_size": 100, "steps": 1},
     "a batch of 500 records is larger than the dataset of 100"),
    ({"noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 1, "budget": {"max_mu": 0}},
     "budget.max_mu: must be greater than 0"),
])
def test_invalid_values_raise_spec_error_with_the_file_diagnostics(
        kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as error:
        privspec.spec_from_dpsgd(title="t", **kwargs)
    assert message in str(error.value)


def test_numpy_numbers_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    spec = privspec.spec_from_dpsgd(noise_multiplier=np.float64(1.1), batch_size=np.int64(256),
                                    dataset_size=60_000, steps=np.int32(300),
                                    title="MNIST classifier", deltas=np.array([1e-5]),
                                    discretization=1e-3)
    assert spec == _built()


def test_spec_to_yaml_round_trips_and_keeps_the_budget(tmp_path: Path) -> None:
    spec = privspec.spec_from_dpsgd(noise_multiplier=1.1, sampling_rate=0.004, steps=100,
                                    title="A title: with 'quotes' and # signs",
                                    budget={"max_epsilon": 8, "delta": 1e-5})
    text = privspec.spec_to_yaml(spec, comment="Written by train.py\nat the end of training")
    assert text.startswith("# Written by train.py\n# at the end of training\nprivspec: 1\n")
    assert "report:" not in text and "accounting:" not in text  # defaults left out
    assert "budget:\n  max_epsilon: 8" in text
    assert "    sampling: poisson\n" in text  # how batches were drawn: always stated
    path = tmp_path / "train.privspec.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_spec(path)
    assert loaded == spec and loaded.budget == spec.budget


def test_end_of_training_report_without_opacus(tmp_path: Path) -> None:
    """The README's recipe: build, evaluate, render, save."""
    spec = _built()
    report = privspec.evaluate(spec)
    markdown = render(report, "markdown")
    assert markdown.startswith("## Privacy report: MNIST classifier")
    assert fmt.fmt_mu(report.gdp.mu) in markdown
    assert render(report, "json") == report.model_dump_json(indent=2) + "\n"
    (tmp_path / "train.privspec.yaml").write_text(privspec.spec_to_yaml(spec), encoding="utf-8")
    assert load_spec_text((tmp_path / "train.privspec.yaml").read_text(encoding="utf-8")) == spec


def test_import_privspec_stays_light() -> None:
    code = (
        "import sys, privspec\n"
        "heavy = {'numpy', 'scipy', 'dp_accounting', 'pydantic', 'yaml', 'jinja2'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "spec = privspec.spec_from_dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=10,"
        " title='t')\n"
        "privspec.spec_to_yaml(spec)\n"
        "assert not {'numpy', 'scipy', 'dp_accounting'} & set(sys.modules)\n"
        "assert privspec.__all__ == ['__version__', 'calibrate', 'evaluate', "
        "'from_dp_event', 'from_opacus', 'spec_from_dpsgd', 'spec_to_yaml']\n"
        "privspec.calibrate, privspec.from_dp_event, privspec.from_opacus\n"
        "assert not {'numpy', 'scipy', 'dp_accounting'} & set(sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        privspec.nothing  # noqa: B018
