"""The printer every backend shares: a program in, source text and a node ↔ line map out.

A backend is a subclass holding tables — operator templates, function names, type names,
literal spellings — plus the few lines that open and close its kernel or function. All
walking, precedence, parenthesising, naming and line bookkeeping happens here, once.

Kernel layout (every GPU backend, and the C/JS/Python kernels): the program's ``Layout``
(``tang.lower.program``) — today inputs packed column by column in one buffer ``src`` (input
``k`` of item ``i`` at ``src[k*n + i]``), outputs the same way in ``dst`` (output ``j`` at
``dst[j*n + i]``), and ``n`` is the item count. A printer spells the layout's addresses;
each backend module's docstring spells out its own bindings.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..expr.graph import BOOL_OPS, Node, const
from ..expr.ops import LIBRARY
from .bindings import Binding, KernelInfo
from .program import ABS, Copy, Layout, Let, Load, Loop, Program, Store

ONE = const(1.0)

# precedence of a printed expression; higher binds tighter. The bit operators sit where C
# puts them (shifts below +, &, ^ and | below comparisons), and their operands always get
# parentheses unless atoms: Python and C order & against comparisons differently.
ATOM, UNARY, MUL, ADD, SHIFT, CMP, BITS, SELECT, LOWEST = 100, 90, 80, 70, 65, 60, 50, 10, 0


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


FUNCTIONS: dict[str, int] = LIBRARY  # the registry's math-library functions: name -> arity
# tanh in the shading languages whose built-in tanh may return nan once exp overflows
# (WGSL and GLSL leave its accuracy to sinh/cosh): a formula that saturates to ±1 and keeps
# nan. Near 0 its error is absolute (~1 ulp of 1), as the built-ins' may be.
TANH_FROM_EXP = Op("1.0 - 2.0 / (exp({0} * 2.0) + 1.0)", ADD, (MUL,))

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

# Integers (``Printer.int_dtypes``): the C family's arithmetic and comparisons, the bit
# operators, a remainder with the divisor's sign (Python's %), and a select as a mask
# (both operands computed, no branch the compiler could make of ``c ? a : b``).
C_INT_OPS: dict[str, Op] = {
    **{k: C_OPS[k] for k in ("add", "sub", "mul", "neg", "lt", "le", "eq")},
    "bitand": Op("{0} & {1}", BITS, (UNARY, UNARY)),
    "bitor": Op("{0} | {1}", BITS, (UNARY, UNARY)),
    "bitxor": Op("{0} ^ {1}", BITS, (UNARY, UNARY)),
    "shl": Op("{0} << {1}", SHIFT, (UNARY, UNARY)),
    "shr": Op("{0} >> {1}", SHIFT, (UNARY, UNARY)),
    "mod": Op("(({0} % {1}) + {1}) % {1}", MUL, (UNARY, UNARY)),
    "select": Op("{2} ^ (-({itype})({0}) & ({1} ^ {2}))", BITS, (LOWEST, UNARY, UNARY)),
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
    sqrt sin cos tan tanh exp exp2 log log2 atan atan2 pow select fabs floor ceil
    sqrtf sinf exp2f log2f tanhf atan2f main gid i n src dst out params
    INFINITY NAN
    """.split()  # noqa: SIM905 - a block of words reads better than a list of strings
)
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
TEMP = re.compile(r"t[0-9]+\Z")


def identifiers(names: Sequence[str]) -> dict[str, str]:
    """A safe, distinct identifier for each input name, the same in every backend: names
    that are plain ASCII identifiers and not reserved are kept, others get a suffix."""
    return dict(_identifiers(tuple(names)))


@functools.lru_cache(maxsize=256)
def _identifiers(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
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
    return tuple(out.items())


@functools.lru_cache(maxsize=64)
def check_name(name: str) -> str:
    """Validate a kernel/function name (cached: every render checks one)."""
    if not isinstance(name, str) or not IDENT.match(name) or name in RESERVED or TEMP.match(name):
        raise ValueError(f"{name!r} cannot name a kernel: use a plain identifier, not a keyword")
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
    first_line: int  # the line of body[0]
    body_nodes: tuple[tuple[Node, ...], ...]  # the nodes each body line computes or stores

    @functools.cached_property
    def info(self) -> KernelInfo | None:
        """A GPU kernel's entry point, workgroup size and bindings (what a device checks
        and binds); None for a function or a CPU language's kernel."""
        printer = _PRINTERS.get(self.backend)
        if self.shape != "kernel" or printer is None or not printer.bindings:
            return None
        return KernelInfo(self.name, printer.workgroup_size, printer.bindings)

    @functools.cached_property
    def line_nodes(self) -> dict[int, tuple[Node, ...]]:
        """Line number → the nodes that line computes (loads, steps, stores)."""
        return dict(enumerate(self.body_nodes, start=self.first_line))

    @functools.cached_property
    def node_lines(self) -> dict[Node, tuple[int, ...]]:
        """Node → the lines that compute or store it (the page's hover link back)."""
        lines: dict[Node, list[int]] = {}
        for number, nodes in self.line_nodes.items():
            for n in nodes:
                lines.setdefault(n, []).append(number)
        return {n: tuple(ls) for n, ls in lines.items()}

    def line_serials(self) -> dict[int, list[int]]:
        """``line_nodes`` with node serials instead of nodes: JSON for the page. Kernels of
        one program in different languages have the same body, so its serial lists are
        made once per program and shared (read them, do not change them)."""
        shared = self.program.__dict__.setdefault("_serial_lists", {})
        lists = shared.get(self.body_nodes)
        if lists is None:
            lists = shared[self.body_nodes] = [[n.serial for n in ns] for ns in self.body_nodes]
        return dict(zip(range(self.first_line, self.first_line + len(lists)), lists))

    def __str__(self) -> str:
        return self.source


# an op as a printer prints it: template, precedence, operand needs, and the template's
# text around its operands when it names each once and in order (else None)
Entry = tuple[str, int, tuple[int, ...], tuple[str, ...] | None]


def _pieces(template: str, arity: int) -> tuple[str, ...] | None:
    """The text before, between and after the operands of ``template`` when it names
    ``{0}``, ``{1}``, … once each and in order: then an expression is concatenation."""
    parts = re.split(r"\{(\d+)\}", template)
    texts, fields = parts[0::2], parts[1::2]
    if fields != [str(k) for k in range(arity)] or any("{" in t or "}" in t for t in texts):
        return None
    return tuple(texts)


_PRINTERS: dict[str, type[Printer]] = {}  # backend name -> its printer class

# The statements of a loop nest that tang.tensor prints inside a function or a kernel (its
# loops, accumulators, private and workgroup arrays, conditionals and barriers), and those
# that frame a loop-nest function (``tang.tensor.lower.lower_graph``). A backend that lowers
# tensor graphs spells each as a class attribute; the others lack them (``Printer.require``).
LOOP_NEST = (
    "loop",
    "loop_step",
    "loop_end",
    "unroll",
    "state",
    "assign",
    "declare_index",
    "as_value",
    "clamp",
    "to_index",
    "element",
    "array",
    "unravel",
    "minimum",
    "block",
    "block_end",
    "when",
    "when_end",
    "shared",
    "barrier",
)
# The spellings a scalar program with loops (tang.expr.loop) needs: every backend has them.
LOOP_SPELLINGS = ("repeat", "repeat_end", "carry", "carry_set", "step_value", "step_count")
LOOP_NEST_FUNCTION = ("nest_header", "nest_function", "nest_end", "param_in", "param_out")


class Printer:
    """Base of every backend: subclasses fill in the tables and the kernel/function frame."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        _PRINTERS[cls.name] = cls

    name: str = ""
    # how people see it: the page's tab, a file's extension, the editor's highlighting mode
    label: str = ""
    extension: str = "txt"
    language: str = "cpp"  # one of the page's modes: cpp, javascript, python, wgsl
    dtypes: tuple[str, ...] = ("f32",)  # the first is the default
    kinds: tuple[str, ...] = ("kernel",)  # what it prints: "kernel", "function"
    types: dict[str, str] = {"f32": "float", "f64": "double"}
    bool_type: str = "bool"
    ops: dict[str, Op] = C_OPS
    ops_f32: dict[str, Op] | None = None  # a different table for f32, where the names differ
    # integer element types (tang.crypto's graphs; none: floats only), their op table and
    # a literal's suffix where a large one needs it ({v}: the digits)
    int_dtypes: tuple[str, ...] = ()
    ops_int: dict[str, Op] = {}
    int_literal: str = "{v}"
    comment: str = "//"
    indent: str = "    "
    float_suffix: dict[str, str] = {"f32": "f", "f64": ""}
    inf: dict[str, str] = {"f32": "INFINITY", "f64": "INFINITY"}
    nan: dict[str, str] = {"f32": "NAN", "f64": "NAN"}
    uint_suffix: str = ""
    declare: str = "const {type} {name} = {expr};"
    store: str = "{buffer}[{index}] = {expr};"
    fn_store: str = "out[{k}] = {expr};"
    fn_return: str | None = None  # e.g. "return [{exprs}];" for languages that return
    bindings: tuple[Binding, ...] = ()  # a GPU kernel's resources, which its frame declares
    workgroup_size: tuple[int, int, int] = (1, 1, 1)

    # ---- loops of scalar programs (``tang.expr.loop``; ``LOOP_SPELLINGS``): every backend
    # has them; these are the C family's
    repeat: str = "for (int {var} = 0; {var} < {extent}; {var}++) {{"  # {extent} steps
    repeat_end: str | None = "}"  # closes it (None: indentation does)
    carry: str = "{type} {name} = {value};"  # a state carried from step to step
    carry_set: str = "{name} = {expr};"  # its next value
    step_value: str = "(({type}){name})"  # the step counter {name} as a number
    step_count: str = "(int)({x})"  # a traced count {x} (whole, 0 to 2**24) as an integer

    # ---- loop nests (``LOOP_NEST``, ``LOOP_NEST_FUNCTION``): ``str.format`` templates that
    # only a backend lowering tensor graphs defines (C, Python, WGSL); a buffer element
    # loads with ``declare`` and stores with ``store``, its position spelt by ``element`` ----
    loop: str  # a loop of {var} over range({extent}), opened
    loop_step: str  # the same counting by {step}: {var}, {extent}, {step}
    loop_end: str | None  # closes a loop (None: indentation does)
    unroll: int  # innermost loops of a constant extent up to this print unrolled (0: none)
    state: str  # a mutable local, e.g. an accumulator: {type}, {name}, {value}
    assign: str  # {name}, {expr}
    declare_index: str  # an integer local: {name}, {expr}
    as_value: str  # an index variable used as a number: {name}, {type}
    clamp: str  # a position kept inside its buffer: {p}, {last}
    # a number read from memory as a position in [0, {last}]: whole part, nan → 0 ({x} is
    # a local's name; a gather's index, see tang.tensor.passes.schedule.data_pin)
    to_index: str
    element: str  # one element of a buffer, private or workgroup array: {name}, {i}
    array: str  # a private array of {size} elements set to {value}: {type}, {name}
    unravel: str  # one axis of a flat index: {flat}, {stride}, {extent}
    minimum: str  # the smaller of two integers: {a}, {b}
    block: str | None  # opens a nested scope (None: the language needs none)
    block_end: str | None
    when: str  # opens a conditional block: {cond}
    when_end: str | None
    shared: str | None  # workgroup memory: {type}, {name}, {size} (None: no workgroups)
    barrier: str | None  # every invocation of the workgroup waits here (None: no workgroups)
    # compiled loop nests only (C): the next loop's iterations run on every core ({depth}:
    # how many perfectly nested loops share them; {balance}: "static" for equal halves,
    # "dynamic" for iterations of unequal work), and a heap array ({type}, {name},
    # {size}) freed by ``scratch_end`` ({name}); None where the language has neither
    parallel: str | None = None
    scratch: str | None = None
    scratch_end: str | None = None
    # compiled loop nests: a line before a loop asking the compiler to unroll it ({extent}
    # times), so that the arrays it indexes stay in registers; None: no such request
    unroll_hint: str | None = None
    # kernels only (WGSL): a buffer read ``wide`` elements at a time, as one vector per
    # load: its binding's type ({type}), element {i} of such a buffer ({name}) and a
    # private array of {size} vectors ({type}, {name}); a vector's cell is an ``element``
    # of it. ``wide`` 1: one element per load
    wide: int = 1
    wide_buffer: str | None = None
    wide_element: str | None = None
    wide_array: str | None = None
    nest_header: tuple[str, ...]  # lines before a loop-nest function
    nest_function: str  # opens it: {name}, {params}
    nest_end: str | None  # closes it (None: indentation does)
    param_in: str  # a buffer it reads: {type}, {name}
    param_out: str  # a buffer it writes: {type}, {name}
    # packed inputs (tang.tensor.packed): element {i} of u32 words {name} as a number of
    # {type}, by element type ("u4", "u8", "i8", "u16", "f16"); the words' parameter type
    packed: dict[str, str] = {}
    word_type: str = ""

    def finish_nest(self, source: str) -> str:
        """A pass over a printed loop nest before it is returned (none here: a compiler
        hoists and simplifies by itself)."""
        return source

    # ---- the frame: what each backend writes around the body ----
    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        """Lines before the body, the body's indent depth, and lines after it."""
        raise NotImplementedError

    def function_frame(
        self, name: str, ty: str, params: list[str], prog: Program
    ) -> tuple[list[str], int, list[str]]:
        raise NotImplementedError(f"{self.name} prints kernels only")

    def require(self, spellings: Sequence[str], what: str) -> None:
        """Raise a ValueError naming which of ``spellings`` this backend lacks, when
        ``what`` (say "tensor graphs") needs them."""
        missing = [s for s in spellings if not hasattr(self, s)]
        if missing:
            raise ValueError(
                f"the {self.label} printer cannot print {what}: it has no spelling for "
                f"{', '.join(missing)}"
            )

    # ---- literals and references ----
    def literal(self, v: float, dtype: str) -> tuple[str, int]:
        """Exact text for the constant ``v`` in ``dtype`` and its precedence."""
        caches = self.__dict__.setdefault("_literals", {})
        cache = caches.get(dtype) or caches.setdefault(dtype, {})
        key = v if v == v and v else struct.pack("<d", v)  # ±0 and nan by their bits
        got = cache.get(key)
        if got is None:
            got = cache[key] = self._literal(v, dtype)
        return got

    def _literal(self, v: float, dtype: str) -> tuple[str, int]:
        if dtype in self.int_dtypes:
            if v != v or v != int(v):
                raise ValueError(f"{v!r} is not a whole number, all an {dtype} program holds")
            text = self.int_literal.format(v=abs(int(v))) if abs(v) >= 2**31 else str(abs(int(v)))
            return ("-" + text, UNARY) if v < 0 else (text, ATOM)
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

    def index(self, k: int, layout: Layout) -> str:
        """The buffer index of column ``k`` of the current item, as ``layout`` places it."""
        column, count, item = layout.address(k)
        if column == 0:
            return item
        if column == 1:
            return f"{count} + {item}"
        return f"{column}{self.uint_suffix} * {count} + {item}"

    def addressing(self, k: int, layout: Layout) -> tuple[str, tuple[str, ...]]:
        """Column ``k``'s load (``src[…]``) and its store line cut around the expression,
        made once per column and layout: every kernel addresses the same few columns."""
        cache = self.__dict__.setdefault("_addressing", {})
        got = cache.get((k, layout))
        if got is None:
            index = self.index(k, layout)
            fixed = (("buffer", layout.dest), ("index", index))
            got = (f"{layout.source}[{index}]", _spliced(self.store, ("expr",), fixed))
            if len(cache) < 4096:
                cache[(k, layout)] = got
        return got

    # ---- expressions ----
    def table(self, dtype: str) -> dict[str, Entry]:
        """The op table for ``dtype`` as (template with the literal 1 filled in, precedence,
        operand needs, pieces), built once per printer and dtype."""
        cache = self.__dict__.setdefault("_tables", {})
        if dtype not in cache:
            ops = self.ops_f32 if dtype == "f32" and self.ops_f32 else self.ops
            if dtype in self.int_dtypes:
                ops = self.ops_int
            one = self.literal(1.0, dtype)[0]
            cache[dtype] = {}
            for k, op in ops.items():
                template = op.template.replace("{one}", one)
                template = template.replace("{itype}", self.types.get(dtype, ""))
                cache[dtype][k] = (template, op.prec, op.needs, _pieces(template, len(op.needs)))
        return cache[dtype]

    def expression(self, nodes: tuple[Node, ...], known: dict, forms: dict, table: dict) -> str:
        """Text of the last of ``nodes`` (an inlined subtree, children first). ``known``
        holds (text, precedence) of temporaries, inputs and constants, and gains the
        inlined nodes' texts; ``forms`` is the program's ``forms``."""
        text = ""
        for node in nodes:
            op_name, args = forms[node]
            template, prec, needs, pieces = table[op_name]
            if pieces is None:  # operands out of order (a select, say): format
                parts = [known[a] for a in args]
                text = template.format(
                    *[f"({t})" if p < n else t for (t, p), n in zip(parts, needs)]
                )
            elif len(args) == 2:
                t0, p0 = known[args[0]]
                t1, p1 = known[args[1]]
                if p0 < needs[0]:
                    t0 = "(" + t0 + ")"
                if p1 < needs[1]:
                    t1 = "(" + t1 + ")"
                text = pieces[0] + t0 + pieces[1] + t1 + pieces[2]
            elif len(args) == 1:
                t0, p0 = known[args[0]]
                if p0 < needs[0]:
                    t0 = "(" + t0 + ")"
                text = pieces[0] + t0 + pieces[1]
            else:
                parts = [known[a] for a in args]
                text = pieces[0]
                for (t, p), n, piece in zip(parts, needs, pieces[1:]):
                    text += ("(" + t + ")" if p < n else t) + piece
            known[node] = (text, prec)
        return text

    # ---- whole programs ----
    def render(
        self, prog: Program, *, shape: str = "kernel", dtype: str | None = None, name: str = "f"
    ) -> Lowered:
        """Print ``prog`` as a ``shape`` ("kernel" or "function") in ``dtype``: its
        statements one line each, inside the backend's frame."""
        dtype = dtype or self.dtypes[0]
        if dtype not in self.dtypes + self.int_dtypes:
            known = ", ".join(self.dtypes + self.int_dtypes)
            raise ValueError(f"{self.name} has no {dtype}; it supports {known}")
        if shape not in self.kinds:
            raise ValueError(f"{self.name} prints {' and '.join(self.kinds)}s, not '{shape}'")
        check_name(name)
        ty = self.types[dtype]
        idents = identifiers(prog.inputs)
        known: dict[Node, tuple[str, int]] = {}  # temporaries join as their lets print
        for node in prog.leaves:
            if node.op == "var":
                known[node] = (idents[node.name], ATOM)  # type: ignore[index]
            else:
                known[node] = text = self.literal(node.value, dtype)  # type: ignore[arg-type]
                if text[1] == UNARY:
                    known[(ABS, node)] = (text[0][1:], ATOM)  # type: ignore[index]

        head, depth, tail = self.frame(shape, name, ty, prog)
        pad = self.indent * depth
        lines: list[str] = [*head]  # the source, line by line
        nodes: list[tuple[Node, ...]] = []  # the nodes of each body line
        stored: list[tuple[str, tuple[Node, ...]]] = []  # a function's outputs, for its return
        page = (ty, dtype, shape, prog, known, lines, nodes, stored)
        self._statements(prog.statements, depth, page)
        if stored:
            lines.append(pad + self.fn_return.format(exprs=", ".join(e for e, _ in stored)))
            nodes.append(tuple(n for _, ns in stored for n in ns))
        lines.extend(tail)
        source = "\n".join(lines) + "\n"
        return Lowered(self.name, shape, dtype, name, source, prog, len(head) + 1, tuple(nodes))

    def _statements(self, statements: Sequence[object], depth: int, page: tuple) -> None:
        """Print ``statements`` at ``depth`` onto ``page`` (type, dtype, shape, program, the
        texts known so far, and the lines, their nodes and a function's outputs so far)."""
        ty, dtype, shape, prog, known, lines, nodes, stored = page
        pad = self.indent * depth
        forms, table, expression = prog.forms, self.table(dtype), self.expression
        kernel, layout = shape == "kernel", prog.layout
        addressing = self.__dict__.get("_addressing") or {}  # see ``addressing``
        declare = _spliced(self.declare, ("name", "expr"), (("type", ty),))
        declare_bool = _spliced(self.declare, ("name", "expr"), (("type", self.bool_type),))
        for st in statements:
            kind = st.__class__
            if kind is Let:
                expr = expression(st.nodes, known, forms, table)  # type: ignore[attr-defined]
                known[st.node] = (st.name, ATOM)  # type: ignore[attr-defined]  # later lines use it
                before, between, after = declare_bool if st.node.op in BOOL_OPS else declare  # type: ignore[attr-defined]
                lines.append(pad + before + st.name + between + expr + after)  # type: ignore[attr-defined]
                nodes.append(st.nodes)  # type: ignore[attr-defined]
            elif kind is Load:
                if kernel:
                    before, between, after = declare
                    load = (
                        addressing.get((st.column, layout)) or self.addressing(st.column, layout)  # type: ignore[attr-defined]
                    )[0]
                    lines.append(pad + before + known[st.node][0] + between + load + after)  # type: ignore[attr-defined]
                    nodes.append((st.node,))  # type: ignore[attr-defined]
            elif kind is Store:
                if st.nodes:  # type: ignore[attr-defined]
                    expr, ns = expression(st.nodes, known, forms, table), st.nodes  # type: ignore[attr-defined]
                else:
                    expr, ns = known[st.node][0], (st.node,)  # type: ignore[attr-defined]
                if kernel:
                    before, after = (
                        addressing.get((st.index, layout)) or self.addressing(st.index, layout)  # type: ignore[attr-defined]
                    )[1]
                    lines.append(pad + before + expr + after)
                    nodes.append(ns)
                elif self.fn_return is None:
                    lines.append(pad + self.fn_store.format(k=st.index, expr=expr))  # type: ignore[attr-defined]
                    nodes.append(ns)
                else:
                    stored.append((expr, ns))
            elif kind is Copy:  # a state's old value, kept for a swap
                before, between, after = declare
                lines.append(pad + before + st.name + between + known[st.node][0] + after)  # type: ignore[attr-defined]
                nodes.append(())
            else:
                self._loop(st, depth, page)  # type: ignore[arg-type]

    def _loop(self, st: Loop, depth: int, page: tuple) -> None:
        """A loop: its states declared, the loop opened, its body, the updates, closed."""
        ty, known, lines, nodes = page[0], page[4], page[5], page[6]
        pad = self.indent * depth
        named = dict(st.outs)
        by_name = {name: out for out, name in st.outs}
        for _, name, init in st.states:
            line = self.carry.format(type=ty, name=name, value=known[init][0])
            lines.append(pad + line)
            out = by_name.get(name)
            nodes.append((out,) if out is not None else (st.node,))
        if st.count.op == "const":
            extent = str(int(st.count.value))  # type: ignore[arg-type]
        else:
            extent = self.step_count.format(x=known[st.count][0])
        lines.append(pad + self.repeat.format(var=st.counter, extent=extent))
        nodes.append((st.node,))
        # the body's parameters, read by name (restored after: another loop may reuse them)
        saved = {p: known.get(p) for p in (st.index, *(p for p, _, _ in st.states))}
        saved.update((p, known.get(p)) for p, _ in st.captures)
        known[st.index] = (self.step_value.format(type=ty, name=st.counter), ATOM)
        for p, name, _ in st.states:
            known[p] = (name, ATOM)
        for p, outer in st.captures:
            known[p] = known[outer]
        self._statements(st.body, depth + 1, page)
        inner = self.indent * (depth + 1)
        for name, node, via in st.updates:
            lines.append(inner + self.carry_set.format(name=name, expr=via or known[node][0]))
            nodes.append((node,))
        if self.repeat_end is not None:
            lines.append(pad + self.repeat_end)
            nodes.append(())
        for p, text in saved.items():
            if text is None:
                known.pop(p, None)
            else:
                known[p] = text
        for out, name in named.items():
            known[out] = (name, ATOM)

    def frame(
        self, shape: str, name: str, ty: str, prog: Program
    ) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
        """``kernel_frame`` or ``function_frame``, cached per printer: a frame depends on the
        program only through its inputs, output names, layout and whether it reads any input (the
        editor prints eight backends per keystroke, mostly with the same frame)."""
        cache = self.__dict__.setdefault("_frames", {})
        key = (shape, name, ty, prog.inputs, prog.output_names, not prog.loads, prog.layout)
        got = cache.get(key)
        if got is None:
            if len(cache) >= 256:
                cache.clear()
            if shape == "kernel":
                got = self.kernel_frame(name, ty, prog)
            else:
                params = list(identifiers(prog.inputs).values())
                got = self.function_frame(name, ty, params, prog)
            got = cache[key] = (tuple(got[0]), got[1], tuple(got[2]))
        return got

    # ---- helpers for frames ----
    def layout_comment(self, prog: Program) -> str:
        """One comment line naming the columns of the packed input and output buffers."""
        return f"{self.comment} {_layout(prog.inputs, prog.output_names, prog.layout)}"


@functools.lru_cache(maxsize=1024)
def _spliced(
    template: str, holes: tuple[str, ...], fixed: tuple[tuple[str, str], ...]
) -> tuple[str, ...]:
    """``template`` (a line such as ``declare``) with the ``fixed`` fields filled in, cut
    around its ``holes`` (which it names once each, in this order): the pieces before,
    between and after them, so that each line is then plain concatenation."""
    marks = [f"\0{k}\0" for k in range(len(holes))]
    text = template.format(**dict(fixed), **dict(zip(holes, marks, strict=True)))
    at = [text.find(m) for m in marks]
    if any(text.count(m) != 1 for m in marks) or at != sorted(at):
        raise ValueError(f"{template!r} must name each of {', '.join(holes)} once, in order")
    return tuple(re.split("\0[0-9]+\0", text))


@functools.lru_cache(maxsize=256)
def _layout(inputs: tuple[str, ...], output_names: tuple[str, ...], layout: Layout) -> str:
    ins = ", ".join(f"{k}: {n}" for k, n in enumerate(identifiers(inputs).values()))
    outs = ", ".join(f"{k}: {_safe(n)}" for k, n in enumerate(output_names))
    src, dst = layout.describe().split("; ")
    return f"{src} ({ins or 'none'}); {dst} ({outs})"


def _safe(text: str) -> str:
    """Output names are user text: keep them printable and harmless inside a comment."""
    return re.sub(r"[^A-Za-z0-9_'/ ∂.()]", "?", text)[:40].replace("*/", "?/")
