"""Layers point one way. Read with ``ast`` (every import statement, function-level ones too):

- no module under ``tang/expr`` imports ``tang.scalar``, ``tang.dual`` or anything above
  the expression layer (only ``tang.ieee`` and ``tang.expr`` itself);
- no import cycle among tang's modules, nor among the parts of any package (a loop that
  leaves a package through one module and comes back through another);
- ``tang/gpu`` runs compiled kernels: neither it nor anything it imports, however
  indirectly, reaches the parser, ``grad`` or ``simplify``;
- ``demos/api.py``, the worker's dispatcher, names no demo.

What counts as an edge ``a → b`` (``b`` a module or package of tang):

- ``import b`` / ``from b import x`` / ``from . import x``, anywhere in ``a``'s text;
  ``from pkg import mod`` counts as ``pkg.mod`` when that is a module, else as ``pkg``;
- ``importlib.import_module(NAME[, PACKAGE])`` (or a bare ``import_module``) when NAME is
  a string, an f-string, or a name that a ``for`` loop or comprehension around the call
  binds to each item of a literal list/tuple of strings (written there, or a module-level
  constant assigned once); each value gives an edge. PACKAGE (``__name__``,
  ``__package__`` or a string) anchors a relative NAME. Any other call is *unresolved*,
  and a test fails on it: a dynamic import must stay visible to these checks;
- importing ``tang.p.q.m`` runs ``tang/p/__init__.py`` and ``tang/p/q/__init__.py`` first,
  so ``a`` also depends on each of those packages, except ``a``'s own packages (already
  running when ``a`` runs).

A package-level loop is a cycle among one package's parts: its direct submodules and
subpackages, a subpackage standing for every module inside it. The ``run`` command in
``tang/gpu/cli.py`` importing ``tang.compile``, which imported ``tang.gpu.batch``, was one
(``tang.gpu → tang.compile → tang.gpu``) although no module imported itself again.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TANG = ROOT / "tang"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(TANG.rglob("*.py"))}
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def ancestors(name: str) -> list[str]:
    """The packages above ``name``, outermost first: ``a.b.c`` → ``a``, ``a.b``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _strings(node: ast.expr) -> tuple[str, ...] | None:
    """The items of a literal list/tuple/set of strings, else None."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return tuple(e.value for e in node.elts)
    return None


def _constants(tree: ast.Module) -> dict[str, str | tuple[str, ...]]:
    """Module-level names assigned exactly once to a string or a literal list of strings."""
    seen: dict[str, int] = {}
    values: dict[str, str | tuple[str, ...]] = {}
    for stmt in tree.body:
        targets = []
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            targets, value = [stmt.target], stmt.value
        for target in targets:
            if isinstance(target, ast.Name):
                seen[target.id] = seen.get(target.id, 0) + 1
                if isinstance(stmt, ast.AugAssign) or value is None:
                    seen[target.id] += 1
                elif isinstance(value, ast.Constant) and isinstance(value.value, str):
                    values[target.id] = value.value
                elif (items := _strings(value)) is not None:
                    values[target.id] = items
    return {k: v for k, v in values.items() if seen[k] == 1}


class _Reader:
    """Walks one module's tree, keeping what each enclosing loop variable ranges over."""

    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name, self.found, self.unresolved = name, set(), []
        self.package = name if name in PACKAGES else name.rpartition(".")[0]
        self.constants = _constants(tree)
        self.visit(tree, {})

    def iterable(self, node: ast.expr) -> tuple[str, ...] | None:
        if isinstance(node, ast.Name):
            value = self.constants.get(node.id)
            return value if isinstance(value, tuple) else None
        return _strings(node)

    def values(self, node: ast.expr, env: dict[str, tuple[str, ...]]) -> list[str] | None:
        """Every string ``node`` can be at this point, or None when that is not known."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            if node.id in env:
                return list(env[node.id])
            value = self.constants.get(node.id)
            return [value] if isinstance(value, str) else None
        if isinstance(node, ast.JoinedStr):
            pieces = []
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    if part.conversion != -1 or part.format_spec is not None:
                        return None
                    options = self.values(part.value, env)
                else:
                    options = self.values(part, env)
                if options is None:
                    return None
                pieces.append(options)
            return ["".join(p) for p in itertools.product(*pieces)]
        return None

    def anchor(self, node: ast.expr, env: dict[str, tuple[str, ...]]) -> str | None:
        if isinstance(node, ast.Name) and node.id == "__name__":
            return self.name
        if isinstance(node, ast.Name) and node.id == "__package__":
            return self.package
        options = self.values(node, env)
        return options[0] if options and len(options) == 1 else None

    def call(self, node: ast.Call, env: dict[str, tuple[str, ...]]) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called != "import_module":
            return
        given = {k.arg: k.value for k in node.keywords}
        given.update(zip(("name", "package"), node.args))
        names = self.values(given["name"], env) if "name" in given else None
        package = self.anchor(given["package"], env) if "package" in given else None
        if names is None or ("package" in given and package is None):
            self.unresolved.append(f"{self.name}:{node.lineno}: {ast.unparse(node)}")
            return
        for text in names:
            if text.startswith(".") and package is None:
                self.unresolved.append(f"{self.name}:{node.lineno}: {ast.unparse(node)}")
            else:
                self.found.add(importlib.util.resolve_name(text, package))

    def statement(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            self.found.update(a.name for a in node.names)
            return
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            self.found.add(sub if sub in MODULES else target)

    def visit(self, node: ast.AST, env: dict[str, tuple[str, ...]]) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            self.statement(node)
        elif isinstance(node, ast.Call):
            self.call(node, env)
        if isinstance(node, ast.For | ast.AsyncFor):
            self.visit(node.iter, env)
            inner = self.bind(node.target, node.iter, env)
            for child in [*node.body, *node.orelse]:
                self.visit(child, inner)
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = env
            for gen in node.generators:
                self.visit(gen.iter, inner)
                inner = self.bind(gen.target, gen.iter, inner)
                for cond in gen.ifs:
                    self.visit(cond, inner)
            for child in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                self.visit(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            self.visit(child, env)

    def bind(self, target: ast.expr, iterable: ast.expr, env: dict) -> dict:
        """``env`` with a loop's name bound to its literal items (unbound when unknown)."""
        if not isinstance(target, ast.Name):
            return env
        items = self.iterable(iterable)
        inner = {k: v for k, v in env.items() if k != target.id}
        if items is not None:
            inner[target.id] = items
        return inner


def read(name: str) -> _Reader:
    path = MODULES[name]
    return _Reader(name, ast.parse(path.read_text(), str(path)))


READERS = {name: read(name) for name in MODULES}


def imports(name: str) -> set[str]:
    """The tang modules and packages ``name`` depends on: what it imports (statements and
    resolved ``import_module`` calls) and the packages above those, less its own."""
    found = {m for m in READERS[name].found if m in MODULES}
    own = {name, *ancestors(name)}
    found |= {p for m in found for p in ancestors(m)}
    return found - own


GRAPH = {name: imports(name) for name in MODULES}


def parts(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The graph among ``package``'s direct parts (a subpackage stands for all inside it):
    an edge for each import from a module inside one part to a module inside another."""
    depth = package.count(".") + 2

    def part(name: str) -> str | None:
        inside = name.startswith(package + ".")
        return ".".join(name.split(".")[:depth]) if inside else None

    out: dict[str, set[str]] = {}
    for name, deps in graph.items():
        if (src := part(name)) is not None:
            out.setdefault(src, set())
            out[src] |= {d for dep in deps if (d := part(dep)) not in (None, src)}
    return out


def test_the_reader_sees_function_level_and_relative_imports():
    assert "tang.expr.graph" in GRAPH["tang.expr.grad"]
    assert "tang.ieee" in GRAPH["tang.expr.ops"]
    assert "tang.lower" in GRAPH["tang.gpu.batch"]  # imported inside a function


def test_the_reader_follows_import_module():
    source = """
import importlib
from importlib import import_module
NAMES = ["tang.a", "tang.b"]
def load():
    mods = [importlib.import_module(n) for n in NAMES]
    for part in ("expr", "lower"):
        import_module(f"tang.{part}.cli")
    import_module(".mgh", __name__)
    importlib.import_module(package="tang", name=".io")
    importlib.import_module(which)
"""
    reader = _Reader("tang.solve", ast.parse(source))
    want = {"tang.a", "tang.b", "tang.expr.cli", "tang.lower.cli", "tang.solve.mgh", "tang.io"}
    assert reader.found == want | {"importlib"}
    assert reader.unresolved == ["tang.solve:11: importlib.import_module(which)"]
    assert GRAPH["tang.solve"] >= {"tang.solve.mgh"}
    from tang.cli import SUBCOMMANDS  # loaded by a comprehension over this constant

    assert set(SUBCOMMANDS) <= GRAPH["tang.cli"]


def test_the_reader_adds_the_packages_above_what_is_imported():
    # tang.compile imports tang.expr.parse: tang/expr/__init__.py runs first
    assert {"tang.expr.parse", "tang.expr"} <= GRAPH["tang.compile"]
    # a module's own packages are already running when it runs: no edge to them
    assert not {"tang", "tang.expr"} & (GRAPH["tang.expr.grad"] - READERS["tang.expr.grad"].found)


def test_every_import_module_call_is_resolved():
    unresolved = [line for r in READERS.values() for line in r.unresolved]
    assert unresolved == [], "import_module with a name these checks cannot read: " + str(
        unresolved
    )


# ``tang eval``'s command module lives in tang/expr beside the code it drives and imports the
# command line's helpers (tang.cli_common): a front end, not a layer of the library.
FRONT_ENDS = {"tang.expr.cli"}


def test_the_expression_layer_imports_nothing_above_it():
    for name, deps in GRAPH.items():
        if name.startswith("tang.expr") and name not in FRONT_ENDS:
            above = sorted(d for d in deps if not d.startswith("tang.expr") and d != "tang.ieee")
            assert above == [], f"{name} imports {above}"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph`` (module → modules it imports) that an iterative depth-first
    search closes, one per edge back onto the path it is on: each strongly connected part
    with a cycle shows at least once, and [] means the graph has none."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            for dep in stack[-1]:
                if state.get(dep) == 1:
                    found.append([*path[path.index(dep) :], dep])
                    continue
                if dep not in state:
                    state[dep] = 1
                    path.append(dep)
                    stack.append(iter(sorted(graph.get(dep, ()))))
                    break
            else:
                state[path.pop()] = 2
                stack.pop()
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None."""
    found = cycles(graph)
    return found[0] if found else None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    two = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}
    assert cycles(two) == [["a", "b", "a"], ["c", "d", "c"]]


def test_the_part_graph_sees_a_loop_through_another_package():
    graph = {
        "tang.gpu.cli": {"tang.compile"},
        "tang.compile": {"tang.gpu.batch", "tang.gpu"},
        "tang.gpu.batch": set(),
        "tang.gpu": set(),
    }
    assert find_cycle(graph) is None
    top = parts(graph, "tang")
    assert top == {"tang.gpu": {"tang.compile"}, "tang.compile": {"tang.gpu"}}
    assert find_cycle(top) == ["tang.compile", "tang.gpu", "tang.compile"]


def test_no_import_cycle_among_tang_modules():
    found = cycles(GRAPH)
    assert found == [], "import cycles: " + "; ".join(" → ".join(c) for c in found)


def test_no_import_cycle_among_the_parts_of_a_package():
    loops = []
    for package in sorted(PACKAGES):
        loops += [" → ".join(c) for c in cycles(parts(GRAPH, package))]
    assert loops == [], "package-level loops: " + "; ".join(loops)


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or not."""
    seen, todo = set(), [start]
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_gpu_runs_compiled_kernels_only():
    banned = {"tang.expr.parse", "tang.expr.grad", "tang.expr.simplify"}
    for name in GRAPH:
        if name.startswith("tang.gpu"):
            assert not reach(GRAPH, name) & banned, (
                f"{name} reaches {sorted(reach(GRAPH, name) & banned)}"
            )


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
