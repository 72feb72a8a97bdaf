"""The printer every backend shares: a program in, source text and a node ↔ line map out.

A backend is a subclass holding tables — operator templates, function names, type names,
literal spellings — plus the few lines that open and close its kernel or function. All
walking, precedence, parenthesising, naming and line bookkeeping happens here, once.

Kernel layout (every GPU backend, and the C/JS/Python kernels): inputs are packed column by
column in one buffer ``src`` (input ``k`` of item ``i`` at ``src[k*n + i]``), outputs the
same way in ``dst`` (output ``j`` at ``dst[j*n + i]``), and ``n`` is the item count. Each
backend module's docstring spells out its own bindings.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..expr.graph import Node, const
from .program import Program

ONE = const(1.0)

# precedence of a printed expression; higher binds tighter
ATOM, UNARY, MUL, ADD, CMP, SELECT, LOWEST = 100, 90, 80, 70, 60, 10, 0


@dataclass(frozen=True)
class Op:
    """How to print one operation: a ``str.format`` template over operand texts ``{0}`` …
    (and ``{one}``, the literal 1), the precedence of the result, and the least precedence
    each operand may have before it needs parentheses."""

    template: str
    prec: int
    needs: tuple[int, ...]


def call(fn: str, arity: int = 1) -> Op:
    """A function call ``fn(a, b, …)``: an atom whose operands never need parentheses."""
    operands = ", ".join(f"{{{k}}}" for k in range(arity))
    return Op(f"{fn}({operands})", ATOM, (LOWEST,) * arity)


def functions(spelling: str = "{}") -> dict[str, Op]:
    """The math primitives as calls named by ``spelling`` (e.g. ``"{}f"``, ``"Math.{}"``)."""
    return {fn: call(spelling.format(fn), arity) for fn, arity in FUNCTIONS.items()}


FUNCTIONS = {"sqrt": 1, "sin": 1, "exp2": 1, "log2": 1, "atan2": 2}

# The C family's spelling of the primitives; float add and mul are not associative, so a
# right operand of the same precedence keeps its parentheses. ``sub`` prints add(a, -b).
C_OPS: dict[str, Op] = {
    "add": Op("{0} + {1}", ADD, (ADD, ADD + 1)),
    "sub": Op("{0} - {1}", ADD, (ADD, ADD + 1)),
    "mul": Op("{0} * {1}", MUL, (MUL, MUL + 1)),
    "neg": Op("-{0}", UNARY, (ATOM,)),
    "recip": Op("{one} / {0}", MUL, (MUL + 1,)),
    "lt": Op("{0} < {1}", CMP, (CMP + 1, CMP + 1)),
    "le": Op("{0} <= {1}", CMP, (CMP + 1, CMP + 1)),
    "eq": Op("{0} == {1}", CMP, (CMP + 1, CMP + 1)),
    "select": Op("{0} ? {1} : {2}", SELECT, (SELECT + 1,) * 3),
    **functions(),
}

# Words no backend may use as a variable name: keywords and types of C/C++/CUDA/Metal/
# OpenCL/GLSL/WGSL/JavaScript/Python, the math functions we call, and the kernels' own names.
RESERVED = frozenset(
    """
    alignas alignof and array as asm assert async atomic auto await bitcast bool break buffer
    byte case catch char class const constant constexpr continue def default del delete
    device discard do double elif else enable enum except export extends extern false
    finally float fn for from function global goto groups half highp if import in inline
    inout int is kernel lambda layout let long loop lowp mediump namespace new nonlocal not
    null nullptr operator or out override pass precise precision private protected ptr
    public raise readonly register restrict return sampler shared short signed sizeof
    static struct super switch template this thread threadgroup throw true try type typedef
    typename typeof uint uniform union unsigned using var void volatile while with yield
    f16 f32 f64 i32 i64 u32 u64 vec2 vec3 vec4 mat2 mat3 mat4 dvec2 dvec3 dvec4 bvec2
    alias case continuing active become cast coherent common filter final get handle impl
    macro match meta mod module move mut of package partition patch premerge priv pub ref
    requires resource self set smooth std target trait unless unsafe unsized use varying
    virtual wgsl where writeonly Self NULL undefined Infinity NaN Math arguments eval
    instanceof None True False print abs min max
    sqrt sin cos tan exp exp2 log log2 atan atan2 pow select fabs floor ceil
    sqrtf sinf exp2f log2f atan2f main gid i n src dst out params
    INFINITY NAN
    """.split()  # noqa: SIM905 - a block of words reads better than a list of strings
)
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
TEMP = re.compile(r"t[0-9]+\Z")


def identifiers(names: Sequence[str]) -> dict[str, str]:
    """A safe, distinct identifier for each input name, the same in every backend: names
    that are plain ASCII identifiers and not reserved are kept, others get a suffix."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_]", "_", name)
        base = re.sub(r"_+", "_", base)
        if not base or not base[0].isalpha():
            base = "v" + base
        if base.startswith("gl_"):  # GLSL reserves the gl_ prefix
            base = "v" + base
        ident = base
        if base in RESERVED or TEMP.match(base):
            ident = base + "_"
        k = 1
        while ident in taken or TEMP.match(ident):
            k += 1
            ident = f"{base.rstrip('_')}_{k}"
        taken.add(ident)
        out[name] = ident
    return out


def check_name(name: str) -> str:
    """Validate a kernel/function name."""
    if not IDENT.match(name) or name in RESERVED or TEMP.match(name):
        raise ValueError(f"'{name}' cannot name a kernel: use a plain identifier, not a keyword")
    return name


# ---------------------------------------------------------------------------------------
# exact literals


def to_f32(v: float) -> float:
    """Round a double to the nearest f32 (ties to even; too large becomes ±inf)."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def _f32_from_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _rounds_to_f32(text: str, x: float) -> bool:
    """Whether decimal ``text`` rounds correctly (to nearest, ties to even) to the f32
    ``x`` > 0, as a compiler reading an f32 literal does."""
    d = float(text)  # correctly rounded to f64; rounding that to f32 can only go wrong
    f = to_f32(d)  # when d lands exactly halfway between two f32 values
    if f != x:
        return False
    bits = _f32_bits(f)
    other = _f32_from_bits(bits + 1 if d > f else bits - 1)
    if d == f or d != (f + other) / 2:
        return True
    q, mid = Fraction(text), Fraction(d)  # a tie in f64: the exact decimal decides
    if q == mid:
        return bits % 2 == 0
    return (q > mid) == (other < f)


@functools.lru_cache(maxsize=4096)
def shortest_f32(x: float) -> str:
    """The shortest decimal that a correct compiler reads back as exactly the f32 ``x``
    (finite, ≥ 0)."""
    if x == 0.0:
        return "0.0"
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if _rounds_to_f32(text, x):
            return text if any(c in text for c in ".e") else text + ".0"
    raise AssertionError(f"no 9-digit decimal for f32 {x!r}")  # 9 digits always suffice


# ---------------------------------------------------------------------------------------
# the printer


@dataclass(frozen=True)
class Lowered:
    """Printed source plus the map between its lines (1-based) and graph nodes."""

    backend: str
    shape: str
    dtype: str
    name: str
    source: str
    program: Program
    line_nodes: dict[int, tuple[Node, ...]]
    node_lines: dict[Node, tuple[int, ...]]

    def __str__(self) -> str:
        return self.source


Line = tuple[str, tuple[Node, ...]]


class Printer:
    """Base of every backend: subclasses fill in the tables and the kernel/function frame."""

    name: str = ""
    dtypes: tuple[str, ...] = ("f32",)  # the first is the default
    shapes: tuple[str, ...] = ("kernel",)
    types: dict[str, str] = {"f32": "float", "f64": "double"}
    bool_type: str = "bool"
    ops: dict[str, Op] = C_OPS
    ops_f32: dict[str, Op] | None = None  # a different table for f32, where the names differ
    comment: str = "//"
    indent: str = "    "
    float_suffix: dict[str, str] = {"f32": "f", "f64": ""}
    inf: dict[str, str] = {"f32": "INFINITY", "f64": "INFINITY"}
    nan: dict[str, str] = {"f32": "NAN", "f64": "NAN"}
    uint_suffix: str = ""
    declare: str = "const {type} {name} = {expr};"
    store: str = "dst[{index}] = {expr};"
    fn_store: str = "out[{k}] = {expr};"
    fn_return: str | None = None  # e.g. "return [{exprs}];" for languages that return

    # ---- the frame: what each backend writes around the body ----
    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        """Lines before the body, the body's indent depth, and lines after it."""
        raise NotImplementedError

    def function_frame(
        self, name: str, ty: str, params: list[str], prog: Program
    ) -> tuple[list[str], int, list[str]]:
        raise NotImplementedError(f"{self.name} prints kernels only")

    # ---- literals and references ----
    def literal(self, v: float, dtype: str) -> tuple[str, int]:
        """Exact text for the constant ``v`` in ``dtype`` and its precedence."""
        if dtype == "f32":
            v = to_f32(v)
        if v != v:
            return self.nan[dtype], ATOM
        mag = abs(v)
        if mag == math.inf:
            text = self.inf[dtype]
        elif dtype == "f32":
            text = shortest_f32(mag) + self.float_suffix["f32"]
        else:
            text = repr(mag) + self.float_suffix["f64"]
        if math.copysign(1.0, v) < 0:
            return "-" + text, UNARY
        return text, ATOM

    def index(self, k: int) -> str:
        """The buffer index of column ``k`` of item ``i``."""
        if k == 0:
            return "i"
        if k == 1:
            return "n + i"
        return f"{k}{self.uint_suffix} * n + i"

    # ---- expressions ----
    def expression(
        self, nodes: tuple[Node, ...], ref: Callable[[Node], tuple[str, int]], dtype: str
    ) -> str:
        """Text of the last of ``nodes`` (an inlined subtree, children first); operands
        outside the subtree print as ``ref`` gives them."""
        texts: dict[Node, tuple[str, int]] = {}
        one = ref(ONE)[0]
        table = self.ops_f32 if dtype == "f32" and self.ops_f32 else self.ops
        for node in nodes:
            args = node.args
            op_name = node.op
            if op_name == "add":  # constants last, x + 1 (IEEE add and mul commute exactly)
                if args[0].op == "const":
                    args = args[::-1]
                args, op_name = self._as_sub(args, texts, ref)
            elif op_name == "mul" and args[1].op == "const":
                args = args[::-1]  # constants first, 2 * x
            op = table[op_name]
            parts = []
            for a, need in zip(args, op.needs):
                if isinstance(a, Node):
                    text, prec = texts.get(a) or ref(a)
                else:
                    text, prec = a
                parts.append(f"({text})" if prec < need else text)
            texts[node] = (op.template.format(*parts, one=one), op.prec)
        return texts[nodes[-1]][0]

    def _as_sub(self, args, texts, ref):
        """add(a, neg(b)) and add(a, -c) print as a - b and a - c (IEEE: the same value)."""
        for a, b in (args, args[::-1]):
            if b in texts and b.op == "neg":
                inner = texts.get(b.args[0]) or ref(b.args[0])
                return (a, inner), "sub"
            if b.op == "const" and math.copysign(1.0, b.value) < 0 and b.value == b.value:
                text = ref(b)[0]
                return (a, (text[1:], ATOM)), "sub"
        return args, "add"

    # ---- whole programs ----
    def render(
        self, prog: Program, *, shape: str = "kernel", dtype: str | None = None, name: str = "f"
    ) -> Lowered:
        """Print ``prog`` as a ``shape`` ("kernel" or "function") in ``dtype``."""
        dtype = dtype or self.dtypes[0]
        if dtype not in self.dtypes:
            raise ValueError(f"{self.name} has no {dtype}; it supports {', '.join(self.dtypes)}")
        if shape not in self.shapes:
            raise ValueError(f"{self.name} prints {' and '.join(self.shapes)}s, not '{shape}'")
        check_name(name)
        ty = self.types[dtype]
        idents = identifiers(prog.inputs)
        temps = prog.temps

        literals: dict[Node, tuple[str, int]] = {}

        def ref(node: Node) -> tuple[str, int]:
            if node.op == "const":
                text = literals.get(node)
                if text is None:
                    text = literals[node] = self.literal(node.value, dtype)  # type: ignore[arg-type]
                return text
            if node.op == "var":
                return idents[node.name], ATOM  # type: ignore[index]
            return temps[node], ATOM

        body: list[Line] = []
        if shape == "kernel":
            head, depth, tail = self.kernel_frame(name, ty, prog)
            columns = {n: k for k, n in enumerate(prog.inputs)}
            for node in prog.loads:
                load = f"src[{self.index(columns[node.name])}]"  # type: ignore[index]
                text = self.declare.format(type=ty, name=idents[node.name], expr=load)  # type: ignore[index]
                body.append((text, (node,)))
        else:
            params = [idents[n] for n in prog.inputs]
            head, depth, tail = self.function_frame(name, ty, params, prog)
        for step in prog.steps:
            step_ty = self.bool_type if step.node.is_bool else ty
            expr = self.expression(step.nodes, ref, dtype)
            body.append((self.declare.format(type=step_ty, name=step.name, expr=expr), step.nodes))
        exprs = []
        for st in prog.stores:
            expr = self.expression(st.nodes, ref, dtype) if st.nodes else ref(st.node)[0]
            exprs.append((expr, (*st.nodes, st.node) if not st.nodes else st.nodes))
        if shape == "kernel":
            for st, (expr, nodes) in zip(prog.stores, exprs):
                index = self.index(st.index)
                body.append((self.store.format(index=index, expr=expr), nodes))
        elif self.fn_return is None:
            for st, (expr, nodes) in zip(prog.stores, exprs):
                body.append((self.fn_store.format(k=st.index, expr=expr), nodes))
        else:
            joined = ", ".join(e for e, _ in exprs)
            nodes = tuple(n for _, ns in exprs for n in ns)
            body.append((self.fn_return.format(exprs=joined), nodes))

        lines: list[Line] = [(h, ()) for h in head]
        pad = self.indent * depth
        lines += [(pad + text, nodes) for text, nodes in body]
        lines += [(t, ()) for t in tail]
        line_nodes: dict[int, tuple[Node, ...]] = {}
        node_lines: dict[Node, list[int]] = {}
        for number, (_, nodes) in enumerate(lines, start=1):
            if nodes:
                line_nodes[number] = nodes
                for n in nodes:
                    node_lines.setdefault(n, []).append(number)
        source = "\n".join(text for text, _ in lines) + "\n"
        return Lowered(
            self.name,
            shape,
            dtype,
            name,
            source,
            prog,
            line_nodes,
            {n: tuple(ls) for n, ls in node_lines.items()},
        )

    # ---- helpers for frames ----
    def layout_comment(self, prog: Program, src: str = "src", dst: str = "dst") -> str:
        """One comment line naming the columns of the packed input and output buffers."""
        ins = ", ".join(f"{k}: {n}" for k, n in enumerate(identifiers(prog.inputs).values()))
        outs = ", ".join(f"{k}: {_safe(n)}" for k, n in enumerate(prog.output_names))
        return (
            f"{self.comment} {src}[k*n + i] = input k ({ins or 'none'}); "
            f"{dst}[j*n + i] = output j ({outs})"
        )


def _safe(text: str) -> str:
    """Output names are user text: keep them printable and harmless inside a comment."""
    return re.sub(r"[^A-Za-z0-9_'/ ∂.()]", "?", text)[:40].replace("*/", "?/")
