"""What the optimisers return: scipy.optimize's field names, so code moves across unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class MinimizeResult:
    """``minimize``'s answer: the point ``x``, the objective there ``fun`` and its gradient
    ``jac``, how many function/gradient evaluations and iterations it took, and why it
    stopped (``success``, ``status``, ``message``)."""

    x: list[float]
    fun: float
    jac: list[float]
    nfev: int
    njev: int
    nit: int
    success: bool
    status: int
    message: str


@dataclass
class LeastSquaresResult:
    """``least_squares``'s answer: the point ``x``, ``cost`` = ½‖r(x)‖² (scipy's
    definition), the residuals ``fun`` and Jacobian ``jac`` there, the gradient Jᵀr
    ``grad``, the evaluation counts, and why it stopped."""

    x: list[float]
    cost: float
    fun: list[float]
    jac: list[list[float]]
    grad: list[float]
    nfev: int
    njev: int
    nit: int
    success: bool
    status: int
    message: str
    active_mask: list[int] = field(default_factory=list)  # -1/+1: x at its lower/upper bound
    optimality: float = 0.0  # max |grad|: scipy's first-order optimality measure
    extra: dict[str, Any] = field(default_factory=dict)
