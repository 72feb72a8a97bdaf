"""Optimisers over any function of a list of numbers, with exact derivatives from tang.

- ``minimize(f, x0)``: L-BFGS with a strong-Wolfe (Moré–Thuente) line search.
- ``least_squares(residuals, x0)``: Levenberg–Marquardt, a port of MINPACK's lmder.
- ``damped_least_squares(residuals, x0, lower=, upper=)``: adaptive damping inside bounds
  (the robot arm's inverse kinematics runs on it).
- ``mgh``: the Moré–Garbow–Hillstrom test problems (``mgh.PROBLEMS``), written once over
  any number, like scipy's ``rosen`` (imported on first use: the page's arm does not need it).

Gradients and Jacobians come from one forward pass on ``tang.Dual`` numbers carrying a
tangent per unknown (``jac=None``), from reverse mode on a graph traced once
(``jac="graph"``), or from a callable: never from finite differences. Results carry
scipy.optimize's field names.
"""

from .derivatives import EvaluationError as EvaluationError
from .dls import damped_least_squares as damped_least_squares
from .lbfgs import minimize as minimize
from .linesearch import LineSearchResult as LineSearchResult
from .linesearch import strong_wolfe as strong_wolfe
from .lm import least_squares as least_squares
from .result import LeastSquaresResult as LeastSquaresResult
from .result import MinimizeResult as MinimizeResult


def __getattr__(name: str) -> object:
    """``tang.solve.mgh`` on first use (a module attribute from then on)."""
    if name == "mgh":
        import importlib

        return importlib.import_module(".mgh", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
