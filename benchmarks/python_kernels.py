"""tang.gpu's pure-Python CPU device (the Python-printed loop nests: what runs where there is
no compiler and no adapter, the page's fallback included) with the printer's loop-invariant
code motion (tang.lower.hoist) against the same nests as printed, in one run, taking turns:

1. SmolLM2's 1,536 × 576 Q4_1 matrix-vector product (the model's most common kind), random
   blocks of the file's format;
2. its Q8_0 output head's shape, cut to 4,096 rows;
3. causal attention at n = 64, d = 32 (fused, online softmax);
4. a 64³ matmul;
5. with ``--llm``: one whole SmolLM2 decode step (the real file, 30 blocks and the head).

    python benchmarks/python_kernels.py [--rounds 3] [--llm]

Each figure is the fastest of its rounds; the outputs of the two agree bit for bit
(checked here).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness  # benchmarks/harness.py (this script's folder is on sys.path)
import numpy as np

import tang.gpu as gpu
from tang import tensor as T
from tang.io import gguf
from tang.io.models import find_model
from tang.llm import quantized
from tang.llm.engine import Llama
from tang.lower.python import Python


def product(type_name: str, rows: int, cols: int) -> tuple[T.TensorGraph, dict]:
    f = quantized.FORMATS[type_name]
    rng = np.random.default_rng(0)
    blocks = rng.integers(0, 256, size=(rows * cols // 32, f.size), dtype=np.uint8)
    halves = (f.offset // 2) if f.has_min else 1
    scales = rng.normal(scale=0.05, size=(len(blocks), halves)).astype("<f2")
    blocks[:, : 2 * halves] = scales.view(np.uint8).reshape(len(blocks), -1)
    x = T.input("x", (1, cols))
    parts = quantized.parts(type_name, rows, cols)
    inputs = {p: T.input(p, s, packed=kind) for p, (s, kind) in parts.items()}
    raw = blocks.tobytes()
    given = {"x": rng.normal(size=(1, cols)), "codes": raw, "scales": raw}
    return T.graph(y=quantized.linear(x, type_name, inputs)), given


def cases() -> dict[str, tuple[T.TensorGraph, dict]]:
    rng = np.random.default_rng(1)
    q, k, v = (T.input(n, (1, 1, 64, 32)) for n in "qkv")
    attention = T.stabilize_softmax(T.fuse(T.graph(o=T.attention(q, k, v, causal=True))))
    a, b = T.input("a", (64, 64)), T.input("b", (64, 64))
    return {
        "Q4_1 product 1536 x 576": product("Q4_1", 1536, 576),
        "Q8_0 product 4096 x 576": product("Q8_0", 4096, 576),
        "causal attention n=64 d=32": (
            attention,
            {n: rng.normal(size=(1, 1, 64, 32)) for n in "qkv"},
        ),
        "matmul 64^3": (T.graph(c=a @ b), {n: rng.normal(size=(64, 64)) for n in "ab"}),
    }


@contextlib.contextmanager
def printed_as(hoist: bool):
    """Kernels compiled inside print hoisted (the default) or as the printer writes them."""
    original = Python.finish_nest
    if not hoist:
        Python.finish_nest = lambda self, source: source
    try:
        yield
    finally:
        Python.finish_nest = original


def timed(graph: T.TensorGraph, given: dict, hoist: bool) -> tuple[float, dict]:
    """One call of ``graph`` compiled on a fresh CPU device (the first call compiles)."""
    with printed_as(hoist):
        compiled = T.Compiled(graph, gpu.CPUDevice())
        compiled(given)
        seconds, out = harness.once(lambda: compiled(given))
        return seconds, {k: np.asarray(v) for k, v in out.items()}


def timed_step(model_file, hoist: bool) -> tuple[float, dict]:
    """One decode step of the real model at position 1, after a one-token prompt."""
    with printed_as(hoist):
        model = Llama.from_gguf(model_file, gpu.CPUDevice(), capacity=64)
        model.forward([1], 0)
        seconds, logits = harness.once(lambda: np.asarray(model.forward([2], 1)))
        model.release()
        return seconds, {"logits": logits}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--llm", action="store_true", help="add a SmolLM2 decode step")
    args = parser.parse_args()
    print(f"{'kernel':30} {'as printed':>12} {'hoisted':>12} {'speed-up':>9}")
    runs = {name: functools.partial(timed, *case) for name, case in cases().items()}
    if args.llm:
        runs["SmolLM2 decode step"] = functools.partial(timed_step, gguf.read(find_model()))
    for name, run in runs.items():
        best = {False: float("inf"), True: float("inf")}
        outs = {}
        for _ in range(args.rounds):
            for hoist in (False, True):
                seconds, outs[hoist] = run(hoist)
                best[hoist] = min(best[hoist], seconds)
        for key in outs[True]:
            np.testing.assert_array_equal(outs[True][key], outs[False][key])
        print(
            f"{name:30} {best[False] * 1e3:10.1f} ms {best[True] * 1e3:10.1f} ms "
            f"{best[False] / best[True]:8.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
