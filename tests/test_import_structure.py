"""Layers point one way. Read with ``ast`` (every import statement, function-level ones too):

- no module under ``tang/expr`` imports ``tang.scalar``, ``tang.dual`` or anything above
  the expression layer (only ``tang.ieee`` and ``tang.expr`` itself);
- no import cycle among tang's modules;
- ``tang/gpu`` runs compiled kernels: it imports neither the parser, ``grad`` nor
  ``simplify``;
- ``demos/api.py``, the worker's dispatcher, names no demo.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TANG = ROOT / "tang"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(TANG.rglob("*.py"))}


def imports(name: str) -> set[str]:
    """The tang modules ``name`` imports anywhere in its text (``from pkg import mod``
    counts as ``pkg.mod`` when that is a module, else as ``pkg``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports(name) for name in MODULES}


def test_the_reader_sees_function_level_and_relative_imports():
    assert "tang.expr.graph" in GRAPH["tang.expr.grad"]
    assert "tang.ieee" in GRAPH["tang.expr.ops"]
    assert "tang.lower" in GRAPH["tang.gpu.batch"]  # imported inside a function


# ``tang eval``'s command module lives in tang/expr beside the code it drives and imports the
# command line's helpers (tang.cli): a front end, not a layer of the library.
FRONT_ENDS = {"tang.expr.cli"}


def test_the_expression_layer_imports_nothing_above_it():
    for name, deps in GRAPH.items():
        if name.startswith("tang.expr") and name not in FRONT_ENDS:
            above = sorted(d for d in deps if not d.startswith("tang.expr") and d != "tang.ieee")
            assert above == [], f"{name} imports {above}"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module → modules it imports), or None: an iterative
    depth-first search that keeps the path it is on."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            for dep in stack[-1]:
                if state.get(dep) == 1:
                    return [*path[path.index(dep) :], dep]
                if dep not in state:
                    state[dep] = 1
                    path.append(dep)
                    stack.append(iter(sorted(graph.get(dep, ()))))
                    break
            else:
                state[path.pop()] = 2
                stack.pop()
    return None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_among_tang_modules():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_gpu_runs_compiled_kernels_only():
    banned = {"tang.expr.parse", "tang.expr.grad", "tang.expr.simplify"}
    for name, deps in GRAPH.items():
        if name.startswith("tang.gpu"):
            assert not deps & banned, f"{name} imports {sorted(deps & banned)}"


def test_the_worker_dispatcher_names_no_demo():
    demos = ROOT / "demos"
    names = {p.stem for p in demos.glob("*.py")} - {"__init__", "api", "common"}
    text = (demos / "api.py").read_text()
    tree = ast.parse(text)
    words = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    words |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    words |= {
        part
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
        for part in n.value.replace(".", " ").replace("/", " ").split()
    }
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            words |= set(n.module.split("."))
    named = sorted(names & words)
    assert named == [], f"demos/api.py names {named}"
