"""``privspec sweep --dask``: the points sent to a Dask cluster (a ``LocalCluster`` of two
worker processes) give the same bytes as the local pool."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it

ROOT = Path(__file__).resolve().parent.parent
DPSGD = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
GRID = ["--vary", "noise_multiplier=0.8,9.4", "--vary", "steps=lin:100:2000:2",
        "--vary", "batch_size=-5,1000"]  # batch_size=-5: refused points too


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A scheduler with two single-threaded worker processes importing this copy."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(ROOT))
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=":0") as local:
            yield local.scheduler_address


def _sweep(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "privspec", "--quiet", "sweep", str(DPSGD),
                           *GRID, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr


def test_dask_and_the_pool_write_the_same_bytes(tmp_path: Path, cluster: str) -> None:
    _sweep("-o", "dask.csv", "-o", "dask.json", "--dask", cluster, cwd=tmp_path)
    _sweep("-o", "pool.csv", "-o", "pool.json", "--workers", "2", cwd=tmp_path)
    for form in ("csv", "json"):
        assert (tmp_path / f"dask.{form}").read_bytes() == (tmp_path / f"pool.{form}").read_bytes()
    assert (tmp_path / "dask.csv").read_text().count(",refused,") == 4


def test_a_scheduler_file_names_the_cluster(tmp_path: Path, cluster: str) -> None:
    with distributed.Client(cluster) as client:
        client.write_scheduler_file(str(tmp_path / "scheduler.json"))
    _sweep("-o", "file.csv", "--dask-scheduler-file", "scheduler.json", cwd=tmp_path)
    _sweep("-o", "pool.csv", "--workers", "1", cwd=tmp_path)
    assert (tmp_path / "file.csv").read_bytes() == (tmp_path / "pool.csv").read_bytes()


def test_no_scheduler_at_the_address_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "privspec", "sweep", str(DPSGD), *GRID,
                           "-o", "x.csv", "--dask-scheduler-file", "missing.json"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("privspec sweep: error: cannot reach the Dask scheduler "
                                  "missing.json"), done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.csv").exists()
