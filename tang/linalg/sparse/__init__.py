"""Sparse matrices and solvers over any number type (floats, ``tang.Dual``, traced nodes).

- ``CSR``: compressed-sparse-row matrices (``from_dense``, ``from_coo``, ``identity``,
  ``A @ x``, ``A @ B``, ``transpose``, …), scipy's layout and names;
- ``cg``: preconditioned conjugate gradients (None, Jacobi, IC(0) or your own M⁻¹);
- ``cholesky`` / ``spsolve``: a sparse direct solve for symmetric positive definite A, with
  a fill-reducing ordering (``ordering``: approximate minimum degree, reverse Cuthill–McKee
  or natural).

Used as ``from tang.linalg import sparse``; pure Python, standard library only.
"""

from __future__ import annotations

from .cg import CGResult as CGResult
from .cg import cg as cg
from .cholesky import CholeskyFactor as CholeskyFactor
from .cholesky import cholesky as cholesky
from .cholesky import spsolve as spsolve
from .csr import CSR as CSR
from .ordering import ordering as ordering

__all__ = ["CSR", "CGResult", "CholeskyFactor", "cg", "cholesky", "ordering", "spsolve"]
