"""Loop-invariant code motion over a printed Python loop nest.

A compiler hoists what does not change inside a loop (a Q4_1 block's scale, an address's
outer part) by itself; CPython does not, so the Python printer runs this pass over its
nests. It moves, to just before a counted loop, every statement and every always-evaluated
subexpression of its body whose inputs the loop never changes, innermost loops first, so a
value climbs as far out as its inputs allow. Pure rewrites of tang's own printed code:
every call it may move is one of the printer's pure functions.
"""

from __future__ import annotations

import ast
import itertools
from collections import Counter
from collections.abc import Iterator

# calls that may move: these builtins, and every function the source imports from the
# modules of tang's pure kernels (the IEEE math, the f16 decoder)
PURE_BUILTINS = frozenset({"float", "int", "min", "max", "abs"})
PURE_MODULES = frozenset({"tang.ieee", "tang.tensor.packed"})


def hoist_invariants(source: str) -> str:
    """``source`` with the loop-invariant work of its functions' counted loops hoisted.
    Lines outside the loops (imports, comments) are kept as printed."""
    tree = ast.parse(source)
    pure = set(PURE_BUILTINS)
    for st in tree.body:
        if isinstance(st, ast.ImportFrom) and st.module in PURE_MODULES:
            pure |= {a.asname or a.name for a in st.names}
    prefix = "_lh"  # hoisted values' names: _lh0, _lh1, … (a prefix the source never uses)
    while prefix in source:
        prefix += "_"
    hoister = _Hoister(frozenset(pure), (f"{prefix}{k}" for k in itertools.count()))
    lines = source.split("\n")
    edits: list[tuple[int, int, list[str]]] = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for st in fn.body:
            if not isinstance(st, ast.For):
                continue
            inside = lines[st.lineno - 1 : st.end_lineno]
            if any(line.lstrip().startswith("#") for line in inside):
                continue  # a comment inside would be lost by unparsing: leave it as printed
            try:
                moved = hoister.loop(st)
                text = [line for s in moved for line in ast.unparse(s).split("\n")]
            except RecursionError:  # an expression too deep to print back: leave it
                continue
            text = [" " * st.col_offset + line for line in text]
            edits.append((st.lineno - 1, st.end_lineno or st.lineno, text))
    for start, end, text in reversed(edits):
        lines[start:end] = text
    return "\n".join(lines)


class _Hoister:
    """The pass's state: the calls that may move and the fresh names of hoisted values."""

    def __init__(self, pure: frozenset[str], names: Iterator[str]) -> None:
        self.pure, self.names = pure, names

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        """``statements`` with each loop among them (also inside ``if`` blocks) hoisted."""
        out: list[ast.stmt] = []
        for st in statements:
            if isinstance(st, ast.For):
                out.extend(self.loop(st))
                continue
            if isinstance(st, ast.If):
                st.body = self.block(st.body)
                st.orelse = self.block(st.orelse)
            out.append(st)
        return out

    def loop(self, loop: ast.For) -> list[ast.stmt]:
        """The statements hoisted out of ``loop`` (in order), then the loop itself."""
        loop.body = self.block(loop.body)
        if _trips(loop) < 2 or loop.orelse:
            return [loop]  # a loop that may not run keeps its work: it might never be done
        stores = Counter(
            n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        )
        writes_memory = any(
            isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) for n in ast.walk(loop)
        )
        pure = self.pure

        memo: dict[int, tuple[ast.AST, bool]] = {}  # by id, the node kept so ids stay

        def invariant(e: ast.AST) -> bool:
            """Whether ``e`` gives the same value in every iteration (and may move)."""
            found = memo.get(id(e))
            if found is not None and found[0] is e:
                return found[1]
            if isinstance(e, ast.Name):
                same = not (isinstance(e.ctx, ast.Load) and e.id in stores)
            elif isinstance(e, ast.Subscript):
                same = not writes_memory
            elif isinstance(e, ast.Call):
                same = isinstance(e.func, ast.Name) and e.func.id in pure and not e.keywords
            else:
                same = isinstance(e, _PURE_NODES)
            same = same and all(invariant(c) for c in ast.iter_child_nodes(e))
            memo[id(e)] = (e, same)
            return same

        hoisted: list[ast.stmt] = []
        shared: dict[str, str] = {}  # a hoisted subexpression's dump → its name
        read_so_far: set[str] = set()
        body: list[ast.stmt] = []
        for st in loop.body:
            target = _single_target(st)
            if (
                target is not None
                and stores[target] == 1
                and target not in read_so_far
                and invariant(st.value)  # type: ignore[attr-defined]
            ):
                hoisted.append(st)
                del stores[target]  # its readers may now move too
                continue
            if isinstance(st, (ast.Assign, ast.Expr)):
                self.lift(st, invariant, hoisted, shared)
            read_so_far |= {
                n.id
                for n in ast.walk(st)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
            body.append(st)
        loop.body = body
        return [*hoisted, loop]

    def lift(self, st: ast.stmt, invariant, hoisted: list, shared: dict) -> None:
        """Replace the largest invariant subexpressions ``st`` always evaluates by names,
        assigned among ``hoisted`` (one name per distinct subexpression)."""

        def visit(e: ast.expr, whole: bool = False) -> ast.expr:
            if whole:
                e = _grouped(e, invariant)
            if invariant(e):
                if isinstance(e, (ast.Name, ast.Constant)) or not any(
                    isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) for n in ast.walk(e)
                ):
                    return e  # nothing to gain (constants fold when compiled)
                key = ast.dump(e)
                name = shared.get(key)
                if name is None:
                    name = shared[key] = next(self.names)
                    hoisted.append(ast.Assign([ast.Name(name, ast.Store())], e, lineno=0))
                return ast.Name(name, ast.Load())
            # only the parts evaluated whenever the statement runs: not a branch of a
            # conditional, nor the operands a boolean operator may skip
            if isinstance(e, ast.IfExp):
                e.test = visit(e.test)
            elif isinstance(e, ast.BoolOp):
                e.values[0] = visit(e.values[0])
            elif isinstance(e, ast.Subscript):
                e.value, e.slice = visit(e.value), visit(e.slice, whole=True)
            elif isinstance(e, ast.BinOp) and (whole or isinstance(e.op, _WHOLE_OPS)):
                # operands of a shift or mask, and sums inside them, are whole numbers
                e.left, e.right = visit(e.left, whole=True), visit(e.right, whole=True)
            else:
                for field, value in ast.iter_fields(e):
                    if isinstance(value, ast.expr):
                        setattr(e, field, visit(value))
                    elif isinstance(value, list):
                        setattr(
                            e, field, [visit(v) if isinstance(v, ast.expr) else v for v in value]
                        )
            return e

        if isinstance(st, ast.Assign):
            st.value = visit(st.value)
            st.targets = [
                ast.Subscript(visit(t.value), visit(t.slice, whole=True), t.ctx)
                if isinstance(t, ast.Subscript)
                else t
                for t in st.targets
            ]
        else:
            st.value = visit(st.value)  # type: ignore[attr-defined]


def _trips(loop: ast.For) -> int:
    """How many times ``for v in range(N)`` runs when N is a constant (0 otherwise)."""
    it = loop.iter
    if (
        isinstance(loop.target, ast.Name)
        and isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and len(it.args) == 1
        and not it.keywords
        and isinstance(it.args[0], ast.Constant)
        and type(it.args[0].value) is int
    ):
        return it.args[0].value
    return 0


_PURE_NODES = (
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
    ast.IfExp,
    ast.Constant,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.Call,
    ast.Subscript,
    ast.Name,
)


def _single_target(st: ast.stmt) -> str | None:
    if isinstance(st, ast.Assign) and len(st.targets) == 1:
        t = st.targets[0]
        if isinstance(t, ast.Name):
            return t.id
    return None


_WHOLE_OPS = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)


def _grouped(e: ast.expr, invariant) -> ast.expr:
    """A whole-number sum with its invariant terms gathered first, ``(a + c) + i`` for
    ``a + i + c``, so they form one subexpression that can move (exact for integers;
    floats are never reordered: only positions and shifted words come here)."""
    terms: list[tuple[bool, ast.expr]] = []

    def flatten(x: ast.expr, negative: bool) -> None:
        if isinstance(x, ast.BinOp) and isinstance(x.op, (ast.Add, ast.Sub)):
            flatten(x.left, negative)
            flatten(x.right, negative ^ isinstance(x.op, ast.Sub))
        else:
            terms.append((negative, x))

    flatten(e, False)
    fixed = [t for t in terms if invariant(t[1])]
    if len(terms) < 3 or not fixed or len(fixed) == len(terms):
        return e
    moving = [t for t in terms if not invariant(t[1])]
    out: ast.expr | None = None
    for negative, x in fixed + moving:
        if out is None:
            out = ast.UnaryOp(ast.USub(), x) if negative else x
        else:
            out = ast.BinOp(out, ast.Sub() if negative else ast.Add(), x)
    assert out is not None
    return out
