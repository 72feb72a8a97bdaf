"""Generic rewrites of comprehension graphs; none names an op (a test scans these files)."""

from __future__ import annotations

from .fuse import fuse
from .grad import grad
from .online import online_rescale

__all__ = ["fuse", "grad", "online_rescale"]
