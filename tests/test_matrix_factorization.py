"""matrix_factorization: its sensitivities against closed forms and brute force over every
participation pattern, its accounting against the events it equals, its refusals."""

from __future__ import annotations

import hashlib
import itertools
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privspec
from privspec.spec.strategies import matrix_sensitivity, toeplitz_sensitivity, tree_sensitivity

ROOT = Path(__file__).resolve().parent.parent
HEAD = {"privspec": 1, "title": "t", "unit": "one user", "neighbouring": "add-or-remove"}


def tree_matrix(steps: int, online: bool = False) -> np.ndarray:
    """Every node of the binary tree over ``steps`` leaves padded to a power of 2, or
    ``online`` only those whose leaves are all steps, one row each (built from the
    definition, not from privspec)."""
    width = 1
    while width < steps:
        width *= 2
    rows = []
    size = 1
    while size <= width:
        for start in range(0, width, size):
            if not online or start + size <= steps:
                rows.append([1.0 if start <= leaf < start + size else 0.0
                             for leaf in range(steps)])
        size *= 2
    return np.array(rows)


def toeplitz_matrix(coefficients: list[float], steps: int) -> np.ndarray:
    return np.array([[coefficients[i - j] if 0 <= i - j < len(coefficients) else 0.0
                      for j in range(steps)] for i in range(steps)])


def brute_force(matrix: np.ndarray, times: int, separation: int) -> float:
    """max over every pattern of at most ``times`` steps at least ``separation`` apart of
    ‖Σ_{i∈π} c_i‖ (one direction: the worst case when CᵀC ≥ 0)."""
    steps = matrix.shape[1]
    best = 0.0
    for count in range(1, times + 1):
        for pattern in itertools.combinations(range(steps), count):
            if all(b - a >= separation for a, b in itertools.pairwise(pattern)):
                best = max(best, float(np.linalg.norm(matrix[:, list(pattern)].sum(axis=1))))
    return best


def is_root_rounded_up(value: float, square: int) -> bool:
    """Whether ``value`` is √``square`` rounded up to a double: the sensitivity, never
    below the true one."""
    below = math.nextafter(value, 0.0)
    return Fraction(below) ** 2 < square <= Fraction(value) ** 2


@pytest.mark.parametrize("steps", range(1, 65))
def test_tree_single_participation_is_sqrt_of_levels(steps: int) -> None:
    found = tree_sensitivity(steps)
    assert found.exact and is_root_rounded_up(found.value, math.ceil(math.log2(steps)) + 1)
    assert found.value == pytest.approx(np.linalg.norm(tree_matrix(steps), axis=0).max())
    online = tree_sensitivity(steps, online=True)
    assert online.exact and is_root_rounded_up(online.value, math.floor(math.log2(steps)) + 1)
    assert online.value == pytest.approx(
        np.linalg.norm(tree_matrix(steps, online=True), axis=0).max())


@pytest.mark.parametrize("online", [False, True])
@pytest.mark.parametrize(("steps", "times", "separation"),
                         [(n, k, b) for n in (3, 5, 8, 11, 12) for k in (2, 3, 4)
                          for b in (1, 2, 3, 5)])
def test_tree_several_participations_equal_brute_force(steps: int, times: int,
                                                       separation: int, online: bool) -> None:
    found = tree_sensitivity(steps, times, separation, online)
    truth = brute_force(tree_matrix(steps, online), times, separation)
    assert found.exact and found.value == pytest.approx(truth, rel=1e-12)


def separated_square_sums(gram: np.ndarray, times: int, separation: int) -> float:
    """max over every pattern of at most ``times`` steps at least ``separation`` apart of
    Σ_{i,j∈π} G_ij, by depth-first search (built from the definition, not from privspec)."""
    steps = gram.shape[0]
    best = 0.0

    def extend(chosen: list[int], total: float) -> None:
        nonlocal best
        best = max(best, total)
        if len(chosen) == times:
            return
        for step in range(chosen[-1] + separation if chosen else 0, steps):
            added = gram[step, step] + 2 * sum(gram[step, other] for other in chosen)
            extend([*chosen, step], total + added)

    extend([], 0.0)
    return best


@pytest.mark.parametrize("online", [False, True])
@pytest.mark.parametrize(("steps", "times", "separation"),
                         [(24, 3, 3), (29, 4, 4), (37, 3, 6), (40, 4, 7), (45, 3, 9),
                          (33, 5, 5), (64, 3, 17), (50, 2, 15),
                          (23, 3, 11), (23, 4, 7), (29, 4, 13)])  # (the level bound is
                                                                  # loose online)
def test_tree_search_equals_every_pattern_where_blocks_matter(
        steps: int, times: int, separation: int, online: bool) -> None:
    """Separations that are not powers of 2, several blocks, partial last blocks: the
    search is exact, where the level-by-level bound is not always."""
    matrix = tree_matrix(steps, online)
    truth = separated_square_sums(matrix.T @ matrix, times, separation)
    found = tree_sensitivity(steps, times, separation, online)
    assert found.exact and found.value**2 == pytest.approx(truth, rel=1e-12)


def _patterns(steps: int, times: int, separation: int) -> int:
    """How many patterns of 1 to ``times`` steps at least ``separation`` apart there are."""
    return sum(math.comb(max(0, steps - (m - 1) * (separation - 1)), m)
               for m in range(1, times + 1))


@settings(max_examples=1000, derandomize=True)
@given(steps=st.integers(1, 70), times=st.integers(1, 5), separation=st.integers(1, 40),
       online=st.booleans())
def test_tree_never_below_every_pattern(steps: int, times: int, separation: int,
                                        online: bool) -> None:
    """Padded or online trees, partial last blocks, b a power of 2 or not, b ≥ n, k above
    the participations possible: Σ m² is never below the most a pattern attains (that
    would be an optimistic claim), and equals it whenever it is said to be exact.  (k is
    lowered until at most 20,000 patterns remain, for the brute force.)"""
    while times > 1 and _patterns(steps, times, separation) > 20_000:
        times -= 1
    matrix = tree_matrix(steps, online)
    truth = separated_square_sums(matrix.T @ matrix, times, separation)
    found = tree_sensitivity(steps, times, separation, online)
    assert round(found.value**2, 9) >= truth
    assert not found.exact or found.value**2 == pytest.approx(truth, rel=1e-12)


def test_tree_without_separation_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    """b = 1: the level-by-level maximisation is exact, and takes no search (which took
    seconds for 128 steps and 3 participations)."""
    from privspec.spec import strategies

    def searched(*_: object) -> int:
        raise AssertionError("searched")

    monkeypatch.setattr(strategies, "_tree_search", searched)
    found = strategies.tree_sensitivity.__wrapped__(128, 3, 1, True)
    assert found.exact and round(found.value**2) == 62  # 62: the search's own value


def test_tree_search_is_tighter_than_the_level_bound_for_gboard() -> None:
    found = tree_sensitivity(2000, 6, 314, online=True)
    assert found.exact and round(found.value**2) == 79 and "exact" in found.how


def test_tree_beyond_the_search_states_an_upper_bound() -> None:
    """Separation 2 over 3000 steps: 1500 blocks, too many sets to try: the level-by-level
    bound, stated as one unless attained."""
    found = tree_sensitivity(3000, 4, 2, online=True)
    assert found.value**2 >= 4 * 12  # four participations, each in up to 12 nodes
    assert found.exact or "upper bound" in found.how


@pytest.mark.parametrize("coefficients", [[1.0], [1.0, 0.5], [1.0, 0.6, 0.3, 0.1],
                                          [2.0, -0.5, 0.25]])
@pytest.mark.parametrize("steps", [1, 2, 7, 12])
def test_toeplitz_single_participation_is_the_largest_column_norm(
        coefficients: list[float], steps: int) -> None:
    found = toeplitz_sensitivity(tuple(coefficients), steps)
    matrix = toeplitz_matrix(coefficients, steps)
    assert found.exact and found.value == pytest.approx(np.linalg.norm(matrix, axis=0).max())


@pytest.mark.parametrize(("times", "separation"), [(2, 4), (3, 4), (3, 5), (5, 4)])
def test_toeplitz_separated_by_the_bands_is_root_k_column_norm(times: int,
                                                               separation: int) -> None:
    coefficients = (1.0, 0.6, 0.3, 0.1)  # 4 bands
    steps = 40  # every participation's column whole
    found = toeplitz_sensitivity(coefficients, steps, times, separation)
    norm = math.sqrt(sum(c * c for c in coefficients))
    assert found.exact and found.value == pytest.approx(math.sqrt(times) * norm, rel=1e-14)


@pytest.mark.parametrize("coefficients", [[1.0, 0.6, 0.3, 0.1], [1.0, -0.7, 0.4],
                                          [1.0, 1.0, 1.0, 1.0, 1.0]])
@pytest.mark.parametrize(("steps", "times", "separation"),
                         [(n, k, b) for n in (6, 9, 12) for k in (2, 3) for b in (1, 2, 3, 5)])
def test_toeplitz_against_every_pattern(coefficients: list[float], steps: int, times: int,
                                        separation: int) -> None:
    found = toeplitz_sensitivity(tuple(coefficients), steps, times, separation)
    matrix = toeplitz_matrix(coefficients, steps)
    truth = brute_force(matrix, times, separation)
    assert found.value >= truth - 1e-12
    if found.exact:
        assert found.value == pytest.approx(truth, rel=1e-12)
    if min(coefficients) >= 0:  # CᵀC ≥ 0: one direction is the worst case
        assert found.exact


def _spec(mechanism: dict[str, Any]) -> dict[str, Any]:
    return {**HEAD, "mechanism": mechanism}


def test_plain_gaussian_mu_is_sensitivity_over_noise() -> None:
    spec = _spec({"matrix_factorization": {
        "strategy": {"tree": {}}, "steps": 100, "noise_multiplier": 3.0,
        "participation": {"once": {}}}})
    assert privspec.evaluate(spec).gdp.mu == pytest.approx(math.sqrt(8) / 3.0, rel=1e-12)


@pytest.mark.parametrize("steps", [100, 101])
def test_amplified_bandmf_is_the_poisson_event_composed_per_block(steps: int) -> None:
    amplified = _spec({"matrix_factorization": {
        "strategy": {"banded_toeplitz": {"coefficients": [1.0, 0.0, 0.0]}}, "steps": steps,
        "noise_multiplier": 0.9, "participation": {
            "cyclic_poisson": {"block": 4, "sampling_rate": 0.05}}}})
    composed = _spec({"repeat": {"count": -(-steps // 4), "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.05, "mechanism": {"gaussian": {"noise_multiplier": 0.9}}}}}})
    mine, theirs = privspec.evaluate(amplified), privspec.evaluate(composed)
    assert mine.gdp.mu == theirs.gdp.mu and mine.epsilons == theirs.epsilons


def test_amplified_bandmf_divides_the_noise_by_the_column_norm() -> None:
    amplified = _spec({"matrix_factorization": {
        "strategy": {"banded_toeplitz": {"coefficients": [3.0, 4.0]}}, "steps": 20,
        "noise_multiplier": 5.0, "participation": {
            "cyclic_poisson": {"block": 2, "sampling_rate": 0.1}}}})
    composed = _spec({"repeat": {"count": 10, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.1, "mechanism": {"gaussian": {"noise_multiplier": 1.0}}}}}})
    assert privspec.evaluate(amplified).gdp.mu == pytest.approx(
        privspec.evaluate(composed).gdp.mu, rel=1e-9)


def _validate(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "bad.privspec.yaml"
    path.write_text(text, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "privspec", "validate", str(path)],
                          capture_output=True, text=True, cwd=ROOT, check=False)


BAD = """privspec: 1
title: t
unit: one user
neighbouring: add-or-remove
mechanism:
  matrix_factorization:
    strategy: {STRATEGY}
    steps: 1000000
    noise_multiplier: 2
    participation: {PARTICIPATION}
"""


@pytest.mark.parametrize(("strategy", "participation", "where", "says"), [
    ("{tree: {}}", "{cyclic_poisson: {block: 4, sampling_rate: 0.1}}",
     "mechanism.matrix_factorization.participation", "banded_toeplitz strategy"),
    ("{banded_toeplitz: {coefficients: [1, 0.5, 0.2]}}",
     "{cyclic_poisson: {block: 2, sampling_rate: 0.1}}",
     "mechanism.matrix_factorization.participation", "at most `block` bands"),
    ("{banded_toeplitz: {coefficients: [0, 1]}}", "{once: {}}",
     "mechanism.matrix_factorization.strategy.banded_toeplitz.coefficients", "invertible"),
    ("{tree: {}, banded_toeplitz: {coefficients: [1]}}", "{once: {}}",
     "mechanism.matrix_factorization.strategy.banded_toeplitz", "not both"),
    ("{tree: {}}", "{separated: {times: 3}}",
     "mechanism.matrix_factorization.participation.separated", "key 'min_separation'"),
    ("{tree: {}}", "{separated: {times: 3000000, min_separation: 1}}",
     "mechanism.matrix_factorization.participation", "operations"),
    ("{tree: {}}", "{separated: {times: 2, min_separation: 0}}",
     "mechanism.matrix_factorization.participation.separated.min_separation", "1"),
])
def test_bad_fields_are_located(tmp_path: Path, strategy: str, participation: str, where: str,
                                says: str) -> None:
    done = _validate(tmp_path, BAD.replace("{STRATEGY}", strategy)
                     .replace("{PARTICIPATION}", participation))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert any(where in line and says in line and (":7:" in line or ":10:" in line)
               for line in lines), done.stderr


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("times", "separation"), [(1, 1), (2, 2), (3, 3), (4, 2)])
def test_matrix_against_every_pattern(seed: int, times: int, separation: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = np.tril(rng.uniform(-0.3 if seed % 2 else 0.0, 1.0, size=(9, 9)))
    np.fill_diagonal(matrix, 1.0)
    found = matrix_sensitivity(tuple(tuple(map(float, row)) for row in matrix), times,
                               separation)
    truth = brute_force(matrix, times, separation)
    assert found.value >= truth - 1e-12
    if found.exact:
        assert found.value == pytest.approx(truth, rel=1e-12)
    if seed % 2 == 0:  # no negative entry: CᵀC ≥ 0
        assert found.exact


def test_banded_matrix_separated_by_its_bands_is_exact() -> None:
    matrix = toeplitz_matrix([1.0, -0.6, 0.3], 12)
    rows = tuple(tuple(map(float, row)) for row in matrix)
    found = matrix_sensitivity(rows, 3, 3)
    assert found.exact and found.value == pytest.approx(
        toeplitz_sensitivity((1.0, -0.6, 0.3), 12, 3, 3).value, rel=1e-14)
    assert not matrix_sensitivity(rows, 3, 2).exact or brute_force(matrix, 3, 2) == (
        pytest.approx(matrix_sensitivity(rows, 3, 2).value))


def _write_strategy(tmp_path: Path, matrix: np.ndarray, kind: str) -> tuple[str, str]:
    """The strategy written as ``kind`` (npy or csv) beside a spec, and its SHA-256."""
    path = tmp_path / f"strategy.{kind}"
    if kind == "npy":
        np.save(path, matrix)
    else:
        path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in matrix)
                        + "\n", encoding="utf-8")
    return path.name, hashlib.sha256(path.read_bytes()).hexdigest()


MATRIX_SPEC = """privspec: 1
title: t
unit: one user
neighbouring: add-or-remove
mechanism:
  matrix_factorization:
    strategy: {{matrix: {{file: {file}, sha256: '{sha}'}}}}
    steps: {steps}
    noise_multiplier: 2
    participation: {participation}
"""


@pytest.mark.parametrize("kind", ["npy", "csv"])
@pytest.mark.parametrize("participation", ["{once: {}}",
                                           "{separated: {times: 3, min_separation: 3}}",
                                           "{cyclic_poisson: {block: 3, sampling_rate: 0.2}}"])
def test_a_matrix_file_is_accounted_as_its_toeplitz_strategy(tmp_path: Path, kind: str,
                                                             participation: str) -> None:
    coefficients = [1.0, 0.5, 0.25]
    file, sha = _write_strategy(tmp_path, toeplitz_matrix(coefficients, 12), kind)
    spec = tmp_path / "mf.privspec.yaml"
    spec.write_text(MATRIX_SPEC.format(file=file, sha=sha, steps=12,
                                       participation=participation), encoding="utf-8")
    toeplitz = spec.with_name("toeplitz.privspec.yaml")
    toeplitz.write_text(MATRIX_SPEC.replace(
        "{{matrix: {{file: {file}, sha256: '{sha}'}}}}",
        "{{banded_toeplitz: {{coefficients: [1.0, 0.5, 0.25]}}}}").format(
            steps=12, participation=participation), encoding="utf-8")
    assert privspec.evaluate(str(spec)).gdp.mu == pytest.approx(
        privspec.evaluate(str(toeplitz)).gdp.mu, rel=1e-12)


#: Bad files whose digest and shape are right: refused by the evaluation, not validation.
BAD_VALUES = ("upper", "nan", "huge", "zero", "word", "underscore", "arabic")


def _privspec(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``privspec COMMAND bad.privspec.yaml`` in ``folder``."""
    return subprocess.run([sys.executable, "-m", "privspec", *command,
                           str(folder / "bad.privspec.yaml")],
                          capture_output=True, text=True, cwd=ROOT, check=False)


@pytest.mark.parametrize(("change", "field", "says"), [
    ("sha", "sha256", "has SHA-256"),
    ("outside", "file", "relative to the spec's folder, inside it"),
    ("upper", "file", "lower-triangular"),
    ("nan", "file", "(no NaN or infinity)"),
    ("huge", "file", "a number from -1e+200 to 1e+200"),
    ("steps", "steps", "steps must be its size"),
    ("missing", "file", "no such file"),
    ("link", "file", "link.csv leads out of the spec's folder (a symbolic link)"),
    ("directory", "file", "is a directory, not a strategy file"),
    ("text", "file", "numbers only"),
    ("zero", "file", "the diagonal must have no 0"),
    ("word", "file", "numbers only"),
    ("underscore", "file", "numbers only"),  # Python reads '1_0' as 10; CSV does not
    ("arabic", "file", "numbers only"),  # Python reads '١' as 1; CSV does not
])
def test_a_bad_matrix_file_is_refused_where_it_is_named(tmp_path: Path, change: str,
                                                        field: str, says: str) -> None:
    matrix = toeplitz_matrix([1.0, 0.5], 6)
    if change == "upper":
        matrix[0, 3] = 0.1
    if change == "nan":
        matrix[4, 2] = math.nan
    if change == "huge":
        matrix[4, 2] = 1e201
    if change == "zero":
        matrix[5, 5] = 0.0
    folder = tmp_path / "specs"
    folder.mkdir()
    file, sha = _write_strategy(folder, matrix, "csv")
    if change in ("text", "word", "underscore", "arabic"):  # a header; a word in the last line
        text = (folder / file).read_text(encoding="utf-8")
        last = {"word": "one\n", "underscore": "1_0\n", "arabic": "\u0661\n"}
        (folder / file).write_text("a,b\n1,0\n" if change == "text" else
                                   text[:-4] + last[change], encoding="utf-8")
        sha = hashlib.sha256((folder / file).read_bytes()).hexdigest()
    if change == "sha":
        sha = "0" * 64
    if change == "outside":
        (tmp_path / file).write_bytes((folder / file).read_bytes())
        file = f"../{file}"
    if change == "missing":
        file = "absent.csv"
    if change == "link":
        (tmp_path / file).write_bytes((folder / file).read_bytes())
        (folder / "link.csv").symlink_to(tmp_path / file)
        file = "link.csv"
    if change == "directory":
        (folder / "sub").mkdir()
        file = "sub"
    (folder / "bad.privspec.yaml").write_text(MATRIX_SPEC.format(
        file=file, sha=sha, steps=7 if change == "steps" else 6,
        participation="{once: {}}"), encoding="utf-8")
    written = sorted(folder.iterdir())
    command = ["validate"]
    commands = [["validate"]]
    if change in BAD_VALUES:  # validation reads the digest and the shape, not the values
        assert _privspec(["validate"], folder).returncode == 0
        commands = [["--no-cache", "render", "-o", str(folder / "bad.md")],
                    ["export", "--dp-event", "-o", str(folder / "bad.json")]]
    for command in commands:
        done = _privspec(command, folder)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert sorted(folder.iterdir()) == written  # nothing written
        (line,) = [line for line in done.stderr.splitlines() if "error:" in line]
        where = ("mechanism.matrix_factorization.steps" if field == "steps" else
                 f"mechanism.matrix_factorization.strategy.matrix.{field}")
        assert f"{where}:" in line and says in line, line
        assert ":8:" in line if field == "steps" else ":7:" in line


def test_cyclic_sampling_of_a_strategy_file_is_refused_once_its_columns_are_read(
        tmp_path: Path) -> None:
    """Whether columns `block` apart touch disjoint rows takes every value: the
    evaluation, not validation, refuses a full lower-triangular strategy, at
    `participation`."""
    file, sha = _write_strategy(tmp_path, np.tril(np.ones((6, 6))), "npy")
    (tmp_path / "bad.privspec.yaml").write_text(MATRIX_SPEC.format(
        file=file, sha=sha, steps=6,
        participation="{cyclic_poisson: {block: 2, sampling_rate: 0.1}}"), encoding="utf-8")
    assert _privspec(["validate"], tmp_path).returncode == 0
    done = _privspec(["--no-cache", "render", "-o", str(tmp_path / "bad.md")], tmp_path)
    assert done.returncode == 2 and not (tmp_path / "bad.md").exists(), done.stderr
    assert "bad.privspec.yaml:10:5: error: mechanism.matrix_factorization.participation: " \
        "cannot evaluate: cyclic_poisson (amplified BandMF) is accounted for" in done.stderr


def test_a_strategy_of_more_than_2000_steps_is_read_within_the_memory_budget(
        tmp_path: Path) -> None:
    """2,048 steps (the cap was 2,000): the identity, one participation, μ = 1/2; with
    the smallest memory budget (0.05 GiB: 31 MiB for a computation) its 68 MiB reading
    is refused where the file is named, saying what to change."""
    file, sha = _write_strategy(tmp_path, np.eye(2048), "npy")
    (tmp_path / "bad.privspec.yaml").write_text(MATRIX_SPEC.format(
        file=file, sha=sha, steps=2048, participation="{once: {}}"), encoding="utf-8")
    assert privspec.evaluate(str(tmp_path / "bad.privspec.yaml"), cache=False).gdp.mu == 0.5
    done = _privspec(["--no-cache", "--memory-budget", "0.05", "render", "-o",
                      str(tmp_path / "bad.md")], tmp_path)
    assert done.returncode == 2 and not (tmp_path / "bad.md").exists(), done.stderr
    assert ("bad.privspec.yaml:7:25: error: mechanism.matrix_factorization.strategy.matrix."
            "file: cannot evaluate: the strategy file: reading the 2,048 × 2,048 strategy "
            "file takes about 68 MiB, more than the 31 MiB") in done.stderr
    assert "accounting.memory_budget = 0.05 GiB: a larger budget" in done.stderr


def test_a_strategy_file_beyond_4000_steps_is_refused_saying_what_to_give_instead(
        tmp_path: Path) -> None:
    """The shape in a .npy header is checked before anything else is read."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4001, 4001), }"
    data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
    (tmp_path / "long.npy").write_bytes(data)
    (tmp_path / "bad.privspec.yaml").write_text(MATRIX_SPEC.format(
        file="long.npy", sha=hashlib.sha256(data).hexdigest(), steps=4001,
        participation="{once: {}}"), encoding="utf-8")
    done = _privspec(["validate"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "bad.privspec.yaml:7:" in done.stderr
    assert ("error: mechanism.matrix_factorization.strategy.matrix."
            "file: the array must be n × n with 1 ≤ n ≤ 4,000: a longer run's strategy is "
            "given by its banded_toeplitz coefficients, or the binary tree") in done.stderr


@pytest.mark.parametrize("name", ["../strategy.npy", "/strategy.npy", "C:strategy.npy"])
def test_a_digest_already_read_does_not_admit_a_name_outside_the_folder(
        tmp_path: Path, name: str) -> None:
    """A spec without a file (standard input, a string) names files in the working
    directory: a name leaving it is refused even when another spec had the file read."""
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import load_spec, load_spec_text

    file, sha = _write_strategy(tmp_path, toeplitz_matrix([1.0, 0.3, 0.2, 0.1], 9), "npy")
    (tmp_path / "mf.privspec.yaml").write_text(MATRIX_SPEC.format(
        file=file, sha=sha, steps=9, participation="{once: {}}"), encoding="utf-8")
    assert load_spec(tmp_path / "mf.privspec.yaml").mechanism is not None  # now cached
    with pytest.raises(SpecError, match="relative to the spec's folder, inside it"):
        load_spec_text(MATRIX_SPEC.format(file=f"'{name}'", sha=sha, steps=9,
                                          participation="{once: {}}"), "<stdin>")


@pytest.mark.parametrize("form", ["<f8", "<f8 fortran", "<f4", "<f4 fortran", "csv"])
def test_both_readers_of_a_strategy_file_agree(tmp_path: Path, form: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A .npy file in C or Fortran order, float64 or float32, or CSV: the evaluation's
    numpy reading and the spec layer's pure-Python one (for a spec whose mechanism is
    read without an evaluation) give the same columns, bit for bit, those of the
    matrix."""
    from privspec.spec import matrix_file
    from privspec.spec.loader import load_spec
    from privspec.spec.strategies import columns_of

    matrix = toeplitz_matrix([1.0, 0.5, 0.25, 0.125], 7)
    matrix[6, 2], matrix[3, 0] = 0.3, -2.0
    if form == "csv":
        file, sha = _write_strategy(tmp_path, matrix, "csv")
    else:
        typed = matrix.astype(form.split()[0])
        np.save(tmp_path / "strategy.npy", np.asfortranarray(typed) if "fortran" in form
                else typed)
        file, sha = "strategy.npy", hashlib.sha256(
            (tmp_path / "strategy.npy").read_bytes()).hexdigest()
        matrix = typed.astype(np.float64)
    spec_path = tmp_path / "mf.privspec.yaml"
    spec_path.write_text(MATRIX_SPEC.format(file=file, sha=sha, steps=7,
                                            participation="{once: {}}"), encoding="utf-8")
    expected = columns_of(tuple(tuple(float(v) for v in row) for row in matrix))
    found = []
    for by_numpy in (True, False):
        monkeypatch.setattr(matrix_file, "_CHECKED", {})
        monkeypatch.setattr(matrix_file, "_LOADED", {})
        spec = load_spec(spec_path)
        if by_numpy:
            from privspec.numerics.strategy_file import read_strategy_files

            read_strategy_files(spec)
        block = spec.mechanism.matrix_factorization
        assert block is not None and block.strategy.matrix is not None
        found.append(block.strategy.matrix.columns())
    for columns in found:
        assert (columns.squares, columns.first, columns.last) == (
            expected.squares, expected.first, expected.last)
        assert all(columns.gram(i, j) == expected.gram(i, j)
                   for i in range(7) for j in range(i, 7))


def test_a_thousand_overlapping_participations_are_bounded_not_a_recursion_error() -> None:
    """BandMF, 2 bands, 1,000 participations 1 step apart: the pattern search recursed
    once a participation (RecursionError, a traceback from privspec render)."""
    found = toeplitz_sensitivity((1.0, 0.5), 1000, 1000, 1)
    assert not found.exact and "triangle inequality" in found.how
    assert found.value == pytest.approx(math.sqrt(1.25) * 999 + 1.0, rel=1e-12)


def test_a_csv_strategy_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    """Spreadsheets write a UTF-8 byte-order mark before CSV text: it is skipped (it made
    the first value "not a number")."""
    matrix = toeplitz_matrix([1.0, 0.5], 6)
    file, sha = _write_strategy(tmp_path, matrix, "csv")
    plain = tmp_path / "plain.privspec.yaml"
    plain.write_text(MATRIX_SPEC.format(file=file, sha=sha, steps=6,
                                        participation="{once: {}}"), encoding="utf-8")
    marked = tmp_path / "marked.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + (tmp_path / file).read_bytes())
    spec = tmp_path / "marked.privspec.yaml"
    spec.write_text(MATRIX_SPEC.format(
        file="marked.csv", sha=hashlib.sha256(marked.read_bytes()).hexdigest(), steps=6,
        participation="{once: {}}"), encoding="utf-8")
    assert privspec.evaluate(str(spec), cache=False).gdp.mu == privspec.evaluate(
        str(plain), cache=False).gdp.mu


def _npy(header: str, data: bytes, version: int = 1) -> bytes:
    """A .npy file of ``header`` (a dict literal, written as given) and ``data``."""
    text = header.encode("utf-8" if version == 3 else "latin-1")
    width = 2 if version == 1 else 4
    return (b"\x93NUMPY" + bytes([version, 0]) + len(text).to_bytes(width, "little")
            + text + data)


def _refusal(tmp_path: Path, data: bytes, steps: int, command: str = "validate",
             sha: str = "") -> str:
    """The one error line of ``privspec COMMAND`` on a spec naming ``data`` as its
    strategy (exit 2, no traceback), with its SHA-256 or ``sha``."""
    (tmp_path / "s.npy").write_bytes(data)
    (tmp_path / "bad.privspec.yaml").write_text(MATRIX_SPEC.format(
        file="s.npy", sha=sha or hashlib.sha256(data).hexdigest(), steps=steps,
        participation="{once: {}}"), encoding="utf-8")
    done = _privspec([command] if command == "validate" else
                     ["--no-cache", command, "-o", str(tmp_path / "bad.md")], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "error:" in line]
    assert "bad.privspec.yaml:7:" in line and "strategy.matrix.file: " in line, line
    return line


def test_a_npy_header_longer_than_numpy_reads_is_refused_before_it_is_parsed(
        tmp_path: Path) -> None:
    """A header padded to 200,000 bytes (one of 10 MB took a minute and 4.8 GB to
    parse): refused from its stated length, in the file's first bytes, as NumPy refuses
    one over 10,000 bytes."""
    from privspec.spec.npy_header import MAX_HEADER_BYTES, NpyHeaderError, npy_header

    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }"
    data = _npy(header.ljust(200_000) + "\n", np.ones(1).tobytes(), 2)
    line = _refusal(tmp_path, data, 1)
    assert "its .npy header has 200,001 bytes, more than the 10,000 NumPy reads" in line
    # from the file's first bytes, before it is read whole (and its digest checked)
    assert "200,001 bytes" in _refusal(tmp_path, data, 1, sha="0" * 64)
    huge = _npy(header.ljust(10_000_000) + "\n", b"", 3)
    with pytest.raises(NpyHeaderError, match="10,000,001 bytes"):
        npy_header(huge)
    assert npy_header(_npy(header.ljust(MAX_HEADER_BYTES - 1) + "\n", b"")).shape == (1, 1)


@pytest.mark.parametrize(("header", "says"), [
    ("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1, 1)}",
     "'descr' must be a type string"),  # (was a TypeError: an internal error)
    ("{'descr': '<f8', 'fortran_order': 'False', 'shape': (1, 1)}",
     "'fortran_order' a boolean"),  # (was read as Fortran order)
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (True, True)}",
     "'shape' a tuple of sizes"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), 'x': '" + "(" * 50 + "'",
     "the .npy header is not readable"),
])
def test_a_npy_header_of_wrong_types_is_refused_where_the_file_is_named(
        tmp_path: Path, header: str, says: str) -> None:
    assert says in _refusal(tmp_path, _npy(header + "\n", np.ones(1).tobytes()), 1)


def test_a_version_3_npy_header_is_read_as_utf_8(tmp_path: Path) -> None:
    """Version 3 (NumPy writes it for a header that Latin-1 cannot hold) is UTF-8."""
    from privspec.spec.npy_header import npy_header

    header = "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), 'é': 'ü'}\n"
    found = npy_header(_npy(header, np.eye(2).tobytes(), 3))
    assert (found.descr, found.fortran, found.shape) == ("<f8", True, (2, 2))


def _mu(tmp_path: Path, matrix: np.ndarray, noise: str, participation: str) -> float:
    """μ of a spec whose strategy file holds ``matrix``, with ``noise``."""
    file, sha = _write_strategy(tmp_path, matrix, "npy")
    spec = tmp_path / "mf.privspec.yaml"
    spec.write_text(MATRIX_SPEC.format(file=file, sha=sha, steps=len(matrix),
                                       participation=participation).replace(
        "noise_multiplier: 2", f"noise_multiplier: {noise}"), encoding="utf-8")
    return privspec.evaluate(str(spec), cache=False).gdp.mu


@pytest.mark.parametrize("participation", ["{once: {}}",
                                           "{separated: {times: 3, min_separation: 2}}",
                                           "{separated: {times: 3, min_separation: 1}}"])
@pytest.mark.parametrize("size", [1e-170, 1e154, 1e199])
def test_a_strategy_far_from_1_gives_the_mu_of_its_scaled_copy(
        tmp_path: Path, size: float, participation: str) -> None:
    """Entries near 1e154 overflowed their squares (an internal error, or a refusal
    blaming too little noise), near 1e-170 underflowed them (μ = 0): the strategy is
    scaled, μ = Δ/σ is the same as the strategy of entries near 1 with the noise
    scaled alike."""
    matrix = np.tril(np.ones((6, 6))) + np.diag(np.arange(6.0))
    plain = _mu(tmp_path, matrix, "2", participation)
    scaled = _mu(tmp_path, matrix * size, f"{2 * size!r}", participation)
    assert scaled == pytest.approx(plain, rel=1e-12)


def test_a_toeplitz_strategy_far_from_1_gives_the_mu_of_its_scaled_copy() -> None:
    for size in (1e-170, 1e154, 1e200):
        found = toeplitz_sensitivity((size, -0.5 * size, 0.25 * size), 9, 3, 2).value
        assert found / size == pytest.approx(
            toeplitz_sensitivity((1.0, -0.5, 0.25), 9, 3, 2).value, rel=1e-14)


def test_a_toeplitz_coefficient_beyond_the_range_is_refused_where_it_is() -> None:
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import load_spec_text

    text = MATRIX_SPEC.replace("{{matrix: {{file: {file}, sha256: '{sha}'}}}}",
                               "{{banded_toeplitz: {{coefficients: [1.0, 1e201]}}}}")
    with pytest.raises(SpecError, match="coefficients"):
        load_spec_text(text.format(steps=6, participation="{once: {}}"), "<stdin>")


def test_a_sensitivity_is_rounded_up_never_down() -> None:
    """A column (1, 2⁻³⁰): its norm² 1 + 2⁻⁶⁰ rounds to 1, and its norm was printed as 1,
    below the true one; now the next double above.  Exact ones stay exact."""
    assert matrix_sensitivity(((1.0, 0.0), (2.0 ** -30, 1.0))).value == math.nextafter(1.0, 2)
    assert matrix_sensitivity(((1.0, 0.0), (2.0 ** -600, 1.0))).value > 1.0
    assert matrix_sensitivity(((3.0, 0.0), (4.0, 1.0))).value == 5.0
    assert matrix_sensitivity(((5e-324, 0.0), (0.0, 5e-324))).value >= 5e-324
    # 1e-130 / 2⁶⁶⁴ (the scaling of 1e200) is 0: what it adds is still rounded up
    assert matrix_sensitivity(((1e200, 0.0), (1e-130, 1e200))).value > 1e200
    assert toeplitz_sensitivity((1e200, 1e-130), 4).value > 1e200
    assert toeplitz_sensitivity((1.0, 2.0 ** -30), 4).value == math.nextafter(1.0, 2)
    assert toeplitz_sensitivity((3.0, 4.0), 4).value == 5.0


@settings(max_examples=300, derandomize=True)
@given(entries=st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 4.0), st.floats(-4.0, -1e-3)),
                        min_size=15, max_size=15),
       power=st.integers(-300, 190), times=st.integers(1, 3))
def test_a_sensitivity_is_the_true_one_rounded_up(entries: list[float], power: int,
                                                  times: int) -> None:
    """A diagonal-and-below 5 × 5 strategy of entries of any size, one participation or
    several 5 apart (disjoint columns: Σ of column norms²): the sensitivity is the exact
    one (in fractions) rounded up to a double, never below it."""
    rows = [[0.0] * 5 for _ in range(5)]
    values = iter(entries)
    for i in range(5):
        for j in range(i + 1):
            rows[i][j] = next(values) * 10.0 ** power
        rows[i][i] = rows[i][i] or 10.0 ** power
    squares = [sum(Fraction(row[j]) ** 2 for row in rows) for j in range(5)]
    truth = max(squares) if times == 1 else sum(sorted(squares)[-1:])
    found = matrix_sensitivity(tuple(map(tuple, rows)), times, 5).value
    assert Fraction(math.nextafter(found, 0.0)) ** 2 < truth <= Fraction(found) ** 2


def test_a_float32_strategy_of_subnormal_entries_in_fortran_order_is_read_as_float64(
        tmp_path: Path) -> None:
    """float32's subnormals (1e-40) are float64 numbers: μ is their column norm over σ."""
    matrix = np.asfortranarray((np.tril(np.ones((4, 4))) * 1e-40).astype("<f4"))
    entry = float(matrix[0, 0])
    np.save(tmp_path / "s.npy", matrix)
    spec = tmp_path / "mf.privspec.yaml"
    spec.write_text(MATRIX_SPEC.format(
        file="s.npy", sha=hashlib.sha256((tmp_path / "s.npy").read_bytes()).hexdigest(),
        steps=4, participation="{once: {}}").replace("noise_multiplier: 2",
                                                     "noise_multiplier: 1e-40"),
        encoding="utf-8")
    assert privspec.evaluate(str(spec), cache=False).gdp.mu == pytest.approx(
        2 * entry / 1e-40, rel=1e-15)
