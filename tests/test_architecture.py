"""The package's layout is its architecture: stages import only stages below them, and no
module imports itself back through others (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "benchharness"

# Bottom to top; a module may import its own stage and the stages before it.
STAGES = ["core", "transport", "tools", "onhost", "telemetry", "config", "results", "planning",
          "analysis", "report", "execution", "lab", "provision", "cli"]
RANK = {name: i for i, name in enumerate(STAGES)}
# Stages of equal height that must not import each other.
PEERS = {frozenset({"tools", "onhost"}), frozenset({"execution", "lab"})}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Package modules that ``name`` imports, at module level or inside functions alike."""
    out: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target != "benchharness" and not name.startswith(target + "."):
                out.add(target)
    return out


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "cli"  # __main__ is the command line


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_belongs_to_a_known_stage() -> None:
    unknown = sorted(m for m in _graph() if m.count(".") and _stage(m) not in RANK and m != "benchharness.__main__")
    assert not unknown, f"modules outside the stages of docs/architecture.md: {unknown}"


def test_no_module_imports_a_higher_stage() -> None:
    wrong = []
    for module, targets in _graph().items():
        if module == "benchharness.__main__":
            continue
        for target in targets:
            low, high = _stage(module), _stage(target)
            if frozenset({low, high}) in PEERS or RANK[high] > RANK[low]:
                wrong.append(f"{module} ({low}) imports {target} ({high})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_circles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_the_walk_sees_real_imports() -> None:
    """The walk is not vacuous: it finds this package's real imports."""
    graph = _graph()
    assert "benchharness.core.model" in graph["benchharness.execution.runner"]
    assert "benchharness.tools" in graph["benchharness.config.suites"]
