"""The runnable examples, one source of truth: the page's "What you can build" lists them
(worker method ``examples.list``) and ``tests/test_examples.py`` runs every one of them.

Each is one command that works from the root of a fresh clone. Add an example by adding
an entry to ``EXAMPLES``; ``module`` is what must exist for it to run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from demos import quantum_poet
from demos.api import handler


@dataclass(frozen=True)
class Example:
    """One runnable example: a title, what it shows, and its argv after ``python -m``."""

    title: str
    what: str
    argv: tuple[str, ...]  # module first: ("tang", "eval", ...)

    @property
    def module(self) -> str:
        return self.argv[0]

    @property
    def command(self) -> str:
        """The command to paste into a shell, quoted for POSIX shells."""
        return shlex.join(("python", "-m", *self.argv))


EXAMPLES: tuple[Example, ...] = (
    Example(
        "A value and its gradient",
        "Parse an expression (no eval) and run it on dual numbers: the value and exact slope.",
        ("tang", "eval", "x*sin(x)", "--at", "x=2", "--grad"),
    ),
    Example(
        "A million points on the GPU",
        "f and its partial derivatives over many points: WebGPU/wgpu (Vulkan) or the CPU.",
        ("tang", "run", "sin(x*y) + x^2", "--points", "1e6"),
    ),
    Example(
        "A gradient kernel in C",
        "One graph printed for a backend (wgsl, c, cuda, metal, opencl, glsl, javascript, python).",
        ("tang", "kernel", "x*sin(y)", "--backend", "c", "--grad"),
    ),
    Example(
        "A robot arm reaching a point",
        "Inverse kinematics by damped least squares; each Jacobian from one dual pass.",
        ("demos.robot_arm", "--target", "300,120", "--from", "45,90"),
    ),
    Example(
        "Aiming a probe through gravity",
        "Gradient descent on a shot's speed and heading, through 1,600 leapfrog steps.",
        ("demos.orbit", "--speed", "0.9", "--heading", "80", "--optimize", "20"),
    ),
    Example(
        "A swarm of shots in one kernel",
        "1,024 shots, each with its dual gradient through 1,600 steps, in one loop kernel "
        "(tang.fori_loop); the best polished by the same descent.",
        ("demos.orbit", "--swarm", "1024"),
    ),
    Example(
        "Fitting a circle to noisy points",
        "Levenberg–Marquardt (tang.solve) with dual-number Jacobians, and the fit's covariance.",
        ("demos.fit", "--points", "40", "--arc", "120", "--noise", "0.05"),
    ),
    Example(
        "A small model that writes",
        "tang.nn trains the Quantum Poet, a character model of physics haikus, in pure Python, "
        "as the page's card does, then samples it.",
        ("demos.quantum_poet", "--epochs", str(quantum_poet.EPOCHS)),
    ),
    Example(
        "Attention, derived",
        "Online-softmax attention derived by generic passes, timed against attention as written.",
        ("demos.transformer", "--n", "256", "--d", "32", "--repeat", "1"),
    ),
    Example(
        "Post-quantum keys in constant time",
        "ML-KEM-768 (FIPS 203) on integer tensor graphs: keys, a shared secret, its "
        "decapsulation; taint-checked, and printed as C with python -m tang.crypto c.",
        ("tang.crypto", "kem", "ML-KEM-768"),
    ),
    Example(
        "A pretrained LLM on derived kernels",
        "SmolLM2-135M-Instruct, 4-bit, decoded by kernels tang lowers from comprehensions "
        "(fetched once, 93 MB, on the first run), as the page's card does on WebGPU.",
        ("demos.llm", "--chat", "What is the capital of France?", "--max-tokens", "16"),
    ),
)


@handler("examples.list")
def list_examples() -> list[dict[str, Any]]:
    """Every example as {title, what, command} for the page."""
    return [{"title": e.title, "what": e.what, "command": e.command} for e in EXAMPLES]
