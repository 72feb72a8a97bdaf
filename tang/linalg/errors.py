"""The one error of tang.linalg: a matrix the asked-for factorisation or solve cannot take."""

from __future__ import annotations


class LinAlgError(ValueError):
    """Raised for singular, non-square, non-symmetric or otherwise unsuitable input; the
    message says which matrix and why (like ``numpy.linalg.LinAlgError``)."""
