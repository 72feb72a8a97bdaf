"""tang.nn: a small-model trainer shaped like PyTorch, in pure Python (numpy optional).

Tensors with reverse-mode autograd over two storage backends ("python": flat lists, runs
in Pyodide; "numpy": the desktop), layers, losses, optimizers, a seeded DataLoader, a
step-wise Trainer that stops and resumes exactly, and safetensors files read and written
without any dependency.
"""

from . import functional
from .backend import available_backends, get_backend, set_backend, use_backend
from .compiled import CompiledStep, compile_training  # the step compiled from the tensor IR
from .data import DataLoader
from .functional import cross_entropy, linear, mse
from .modules import Elementwise, Linear, Module, ReLU, Sequential, Sigmoid, SiLU, Tanh
from .optim import SGD, Adam, Optimizer
from .safetensors import SafetensorsError, load, save
from .tensor import (
    Parameter,
    Tensor,
    cat,
    full,
    is_grad_enabled,
    no_grad,
    one_hot,
    ones,
    rand,
    randn,
    tensor,
    zeros,
)
from .trainer import Step, Trainer

__all__ = [
    "SGD",
    "Adam",
    "CompiledStep",
    "DataLoader",
    "Elementwise",
    "Linear",
    "Module",
    "Optimizer",
    "Parameter",
    "ReLU",
    "SafetensorsError",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Step",
    "Tanh",
    "Tensor",
    "Trainer",
    "available_backends",
    "cat",
    "compile_training",
    "cross_entropy",
    "full",
    "functional",
    "get_backend",
    "is_grad_enabled",
    "linear",
    "load",
    "mse",
    "no_grad",
    "one_hot",
    "ones",
    "rand",
    "randn",
    "save",
    "set_backend",
    "tensor",
    "use_backend",
    "zeros",
]
