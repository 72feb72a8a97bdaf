"""Dense linear algebra written once over any number: floats give numbers, ``tang.Dual``
gives derivatives through the factorisations, traced values give graphs where the
algorithm allows (each function's docstring says how).

Matrices are any sequence of row sequences (lists, tuples, ``tang.geometry.Mat``); results
are plain lists of row lists (vectors: lists). Pivots and convergence are decided on the
values under any Duals, so a Dual follows the float path exactly.

Traced input (no values to branch on):
- ``lu``, ``lu_factor``, ``solve``, ``inv``: elimination in the natural row order, or in a
  fixed order given as ``pivots=`` (e.g. ``lu_factor(A_at_a_point).perm``);
- ``det``: Berkowitz's division-free algorithm, valid at every point (or LU with ``pivots``);
- ``cholesky``: as is (no pivoting); ``qr``: branch-free Householder (the sign is a select);
- ``eigh``, ``svd``: a fixed number of Jacobi sweeps (``sweeps=``), sorted by a network of
  selects;
- ``lstsq``: not traceable (the rank is decided on values): ``TypeError``.
"""

from . import sparse as sparse  # CSR matrices, conjugate gradients, sparse Cholesky
from .decomp_cholesky import cholesky as cholesky
from .decomp_eigh import eigh as eigh
from .decomp_lu import LUFactorization as LUFactorization
from .decomp_lu import lu as lu
from .decomp_lu import lu_factor as lu_factor
from .decomp_lu import lu_solve as lu_solve
from .decomp_qr import qr as qr
from .decomp_svd import svd as svd
from .determinant import det as det
from .errors import LinAlgError as LinAlgError
from .least_squares import lstsq as lstsq
from .linear_systems import inv as inv
from .linear_systems import solve as solve
