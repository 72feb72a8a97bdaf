"""Tensors as comprehensions: views, one IR form for every op, and passes that derive
fusion, gradients and the online-softmax rewrite (see docs/tensor-ir.md).

    from tang import tensor
    x = tensor.input("x", (4, 8)); w = tensor.input("w", (8, 3))
    g = tensor.graph(y=tensor.softmax(x @ w))
    print(g)                      # the printed IR
    tensor.evaluate(g, {"x": ..., "w": ...})   # the reference evaluator
    tensor.run(g, {"x": ..., "w": ...})        # kernels on a tang.gpu device
"""

from __future__ import annotations

from .autotune import Tuning, tune, tune_async
from .comprehension import (
    MAX,
    MIN,
    PROD,
    SUM,
    Comprehension,
    Inline,
    Load,
    Monoid,
    TensorGraph,
    TensorIRError,
    monoid,
    prune,
)
from .evaluate import evaluate, reduction_trace
from .frontend import Tensor, as_tensor, comprehend, graph, input, stop_gradient
from .ops import (
    abs,
    add,
    attention,
    concat,
    cross_entropy,
    div,
    exp,
    log,
    log_softmax,
    logsumexp,
    map_,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mul,
    neg,
    one_hot,
    power,
    prod,
    reduce,
    relu,
    rms_norm,
    rope,
    sigmoid,
    silu,
    softmax,
    sqrt,
    sub,
    sum,
    swiglu,
    take,
    tanh,
)
from .passes import fuse, grad, online_rescale
from .printing import format_graph
from .runtime import Compiled, compile, compile_async, run
from .view import IndexMap, NonAffineReshape, View

# The name for the online-softmax rewrite; the pass itself names no op.
stabilize_softmax = online_rescale

__all__ = [
    "MAX",
    "MIN",
    "PROD",
    "SUM",
    "Compiled",
    "Comprehension",
    "IndexMap",
    "Inline",
    "Load",
    "Monoid",
    "NonAffineReshape",
    "Tensor",
    "TensorGraph",
    "TensorIRError",
    "Tuning",
    "View",
    "abs",
    "add",
    "as_tensor",
    "attention",
    "compile",
    "compile_async",
    "comprehend",
    "concat",
    "cross_entropy",
    "div",
    "evaluate",
    "exp",
    "format_graph",
    "fuse",
    "grad",
    "graph",
    "input",
    "log",
    "log_softmax",
    "logsumexp",
    "map_",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "monoid",
    "mul",
    "neg",
    "one_hot",
    "online_rescale",
    "power",
    "prod",
    "prune",
    "reduce",
    "reduction_trace",
    "relu",
    "rms_norm",
    "rope",
    "run",
    "sigmoid",
    "silu",
    "softmax",
    "sqrt",
    "stabilize_softmax",
    "stop_gradient",
    "sub",
    "sum",
    "swiglu",
    "take",
    "tanh",
    "tune",
    "tune_async",
]
