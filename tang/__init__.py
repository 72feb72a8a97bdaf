"""tang: plain Python math, written once, run on floats, dual numbers and traced graphs."""

__version__ = "0.1.0"

# public API: number-generic math, dual numbers, tracing, gradients, simplification, parsing
from . import lower as lower  # tang.lower(outputs, inputs, backend): print code; .BACKENDS
from .dual import Dual as Dual
from .dual import Tangents as Tangents
from .expr.graph import Graph as Graph
from .expr.graph import Node as Node
from .expr.graph import const as const
from .expr.graph import var as var
from .expr.loop import fori_loop as fori_loop
from .expr.parse import ParseError as ParseError
from .expr.parse import parse as parse
from .expr.simplify import simplify as simplify
from .expr.sparsity import jacobian_sparsity as jacobian_sparsity
from .expr.text import to_text as to_text
from .expr.trace import replay as replay
from .expr.trace import trace as trace
from .scalar import abs as abs
from .scalar import atan2 as atan2
from .scalar import cos as cos
from .scalar import eq as eq
from .scalar import exp as exp
from .scalar import exp2 as exp2
from .scalar import ge as ge
from .scalar import gt as gt
from .scalar import le as le
from .scalar import log as log
from .scalar import log2 as log2
from .scalar import lt as lt
from .scalar import max as max
from .scalar import min as min
from .scalar import pow as pow
from .scalar import recip as recip
from .scalar import sigmoid as sigmoid
from .scalar import sin as sin
from .scalar import sqrt as sqrt
from .scalar import tan as tan
from .scalar import tanh as tanh
from .scalar import where as where
from .transforms import derivative as derivative
from .transforms import grad as grad
from .transforms import hessian as hessian
from .transforms import hvp as hvp
from .transforms import jacobian as jacobian
from .transforms import jvp as jvp
from .transforms import value_and_grad as value_and_grad
