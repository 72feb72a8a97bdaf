"""The op-name scan: which lines of the pass modules name a tensor op (matmul, softmax,
attention, …). The passes are generic rewrites, so the answer is none; the test of the passes
and the page's transformer card both count it with this one scan."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

OP_NAMES: tuple[str, ...] = (
    "matmul", "softmax", "log_softmax", "logsumexp", "attention", "flash", "rmsnorm", "rms_norm",
    "rope", "rotary", "swiglu", "silu", "sigmoid", "relu", "gelu", "cross_entropy", "crossentropy",
    "layernorm", "layer_norm", "einsum", "mean",
)  # fmt: skip

_PATTERNS = {n: re.compile(rf"(?<![a-z]){n}(?![a-z])") for n in OP_NAMES}


@dataclass(frozen=True)
class OpLine:
    """One line that names an op: the file's name, its 1-based line number and the names."""

    file: str
    line: int
    names: tuple[str, ...]


def op_names_in(text: str) -> list[str]:
    """The op names ``text`` mentions as words (case-insensitive; ``rms_norm`` counts,
    ``remean`` does not)."""
    lowered = text.lower()
    return [n for n in OP_NAMES if _PATTERNS[n].search(lowered)]


def pass_modules() -> list[Path]:
    """The source files of ``tang.tensor.passes``, sorted by name."""
    from . import passes

    return sorted(Path(passes.__file__).parent.glob("*.py"))


def op_specific_lines(files: list[Path] | None = None) -> list[OpLine]:
    """Every line of ``files`` (default: the pass modules) that names an op."""
    found = []
    for path in pass_modules() if files is None else files:
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            names = op_names_in(text)
            if names:
                found.append(OpLine(path.name, number, tuple(names)))
    return found


__all__ = ["OP_NAMES", "OpLine", "op_names_in", "op_specific_lines", "pass_modules"]
