"""Score files from strangers (``privspec audit``): headers, shapes and sizes refused
before anything is allocated for them, memory a small multiple of the file's size, a
MemoryError a located refusal, quoted text cut short, keys given twice refused."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spec_texts import ONE_GAUSSIAN

import privspec
from privspec.cli import main
from privspec.spec.diagnostics import SpecError
from privspec.workflows.audit import read_scores

SPEC = ONE_GAUSSIAN



def _refused_with_peak(path: Path) -> tuple[SpecError, int]:
    """The refusal of the score file at ``path``, and the peak memory its reading took
    (tracemalloc's)."""
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as raised:
            read_scores(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return raised.value, peak

@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "gaussian.privspec.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def _refusal(capsys: pytest.CaptureFixture[str], spec: Path, scores: Path) -> str:
    """The one line ``privspec audit`` refuses ``scores`` with (exit 2, nothing on stdout)."""
    code = main(["audit", str(spec), "--scores", str(scores)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and len(captured.err.splitlines()) == 1, captured
    return captured.err.strip()


def _npz(path: Path, npy: bytes) -> Path:
    """An NPZ file of arrays 'out' (fine) and 'in' (the .npy bytes ``npy``)."""
    fine = _npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (20,), }") + bytes(160)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("out.npy", fine)
        archive.writestr("in.npy", npy)
    return path


def _npy(header: bytes, version: int = 1, length: int | None = None) -> bytes:
    """A .npy file's magic and header (its length ``length`` unless given otherwise)."""
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    size = len(header) if length is None else length
    return (b"\x93NUMPY" + bytes([version, 0])
            + size.to_bytes(2 if version == 1 else 4, "little") + header)


def test_an_npy_header_longer_than_numpy_reads_is_refused_unread(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A header claiming 100 MB (a few kilobytes deflated) was read whole before NumPy
    refused it."""
    huge = 100_000_000
    scores = _npz(tmp_path / "header.npz",
                  _npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (20,), }"
                       + b" " * huge, version=2))
    error, peak = _refused_with_peak(scores)
    assert peak < 10_000_000 + scores.stat().st_size
    (problem,) = error.diagnostics
    assert problem.path == "in" and problem.code == "io/too-large"
    assert problem.message.startswith("its .npy header has 100,000,")
    assert problem.message.endswith("bytes, more than the 10,000 NumPy reads (np.save writes a short one)")
    assert "10,000 NumPy reads" in _refusal(capsys, spec, scores)


def test_an_npy_shape_too_large_is_refused_from_its_header(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A header claiming 10¹² doubles over 160 bytes was an allocation error, exit 1."""
    scores = _npz(tmp_path / "shape.npz", _npy(
        b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }")
        + bytes(160))
    assert _refusal(capsys, spec, scores) == (
        f"{scores}:1:1: error: in: its header gives the shape (1000000000000,): "
        "1,000,000,000,000 values, more than 50,000,000 scores [io/too-large]")


def _under_memory_limit(tmp_path: Path, scores: Path, megabytes: int) -> subprocess.CompletedProcess[str]:
    """``read_scores(scores)`` in a process allowed ``megabytes`` of address space beyond
    what it holds once privspec is imported."""
    script = textwrap.dedent(f"""
        import resource, sys
        from privspec.spec.diagnostics import SpecError
        from privspec.workflows.audit import read_scores
        with open("/proc/self/status") as status:
            held = next(int(line.split()[1]) for line in status if line.startswith("VmSize"))
        limit = held * 1024 + {megabytes} * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            scores = read_scores({str(scores)!r})
        except SpecError as error:
            print(error)
            sys.exit(2)
        print(scores.members.size, scores.non_members.size)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env={"OPENBLAS_NUM_THREADS": "1",
                                             "PYTHONPATH": str(Path(privspec.__file__).parents[1])},
                          timeout=300)


@pytest.fixture
def quoted_csv(tmp_path: Path) -> Path:
    """1,000,000 quoted rows (read row by row), 16 MB."""
    path = tmp_path / "quoted.csv"
    path.write_text('"score","member"\n' + '"0.123456789","1"\n"0.987654321","0"\n' * 500_000,
                    encoding="utf-8")
    return path


@pytest.fixture
def short_json(tmp_path: Path) -> Path:
    """5,000,000 one-digit scores as JSON, 10 MB."""
    path = tmp_path / "short.json"
    path.write_text('{"in": [' + ",".join("1" * 2_500_000) + '], "out": ['
                    + ",".join("0" * 2_500_000) + "]}", encoding="utf-8")
    return path


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize("name", ["quoted_csv", "short_json"])
def test_scores_are_read_in_a_small_multiple_of_their_size(
        tmp_path: Path, name: str, request: pytest.FixtureRequest) -> None:
    """200 MB beside the interpreter reads 16 MB of quoted CSV rows or 10 MB of JSON
    (a list of rows, a list of floats took 14 and 26 times the file; a read took 2 GB
    of address space whatever the file's size)."""
    scores: Path = request.getfixturevalue(name)
    done = _under_memory_limit(tmp_path, scores, 200)
    assert done.returncode == 0 and done.stderr == "", done
    assert done.stdout.split() in (["500000", "500000"], ["2500000", "2500000"])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_memory_error_while_reading_is_a_located_refusal(tmp_path: Path,
                                                          quoted_csv: Path) -> None:
    done = _under_memory_limit(tmp_path, quoted_csv, 20)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert done.stdout == (f"{quoted_csv}:1:1: error: not enough memory to read "
                           f"{quoted_csv.stat().st_size:,} bytes of scores: run privspec "
                           "with more memory, or give fewer scores [io/too-large]\n")


def test_more_lines_than_scores_allowed_are_refused_before_they_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from privspec.workflows import audit

    monkeypatch.setattr(audit, "MAX_SCORES", 100)
    path = tmp_path / "many.csv"
    path.write_text('"score","member"\n' + "0.5,1\n0.25,0\n" * 60, encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        read_scores(str(path))
    assert str(raised.value) == (f"{path}:102:1: error: more than 100 scores (lines after "
                                 "the header) [io/too-large]")
    path = tmp_path / "many.json"
    path.write_text('{"in": [' + ",".join(["0.5"] * 101) + '], "out": [1]}', encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        read_scores(str(path))
    assert str(raised.value) == (f"{path}:1:8: error: more than 100 scores [io/too-large]")


@pytest.mark.parametrize("header", [
    "a" * 17_000_000 + ",member",  # one name of 17 MB
    ",".join(f"column {i}" for i in range(20_000)),  # 20,000 columns
    '"' + "b" * 1_000_000 + '",member',  # a quoted name longer than csv's field limit
])
def test_a_huge_header_line_makes_a_short_refusal(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str) -> None:
    scores = tmp_path / "header.csv"
    scores.write_text(header + "\n" + "0.5,1\n" * 30, encoding="utf-8")
    line = _refusal(capsys, spec, scores)
    assert len(line) < 400 + len(str(scores)) and line.startswith(f"{scores}:1:1: error: ")


def test_a_long_cell_is_quoted_short(spec: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "cell.csv"
    scores.write_text('score,member\n"' + "x" * 1_000_000 + '",1\n' + "0.5,1\n0.5,0\n" * 20,
                      encoding="utf-8")
    line = _refusal(capsys, spec, scores)
    assert line.startswith(f"{scores}:2:1: error: ") and len(line) < 400 + len(str(scores))


def test_a_key_given_twice_in_a_score_file_is_refused(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Python's json kept the last 'in' silently: the scores audited were a guess."""
    scores = tmp_path / "twice.json"
    scores.write_text('{"in": [' + ", ".join(["1"] * 20) + '],\n "out": [' +
                      ", ".join(["0"] * 20) + '],\n "in": [' + ", ".join(["5"] * 20) + "]}",
                      encoding="utf-8")
    assert _refusal(capsys, spec, scores) == (
        f"{scores}:3:2: error: the key 'in' is given twice in one object (JSON readers keep "
        "the last one silently): give each key once [scores/invalid]")
    scores.write_text('{"in": [' + ", ".join(["1"] * 20) + '], "out": [' +
                      ", ".join(["0"] * 20) + '], "meta": [{"run": 1, "run": 2}]}',
                      encoding="utf-8")
    assert "the key 'run' is given twice" in _refusal(capsys, spec, scores)


SCORES = '"in": [' + ", ".join(["0.5"] * 20) + '], "out": [' + ", ".join(["0.25"] * 20) + "]"
ZEROS = ",".join(["0"] * 5_000_000)  # 10 MB


@pytest.mark.parametrize(("text", "says"), [
    (f"[{ZEROS}]", "1:1: error: a JSON score file is an object with lists 'in' and 'out'"),
    (f'{{{SCORES}, "meta": [[{ZEROS}]]}}', "1:248: error: a value of more than "
     "1,048,576 characters that is not a list of numbers"),
    (f'{{{SCORES}, "meta": {{"a": [{ZEROS}]}}}}', "1:247: error: a value of more than "
     "1,048,576 characters that is not a list of numbers"),
])
def test_json_that_is_no_list_of_numbers_is_refused_before_it_is_built(
        tmp_path: Path, text: str, says: str) -> None:
    """Objects of 10 MB of JSON that are not the score lists were built whole (a float
    or a list for every two characters) before the file was refused."""
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    error, peak = _refused_with_peak(path)
    assert str(error).startswith(f"{path}:{says}")
    assert peak < 4 * len(text)


ITEMS = st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                  st.integers(-10**30, 10**30).map(str),
                  st.sampled_from(["NaN", "-Infinity", '"x,]"', "true", "null", "[1, [2]]",
                                   '{"a": [1]}', "1e999", "01", "1.", "-", ",", "]", ""]))


@st.composite
def json_documents(draw: st.DrawFn) -> str:
    """Score files as people and strangers write them: lists of numbers with odd items,
    odd spacing, other members, now and then a syntax error."""
    space = draw(st.sampled_from(["", " ", "\n  ", "\t"]))
    members = []
    for key in draw(st.permutations(["in", "out", "meta"])):
        items = draw(st.lists(ITEMS, min_size=0, max_size=30))
        members.append(f'"{key}"{space}:{space}[{space}' + f",{space}".join(items) + "]")
    return "{" + f",{space}".join(members) + draw(st.sampled_from(["}", "}\n", "", "}}"]))


@settings(max_examples=300, deadline=None)
@given(json_documents(), st.sampled_from([4, 16, 1 << 20]))
def test_json_score_lists_read_as_python_reads_them(text: str, chunk: int) -> None:
    """The lists read a chunk at a time hold what ``json`` reads, a number for a number
    and a refusal for all else (chunks of 4 and 16 characters cut every list)."""
    from privspec.workflows import audit

    try:
        data = json.loads(text, parse_int=float, parse_constant=float)
        expected: object = [[float(x) if isinstance(x, float) else None for x in data[key]]
                            for key in ("in", "out")]
    except json.JSONDecodeError:
        expected = "invalid"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(audit, "_CHUNK", chunk)
        try:
            members = audit._json_members(text)
            got: object = [[None if math.isnan(x) else x for x in members[key].read.tolist()]
                           for key in ("in", "out")]
        except json.JSONDecodeError:
            got = "invalid"
    if isinstance(expected, list):
        expected = [[None if x is None or math.isnan(x) else x for x in values]
                    for values in expected]
    assert got == expected


@pytest.mark.parametrize("suffix", [".csv", ".json", ".npz"])
def test_a_long_column_name_is_quoted_short(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    scores = tmp_path / f"scores{suffix}"
    if suffix == ".npz":
        with zipfile.ZipFile(scores, "w") as archive:
            archive.writestr("member.npy", _npy(b"{'descr': '<f8', 'fortran_order': False, "
                                                b"'shape': (20,), }") + bytes(160))
    else:
        scores.write_text("score,member\n" + "0.5,1\n0.5,0\n" * 20 if suffix == ".csv" else
                          '{"score": [0.5], "member": [1]}', encoding="utf-8")
    code = main(["audit", str(spec), "--scores", str(scores), "--score-column", "s" * 100_000])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and len(err) < 600 + len(str(scores)), err
