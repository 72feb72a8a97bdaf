"""ML-KEM as one C file: the four arithmetic graphs of a parameter set, taint-checked
(``tang.tensor.passes.taint``) and printed by the C printer's tables as integer loop nests,
inside the hand-written driver of ``tang.crypto.c_driver`` (Keccak, SampleNTT, the KEM).

    python -m tang.crypto c ML-KEM-768 -o mlkem768.c

The file defines, for a prefix such as ``tang_mlkem768``::

    int tang_mlkem768_keygen_internal(const uint8_t d[32], const uint8_t z[32],
                                      uint8_t *ek, uint8_t *dk);
    int tang_mlkem768_encaps_internal(const uint8_t *ek, const uint8_t m[32],
                                      uint8_t key[32], uint8_t *c);
    int tang_mlkem768_decaps(const uint8_t *dk, const uint8_t *c, uint8_t key[32]);
    int tang_mlkem768_check_ek(const uint8_t *ek);

each returning 0, or -1 where FIPS 203's input checks refuse the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..tensor.comprehension import TensorGraph
from ..tensor.lower import buffer_order, lower_graph
from ..tensor.passes import taint
from . import kpke, poly
from .c_driver import KECCAK, KEM
from .kpke import Params

# each graph's role in the driver: (macro, its parameters in the driver's order, the secret
# inputs the taint pass starts from)
ROLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "keygen": ("KEYGEN", ("a", "prf_s", "prf_e", "t", "s"), ("prf_s", "prf_e")),
    "encrypt": (
        "ENCRYPT",
        ("t_bytes", "a", "m", "prf_y", "prf_e1", "prf_e2", "c1", "c2"),
        ("m", "prf_y", "prf_e1", "prf_e2"),
    ),
    "decrypt": ("DECRYPT", ("s_bytes", "c1", "c2", "m"), ("s_bytes",)),
    "reencrypt": (
        "REENCRYPT",
        (
            "t_bytes",
            "a",
            "m",
            "prf_y",
            "prf_e1",
            "prf_e2",
            "c1",
            "c2",
            "candidate",
            "rejected",
            "key",
        ),
        ("m", "prf_y", "prf_e1", "prf_e2", "candidate", "rejected"),
    ),
}


# innermost loops this short are printed once per value (a chunk's bits, a sum over the
# module rank): the compiler then folds their shifts and offsets
UNROLL = 12


def graphs(p: Params) -> dict[str, TensorGraph]:
    """The parameter set's four arithmetic graphs, by role."""
    base = p.base
    return {
        "keygen": kpke.keygen_graph(base),
        "encrypt": kpke.encrypt_graph(base),
        "decrypt": kpke.decrypt_graph(base),
        "reencrypt": kpke.reencrypt_graph(base),
    }


def prefix(p: Params) -> str:
    """The C names' prefix: ``tang_mlkem768`` for ML-KEM-768."""
    return "tang_" + p.name.lower().replace("-", "")


def _table(name: str, values: list[int]) -> str:
    rows = ", ".join(str(v) for v in values)
    return f"static const int64_t tang_{name}[{len(values)}] = {{{rows}}};"


def _offsets(graph: TensorGraph, keep: set[str]) -> tuple[dict[str, int], int]:
    """Where each intermediate buffer of ``graph`` lives in one scratch block, and the
    block's size (elements): a buffer's space is reused once its last reader has run
    (first fit over the buffers' lifetimes, in the order the comprehensions run)."""
    comps = graph.comprehensions
    last = {c.name: k for k, c in enumerate(comps)}
    for k, c in enumerate(comps):
        for s in c.sources():
            last[s] = k
    shapes = graph.buffers()
    placed: list[tuple[int, int, int]] = []  # (start, end, last step) of live buffers
    offsets: dict[str, int] = {}
    top = 0
    for k, c in enumerate(comps):
        if c.name in keep:
            continue
        placed = [p for p in placed if p[2] >= k]  # buffers still to be read
        size = math.prod(shapes[c.name])
        start = 0
        for begin, end, _ in sorted(placed):
            if start + size <= begin:
                break
            start = max(start, end)
        offsets[c.name] = start
        placed.append((start, start + size, last[c.name]))
        top = max(top, start + size)
    return offsets, top


def _wrapper(role: str, graph: TensorGraph, pre: str) -> list[str]:
    """Each comprehension of ``graph`` printed as its own function (so that its buffers,
    distinct within one step, keep C's ``restrict``), and a function with the driver's
    parameters calling them in turn: the tables passed in, the intermediate buffers in one
    block on the stack, reused as they die (``_offsets``)."""
    macro, params, _ = ROLES[role]
    shapes = {**graph.inputs, **graph.buffers()}
    offsets, size = _offsets(graph, set(params))

    def pointer(name: str) -> str:
        if name in (poly.ZETAS, poly.GAMMAS):
            return f"tang_{name}"
        return name if name in params else f"scratch + {offsets[name]}"

    lines: list[str] = []
    calls: list[str] = []
    for k, comp in enumerate(graph.comprehensions):
        step = TensorGraph({s: shapes[s] for s in sorted(comp.sources())}, [comp], [comp.name])
        name = f"{pre}_{role}_{k}"
        text = lower_graph(step, "c", dtype="i64", name=name, header=False, unroll=UNROLL)
        lines += ["static " + text.rstrip("\n"), ""]
        calls.append(f"    {name}({', '.join(pointer(n) for n in buffer_order(step))});")
    outputs = set(graph.outputs)
    signature = ", ".join(
        f"int64_t *{n}" if n in outputs else f"const int64_t *{n}" for n in params
    )
    return [
        *lines,
        f"static void {pre}_{role}({signature}) {{",
        f"    int64_t scratch[{max(size, 1)}];",
        *calls,
        "}",
        f"#define {macro} {pre}_{role}",
        "",
    ]


def c_source(
    p: Params, *, replace: Mapping[str, TensorGraph] | None = None, check: bool = True
) -> str:
    """The C file of parameter set ``p``. ``replace``: graphs to print instead of the real
    ones, by role (a variant under test); ``check``: refuse (``TaintError``) a graph where
    secret data steers time, before anything is printed."""
    by_role = {**graphs(p), **(replace or {})}
    if check:
        for role, graph in by_role.items():
            taint.check(graph, ROLES[role][2])
    pre = prefix(p)
    head = [
        f"/* {p.name} (FIPS 203), printed by tang: the arithmetic on secrets is tang's tensor",
        "   IR lowered to integer loop nests (taint-checked: no branch, memory position or",
        "   variable-time operation depends on a secret), the hashing and SampleNTT by hand. */",
        "#include <stdint.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "",
        "#ifndef TANG_DECLASSIFY /* a checker's hook: these bytes are public from here on */",
        "#define TANG_DECLASSIFY(p, n) ((void)(p), (void)(n))",
        "#endif",
        "",
        f"#define K {p.k}",
        f"#define ETA1 {p.eta1}",
        f"#define ETA2 {p.eta2}",
        f"#define DU {p.du}",
        f"#define DV {p.dv}",
        "",
        *(_table(name, values) for name, values in poly.tables().items()),
    ]
    body: list[str] = []
    for role, graph in by_role.items():
        body += _wrapper(role, graph, pre)
    kem = KEM.replace("PREFIX_", f"{pre}_")
    return "\n".join([*head, KECCAK, *body, kem])


__all__ = ["ROLES", "c_source", "graphs", "prefix"]
