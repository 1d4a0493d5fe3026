"""The architecture is checked: the import-linter contracts of pyproject.toml (`[tool.importlinter]`,
described in docs/architecture.md) hold, and no two modules of `benchmark` import each other, directly
or around a loop, counting type-only (`if TYPE_CHECKING:`) and function-level imports too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
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
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
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


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # grimp counts every import statement: module level, in functions and under TYPE_CHECKING
    return grimp.build_graph("benchmark", cache_dir=None)


def test_no_module_of_benchmark_is_in_an_import_cycle(graph):
    assert import_cycles(graph) == []


def test_the_cycle_check_finds_a_loop(graph):
    graph.add_import(
        importer="benchmark.units", imported="benchmark.datamodel.verdict"
    )  # datamodel.verdict -> datamodel.metrics -> units
    try:
        cycles = import_cycles(graph)
    finally:
        graph.remove_import(importer="benchmark.units", imported="benchmark.datamodel.verdict")
    assert any(
        {"benchmark.units", "benchmark.datamodel.verdict", "benchmark.datamodel.metrics"} <= set(c)
        for c in cycles
    )


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports (import-linter, in the test extra) is not installed")
    proc = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_import_linter_contracts_hold():
    out = _lint_imports()
    assert "0 broken" in out
    for contract in ("Layers", "Only benchmark.runners imports paddle and torch", "No import cycles"):
        assert f"{contract}" in out


# Where an import may wait until a function runs: the entry points (start-up time) and the runners
# (the frameworks are optional). Anywhere else it hides the dependency graph, so it must say why on
# its line (an optional dependency, or one that imports a framework).
LAZY_IMPORTS_ALLOWED = (
    "benchmark/cli.py",
    "benchmark/commands/",
    "benchmark/plugin/hooks.py",
    "benchmark/runners/",
)


def function_level_imports(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, source line) of every import inside a function of the package (migrations aside)."""
    import ast

    found = []
    for path in sorted((root / "benchmark").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        found.append((path.relative_to(root).as_posix(), sub.lineno, lines[sub.lineno - 1]))
    return found


def test_function_level_imports_only_where_they_keep_start_up_fast_or_a_framework_optional():
    elsewhere = [
        (f, n, line) for f, n, line in function_level_imports(ROOT)
        if not f.startswith(LAZY_IMPORTS_ALLOWED) and "#" not in line
    ]  # fmt: skip
    assert elsewhere == [], "move these imports to the top of their module, or say on the line why they wait"
