"""How long ``privspec validate`` takes as a whole process, next to importing what it
cannot do without (pydantic and PyYAML).

Runs the commands in turn, several times each, and prints the median of each and the
ratio of validate's to the import's (issue 29's target: at most 1.5); for reference also
a process that builds and validates one pydantic model of one field, the least any
validation with pydantic costs.  Then validate of a matrix-factorization spec whose
strategy is a file of ``STRATEGY_STEPS`` steps (``.npy`` and CSV, written to a temporary
directory), and its ratio to validate of the CIFAR-10 example, which names no file::

    python benchmarks/validate_speed.py            # 9 runs of each
    python benchmarks/validate_speed.py --runs 21

Every process reads its modules' bytecode from a temporary cache written by a first run,
as an installed privspec does (pip compiles it), even where ``PYTHONDONTWRITEBYTECODE``
is set: compiling privspec's sources at every run would add some 20 ms that the
pydantic and PyYAML of the baseline, compiled when installed, do not pay.

The machine may be busy: compare the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"

BASELINE = [sys.executable, "-c", "import pydantic, yaml"]
VALIDATE = [sys.executable, "-m", "privspec.cli", "validate", "-q", str(EXAMPLE)]
ONE_MODEL = [sys.executable, "-c", "import pydantic, yaml\nclass A(pydantic.BaseModel):\n"
             "    x: int\nA(x=1)"]
TARGET = 1.5
#: Steps of the strategy files: the largest matrix a file may give.
STRATEGY_STEPS = 2_000
STRATEGY_SPEC = """privspec: 1
title: A strategy file of {steps} steps
unit: one user
neighbouring: add-or-remove
mechanism:
  matrix_factorization:
    strategy: {{matrix: {{file: {file}, sha256: '{sha}'}}}}
    steps: {steps}
    noise_multiplier: 2
    participation: {{separated: {{times: 3, min_separation: 3}}}}
"""


def _strategy_specs(folder: Path) -> dict[str, list[str]]:
    """validate's command lines for specs naming a dense lower-triangular strategy of
    ``STRATEGY_STEPS`` steps as .npy and as CSV, written in ``folder``."""
    import hashlib

    rows, columns = np.indices((STRATEGY_STEPS, STRATEGY_STEPS))
    matrix = np.where(rows >= columns, 1.0 / (1.0 + np.abs(rows - columns)), 0.0)
    np.save(folder / "strategy.npy", matrix)
    (folder / "strategy.csv").write_text(
        "\n".join(",".join(repr(float(v)) for v in row) for row in matrix) + "\n",
        encoding="utf-8")
    commands = {}
    for kind in ("npy", "csv"):
        strategy = folder / f"strategy.{kind}"
        spec = folder / f"{kind}.privspec.yaml"
        spec.write_text(STRATEGY_SPEC.format(
            steps=STRATEGY_STEPS, file=strategy.name,
            sha=hashlib.sha256(strategy.read_bytes()).hexdigest()), encoding="utf-8")
        commands[f"privspec validate ({STRATEGY_STEPS:,}-step .{kind})"] = [
            sys.executable, "-m", "privspec.cli", "validate", "-q", str(spec)]
    return commands


def _seconds(command: list[str], bytecode: str) -> float:
    """Wall time of one run of ``command`` (which must succeed), with its modules'
    bytecode kept under ``bytecode``."""
    environment = {name: value for name, value in os.environ.items()
                   if name != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**environment,
                                                   "PYTHONPYCACHEPREFIX": bytecode})
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (≥ 7)")
    runs = max(7, parser.parse_args(argv).runs)
    commands = {"python -c 'import pydantic, yaml'": BASELINE,
                "privspec validate (CIFAR-10 example)": VALIDATE,
                "python -c 'one pydantic model' (reference)": ONE_MODEL}
    with tempfile.TemporaryDirectory(prefix="privspec-strategy-") as folder:
        strategies = _strategy_specs(Path(folder))
        medians = _medians({**commands, **strategies}, runs)
    print(f"{'command':<44} {'median':>8}")
    for name, seconds in medians.items():
        print(f"{name:<44} {seconds * 1000:6.0f}ms")
    base, own, floor = (medians[name] for name in commands)
    print(f"validate / import pydantic, yaml: {own / base:.2f}x "
          f"(medians of {runs} alternating runs; target <= {TARGET}; one pydantic model: "
          f"{floor / base:.2f}x)")
    for name in strategies:
        print(f"{name} / validate (CIFAR-10 example): {medians[name] / own:.2f}x")
    return 0


def _medians(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """The median wall time of each command over ``runs`` runs, in alternating order."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="privspec-bytecode-") as bytecode:
        for command in commands.values():  # write the bytecode, warm the file cache
            _seconds(command, bytecode)
        for run in range(runs):  # alternate the order, so that none gains from it
            names = list(commands) if run % 2 == 0 else list(reversed(commands))
            for name in names:
                times[name].append(_seconds(commands[name], bytecode))
    return {name: statistics.median(seconds) for name, seconds in times.items()}

if __name__ == "__main__":
    sys.exit(main())
