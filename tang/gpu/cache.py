"""tang's folder for what it builds and measures on the desktop: compiled C kernels
(``tang.gpu.native_c``) and tuned schedules (``tang.tensor.tuning_cache``)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$TANG_CACHE``, else ``tang`` in the user's cache folder (``$XDG_CACHE_HOME``)."""
    root = os.environ.get("TANG_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tang"
    )
    return Path(root)
