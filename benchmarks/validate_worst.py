"""How long ``privspec validate`` takes, and how much memory, on the worst specs the
reader's caps let through (``MAX_FILE_BYTES``, ``MAX_NODES``, ``MAX_DEPTH``), next to
validate of the CIFAR-10 example in the same run.

Each spec is validated as written (libyaml's parser, when PyYAML has it) and with a tab
in a last comment line, which makes the reader use PyYAML's own parser: the slowest a
spec can make it.  Prints each median, its ratio to the CIFAR-10 example's, the peak
memory, the exit code and how many lines were printed (issue 38: at most 2 s on a
2-core machine, one line or ``LISTED_PROBLEMS`` + 1 for a refused spec)::

    python benchmarks/validate_worst.py            # 5 runs of each
    python benchmarks/validate_worst.py --runs 9 --only flow-list deep

The machine may be busy: compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from privspec.spec.yaml_reader import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
HEAD = ("privspec: 1\ntitle: t\nunit: one example\nneighbouring: add-or-remove\n"
        "mechanism: {laplace: {scale: 1}}\n")
#: A last line that makes the reader use PyYAML's own parser.
PYYAML_ONLY = "# a tab:\t, so that PyYAML's own parser reads this file\n"
ROOM = 200  # bytes and values left for the head and the tail


def _repeated(head: str, unit: str, tail: str, values: int, separator: str = "") -> str:
    """``unit`` (of ``values`` YAML values) repeated as often as the caps allow."""
    count = min((MAX_NODES - 20) // values,
                (MAX_FILE_BYTES - len(head) - len(tail) - ROOM) // len(unit + separator))
    return head + separator.join([unit] * count) + tail


NUMBERS = ["0x1F", "0o17", "1e-5", "-1.5E+3", ".inf", "-.inf", ".nan", "010", "+12", "9" * 50,
           "1e999", "1_000", "0b11", "~", "true", "yes", "2024-01-01"]
CASES: dict[str, Callable[[], str]] = {
    "flow-list": lambda: _repeated(HEAD + "extra: [", "0", "]\n", 1, ","),
    "block-list": lambda: _repeated(HEAD + "extra:\n", "- 0\n", "", 1),
    "490,000-values": lambda: HEAD + "extra: [" + ",".join(["0"] * 490_000) + "]\n",
    "valid-stages": lambda: _repeated(HEAD.replace("mechanism: {laplace: {scale: 1}}\n",
                                                   "mechanism:\n  compose:\n"),
                                      "  - mechanism: {laplace: {scale: 1}}\n", "", 7),
    "invalid-stages": lambda: _repeated(HEAD.replace("mechanism: {laplace: {scale: 1}}\n",
                                                     "mechanism:\n  compose:\n"),
                                        "  - mechanism: {laplace: {scale: -1}}\n", "", 7),
    "unknown-keys": lambda: HEAD + "".join(
        f"k{i}: 0\n" for i in range((MAX_NODES - 20) // 2))[: MAX_FILE_BYTES - ROOM],
    "duplicate-keys": lambda: HEAD + "".join(
        f"k{i}: 0\nk{i}: 0\n" for i in range((MAX_NODES - 20) // 4))[: MAX_FILE_BYTES - ROOM],
    "hidden-characters": lambda: _repeated(HEAD + "extra: [", '"\\x01"', "]\n", 1, ","),
    "deep": lambda: _repeated(HEAD + "extra: [", "[" * (MAX_DEPTH - 3) + "0"
                              + "]" * (MAX_DEPTH - 3), "]\n", MAX_DEPTH - 2, ","),
    "numbers": lambda: _repeated(HEAD + "extra: [", ", ".join(NUMBERS), "]\n", len(NUMBERS),
                                 ", "),
    "anchors": lambda: HEAD + "extra: [" + ",".join(
        f"&a{i} 0" for i in range(MAX_NODES - 20))[: MAX_FILE_BYTES - ROOM].rpartition(",")[0]
        + "]\n",
    "long-text": lambda: HEAD + "description: '" + "a" * (MAX_FILE_BYTES - ROOM) + "'\n",
    "comments": lambda: HEAD + "#\n" * ((MAX_FILE_BYTES - ROOM) // 2),
}


def _run(command: list[str], bytecode: str) -> tuple[float, int, int, int]:
    """Wall time, peak memory (bytes), exit code and lines printed of one run."""
    environment = {name: value for name, value in os.environ.items()
                   if name != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=output,
                                   env={**environment, "PYTHONPYCACHEPREFIX": bytecode})
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        lines = output.read().count(b"\n")
    return seconds, usage.ru_maxrss * 1024, process.returncode, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each spec (≥ 3)")
    parser.add_argument("--only", nargs="*", choices=list(CASES), help="these specs only")
    arguments = parser.parse_args(argv)
    runs = max(3, arguments.runs)
    with tempfile.TemporaryDirectory(prefix="privspec-worst-") as folder:
        specs = {"CIFAR-10 example": EXAMPLE}
        for name in arguments.only or CASES:
            text = CASES[name]()
            for label, body in ((name, text), (f"{name} (PyYAML)", text + PYYAML_ONLY)):
                specs[label] = Path(folder) / f"{len(specs)}.privspec.yaml"
                specs[label].write_text(body, encoding="utf-8")
        bytecode = str(Path(folder) / "bytecode")
        command = [sys.executable, "-m", "privspec.cli", "validate"]
        _run([*command, str(EXAMPLE)], bytecode)  # writes the bytecode
        results: dict[str, list[tuple[float, int, int, int]]] = {name: [] for name in specs}
        for _ in range(runs):
            for name, spec in specs.items():
                results[name].append(_run([*command, str(spec)], bytecode))
        sizes = {name: spec.stat().st_size for name, spec in specs.items()}
    base = statistics.median(seconds for seconds, *_ in results["CIFAR-10 example"])
    print(f"{'spec':<30} {'bytes':>9} {'median':>8} {'ratio':>6} {'peak MB':>8} exit lines")
    for name, found in results.items():
        median = statistics.median(seconds for seconds, *_ in found)
        peak = max(memory for _, memory, _, _ in found) / 2**20
        _, _, code, lines = found[0]
        print(f"{name:<30} {sizes[name]:>9,} {median * 1000:6.0f}ms {median / base:6.2f} "
              f"{peak:8.0f} {code:>4} {lines:>5}")
    print(f"(medians of {runs} runs; ratio: to validate of the CIFAR-10 example; lines: "
          "the problems printed and the summary line)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
