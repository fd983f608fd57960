"""``privspec sweep``: each row is what ``privspec evaluate`` says of the edited spec,
in grid order whatever the scheduling; a stopped sweep resumes to the same bytes; a
point the spec does not allow is a row; bad ``--vary`` is one located line, exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from privspec.cli.app import main
from privspec.spec.editing import with_number
from privspec.spec.knobs import parse_path
from privspec.spec.loader import load_yaml_text
from privspec.workflows.sweep import SweepError, parse_axis

ROOT = Path(__file__).resolve().parent.parent
DPSGD = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
#: A small DP-SGD grid (cheap points), and a larger one for stopping halfway.
SMALL = ["--vary", "noise_multiplier=0.8,9.4", "--vary", "steps=lin:100:2000:2"]
LARGE = ["--vary", "steps=lin:100:1600:16"]


def _sweep(*args: str, cwd: Path, **options: Any) -> subprocess.CompletedProcess[str]:
    """``privspec sweep`` as a process of its own (its pool's workers import this copy)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "privspec", "--quiet", "sweep", *args],
                          cwd=cwd, env=environment, capture_output=True, text=True,
                          check=False, **options)


def test_every_row_is_what_evaluate_says_of_the_edited_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = _sweep(str(DPSGD), *SMALL, "--vary", "batch_size=1000,16384", "-o", "grid.json",
                  "-o", "grid.csv", "--workers", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "grid.json").read_text())
    fields = [parse_path(axis["field"]) for axis in document["vary"]]
    assert [row["point"] for row in document["rows"]] == list(range(8))
    text = DPSGD.read_text()
    for row in document["rows"]:
        edited = text
        for field, value in zip(fields, row["values"], strict=True):
            edited = with_number(edited, field, value)
        (tmp_path / "point.privspec.yaml").write_text(edited)
        capsys.readouterr()
        assert main(["evaluate", "--format", "json", str(tmp_path / "point.privspec.yaml")]) == 0
        report = json.loads(capsys.readouterr().out)
        assert row["status"] == "ok"
        assert (row["mu"], row["regret"], row["tier"], row["advantage"]) == (
            report["gdp"]["mu"], report["gdp"]["regret"], report["gdp"]["tier"],
            report["gdp"]["advantage"])
        assert row["epsilons"] == [[e["delta"], e["epsilon"]] for e in report["epsilons"]]
        assert row["caveats"] == [w["code"] for w in report["warnings"]]
        assert row["spec_sha256"] == report["spec_sha256"]
    csv_lines = (tmp_path / "grid.csv").read_text().splitlines()
    assert csv_lines[0].startswith("point,mechanism.dpsgd.noise_multiplier,"
                                   "mechanism.dpsgd.steps,mechanism.dpsgd.batch_size,status,mu,")
    first = document["rows"][0]
    assert csv_lines[1].split(",")[:6] == ["0", "0.8", "100", "1000", "ok", repr(first["mu"])]
    assert not (tmp_path / "grid.json.journal").exists()


def test_one_worker_and_two_write_the_same_bytes(tmp_path: Path) -> None:
    for workers in ("1", "2"):
        done = _sweep(str(DPSGD), *SMALL, "-o", f"w{workers}.csv", "-o", f"w{workers}.json",
                      "--workers", workers, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    for form in ("csv", "json"):
        assert (tmp_path / f"w1.{form}").read_bytes() == (tmp_path / f"w2.{form}").read_bytes()


def _stop_halfway(tmp_path: Path, how: signal.Signals) -> subprocess.CompletedProcess[str]:
    """Start the large sweep, stop it (``how``) once two rows are in its journal, and
    return what it printed."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "privspec", "--quiet", "sweep", str(DPSGD), *LARGE,
         "-o", "stopped.csv", "--workers", "1"], cwd=tmp_path, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    journal = tmp_path / "stopped.csv.journal"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 3:
            break
        time.sleep(0.02)
    if how is signal.SIGKILL:
        os.killpg(process.pid, how)  # the parent and its workers, as a lost machine
    else:
        process.send_signal(how)  # the parent only, as Ctrl-C would (workers ignore it)
    out, err = process.communicate(timeout=600)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _grandchildren(pid: int) -> list[int]:
    """The children of ``pid``'s children (its pool's workers, forked by the pool's
    server), from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    children = [child for child, parent in parents.items() if parent == pid]
    return [child for child, parent in parents.items() if parent in children]


def test_a_killed_worker_stops_the_sweep_and_resume_finishes_it(tmp_path: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "privspec", "--quiet", "sweep", str(DPSGD), *LARGE,
         "-o", "killed.csv", "--workers", "1"], cwd=tmp_path, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = tmp_path / "killed.csv.journal"
    while process.poll() is None and not (
            journal.exists() and len(journal.read_text().splitlines()) >= 3):
        time.sleep(0.02)
    workers = _grandchildren(process.pid)
    assert workers, "the sweep ended before a worker could be killed"
    for worker in workers:
        os.kill(worker, signal.SIGKILL)
    _, err = process.communicate(timeout=600)
    assert process.returncode == 2, err
    assert "a worker process died" in err and "--resume" in err and "Traceback" not in err
    assert not (tmp_path / "killed.csv").exists()
    resumed = _sweep(str(DPSGD), *LARGE, "-o", "killed.csv", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert _sweep(str(DPSGD), *LARGE, "-o", "whole.csv", cwd=tmp_path).returncode == 0
    assert (tmp_path / "killed.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_a_sweep_stopped_halfway_resumes_to_the_same_bytes(tmp_path: Path,
                                                          how: signal.Signals) -> None:
    stopped = _stop_halfway(tmp_path, how)
    assert not (tmp_path / "stopped.csv").exists()
    if how is signal.SIGINT:
        assert stopped.returncode == 130
        assert "--resume" in stopped.stderr and "Traceback" not in stopped.stderr
    kept = len((tmp_path / "stopped.csv.journal").read_text().splitlines()) - 1
    assert 2 <= kept < 16, "the sweep was not stopped halfway"
    resumed = subprocess.run(
        [sys.executable, "-m", "privspec", "sweep", str(DPSGD), *LARGE, "-o", "stopped.csv",
         "--workers", "2", "--resume"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{kept} of 16 points kept" in resumed.stderr
    whole = _sweep(str(DPSGD), *LARGE, "-o", "whole.csv", "--workers", "2", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    assert (tmp_path / "stopped.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()


def test_a_point_the_spec_does_not_allow_is_a_row_with_its_refusal(tmp_path: Path) -> None:
    done = _sweep(str(DPSGD), "--vary", "noise_multiplier=-1,9.4", "-o", "grid.json",
                  "--workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    refused, fine = json.loads((tmp_path / "grid.json").read_text())["rows"]
    assert refused["status"] == "refused" and refused["mu"] is None
    assert refused["refusal"].startswith("mechanism.dpsgd.noise_multiplier: ")
    assert fine["status"] == "ok" and fine["mu"] is not None


@pytest.mark.parametrize(("vary", "expected"), [
    ("noise_multiplier", "write PATH=VALUES"),
    ("sampling_rate=0.1", "'sampling_rate' names no field"),
    ("noise_multiplier=1,x", "'x' is not a number"),
    ("noise_multiplier=geo:1:2:3", "'geo' is not lin or log"),
    ("noise_multiplier=lin:1:2", "needs START:STOP:COUNT"),
    ("noise_multiplier=log:0:2:3", "START and STOP above 0"),
    ("noise_multiplier=lin:1:2:0", "COUNT must be a whole number"),
    ("steps=10.5", "steps takes whole numbers, not 10.5"),
])
def test_a_bad_vary_is_one_line_exit_2_and_no_file(tmp_path: Path, vary: str,
                                                  expected: str) -> None:
    done = _sweep(str(DPSGD), "--vary", vary, "-o", "grid.csv", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert done.stderr.startswith(f"privspec sweep: error: --vary {vary!r}")
    assert sorted(os.listdir(tmp_path)) == []


def test_values_are_lists_or_ranges_and_whole_numbers_for_integer_fields() -> None:
    data = load_yaml_text(DPSGD.read_text())
    assert parse_axis(data, "noise_multiplier=0.8, 1,1.2").values == (0.8, 1.0, 1.2)
    assert parse_axis(data, "dpsgd.noise_multiplier=log:1e-3:1e-1:3").values == (
        0.001, 0.01, 0.1)
    assert parse_axis(data, "steps=lin:100:1000:4").values == (100, 400, 700, 1000)
    assert parse_axis(data, "steps=log:1:4:5").values == (1, 2, 3, 4)  # rounded, no repeats
    assert all(type(v) is int for v in parse_axis(data, "steps=lin:1:10:3").values)
    with pytest.raises(SweepError, match="takes whole numbers"):
        parse_axis(data, "batch_size=1.5")


def test_the_maps_draw_the_tier_boundary_and_are_the_same_bytes_each_time() -> None:
    from privspec.report.sweep_figures import sweep_figure_bytes

    fields = [("mechanism.dpsgd.noise_multiplier", [0.5, 1.0, 2.0]),
              ("mechanism.dpsgd.sampling_rate", [0.001, 0.01])]
    mu = [0.9, 3.0, 0.4, 1.2341, None, 0.5]
    regret = [0.02, 0.0, 0.005, 0.03, None, 1e-4]
    svg = sweep_figure_bytes(fields, mu, regret, "svg")
    assert svg == sweep_figure_bytes(fields, mu, regret, "svg")
    text = svg.decode()
    assert "Tier I/II boundary (regret = 0.01)" in text and "noise_multiplier" in text
    assert ">1.24<" in text.replace(" ", "")  # cells print μ rounded up, as reports do
    assert sweep_figure_bytes(fields, mu, regret, "svg", threshold=0.001) != svg
    lines = sweep_figure_bytes(fields[:1], mu[:3], regret[:3], "png")
    assert lines.startswith(b"\x89PNG")


def test_resume_keeps_only_rows_of_the_same_points(tmp_path: Path) -> None:
    """A journal's rows are reused for points of the same sweep (key and values); a row
    of another grid (or budgets, or privspec) and a torn last line are not."""
    from privspec.workflows.sweep import points, row, sweep_key
    from privspec.workflows.sweep_runs import Journal

    data = load_yaml_text(DPSGD.read_text())
    axes = (parse_axis(data, "steps=100,200,300"),)
    grid, key = points(data, axes, (None, None)), sweep_key(data, axes, (None, None))
    other = points(data, axes, (2.0, None))  # another memory budget: other keys
    journal = Journal(str(tmp_path / "j"), key)
    journal.add(row(grid[0], None, "r0"))
    journal.add(row(other[1], None, "r1"))
    journal.close()
    with open(tmp_path / "j", "a") as handle:
        handle.write('{"point": 2, "tor')
    resumed = Journal(str(tmp_path / "j"), key, grid)
    resumed.close()
    assert (resumed.rows, resumed.unused) == ({0: row(grid[0], None, "r0")}, 1)
    elsewhere = Journal(str(tmp_path / "j"), sweep_key(data, axes, (2.0, None)), other)
    elsewhere.close()
    assert (elsewhere.rows, elsewhere.unused) == ({}, 1)
    fresh = Journal(str(tmp_path / "j"), key)
    fresh.close()
    assert fresh.rows == {} and json.loads((tmp_path / "j").read_text()) == {
        "privspec sweep journal": 2, "sweep": key}


def test_parquet_holds_the_csv_columns(tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")  # the test extra installs it
    done = _sweep(str(DPSGD), "--vary", "noise_multiplier=-1,9.4", "-o", "grid.parquet",
                  "-o", "grid.csv", "--workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import csv

    with open(tmp_path / "grid.csv", newline="") as handle:
        expected = list(csv.DictReader(handle))
    rows = parquet.read_table(tmp_path / "grid.parquet").to_pylist()
    assert [list(row) for row in rows] == [list(row) for row in expected]
    for row, line in zip(rows, expected, strict=True):
        assert {k: "" if v is None else v if isinstance(v, str) else json.dumps(v)
                for k, v in row.items()} == line


def test_csv_text_a_spreadsheet_would_run_is_made_inert() -> None:
    from privspec.workflows.sweep import Point, csv_text, row

    data = load_yaml_text(DPSGD.read_text())
    axes = (parse_axis(data, "steps=100"),)
    refused = row(Point(0, data, (100,), "k"), None, '=HYPERLINK("http://x", "y")')
    line = csv_text(axes, [refused]).splitlines()[1]
    assert line.endswith(''''=HYPERLINK(""http://x"", ""y"")"''')


def test_pool_workers_have_one_blas_thread_and_this_process_is_left_alone() -> None:
    from concurrent.futures import ProcessPoolExecutor

    from privspec.workflows import sweep_runs

    before = os.environ.get("OPENBLAS_NUM_THREADS")
    sweep_runs.start_pool_server()
    with ProcessPoolExecutor(1, mp_context=sweep_runs._context(),
                             initializer=sweep_runs._worker_started) as pool:
        seen = pool.submit(os.getenv, "OPENBLAS_NUM_THREADS").result()
        assert pool.submit(os.getenv, "OMP_NUM_THREADS").result() == seen == "1"
    assert os.environ.get("OPENBLAS_NUM_THREADS") == before


def test_a_strategy_file_is_found_beside_the_spec_from_any_folder(tmp_path: Path) -> None:
    """The workers find a file the spec names beside the spec, not in the folder the sweep
    was started from (every point was refused with "no such file")."""
    import hashlib

    import numpy as np

    folder = tmp_path / "specs"
    folder.mkdir()
    np.save(folder / "strategy.npy", np.eye(8))
    digest = hashlib.sha256((folder / "strategy.npy").read_bytes()).hexdigest()
    (folder / "mf.privspec.yaml").write_text(
        "privspec: 1\ntitle: t\nunit: one user\nneighbouring: add-or-remove\nmechanism:\n"
        "  matrix_factorization:\n"
        f"    strategy: {{matrix: {{file: strategy.npy, sha256: '{digest}'}}}}\n"
        "    steps: 8\n    noise_multiplier: 2\n    participation: {once: {}}\n",
        encoding="utf-8")
    done = _sweep(str(folder / "mf.privspec.yaml"), "--vary", "noise_multiplier=1,4",
                  "--workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[1:]
    assert [row.split(",")[2:4] for row in rows] == [["ok", "1.0"], ["ok", "0.25"]], rows
