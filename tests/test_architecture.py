"""The layers of ARCHITECTURE.md, checked from the imports (import-linter's contracts in
pyproject.toml): no import upwards, no numerical library in the spec layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept() -> None:
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    done = subprocess.run([command, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout, done.stdout


def _import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each is a set of modules that import each other in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_module_of_privspec_imports_itself_in_a_circle() -> None:
    """Counting imports inside functions (grimp sees them) but not those only for the type
    checker: no set of modules imports each other in a circle."""
    import grimp

    assert _import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    built = grimp.build_graph("privspec", exclude_type_checking_imports=True)
    graph = {module: built.find_modules_directly_imported_by(module)
             for module in built.modules}
    assert _import_cycles(graph) == []


#: The most lines a function of the command line or the workflows may take.
LONGEST_FUNCTION = 60


def test_no_function_in_cli_or_workflows_is_over_60_lines() -> None:
    """A function's lines run from its first decorator (or ``def``) to its last line,
    its signature and docstring included."""
    import ast

    too_long = []
    for package in ("cli", "workflows"):
        for path in sorted((ROOT / "privspec" / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    lines = (node.end_lineno or node.lineno) - first + 1
                    if lines > LONGEST_FUNCTION:
                        too_long.append(f"{path.relative_to(ROOT)}:{first}: {node.name}: "
                                        f"{lines} lines")
    assert too_long == []
