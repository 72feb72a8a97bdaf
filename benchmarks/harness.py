"""Helpers shared by the benchmark scripts: a first-call/median timer, and the built site served
on localhost and opened in headless Chromium that may reach nothing else.

Each script runs as ``python benchmarks/X.py``, which puts this folder on ``sys.path``, so they
``import harness``; the page helpers need the repository root on ``sys.path`` (for ``build``),
as every script that opens a page already sets."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = os.environ.get("TANG_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent


def _runs(fn: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    """(first call, the next ``repeat`` calls) in seconds."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return first, runs


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(first call, median of the next ``repeat`` calls) in seconds."""
    first, runs = _runs(fn, repeat)
    return first, statistics.median(runs)


def fastest(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(first call, fastest of the next ``repeat`` calls) in seconds: on a shared machine
    load only adds time, so the fastest run is the steadiest estimate of the work."""
    first, runs = _runs(fn, repeat)
    return first, min(runs)


def fastest_interleaved(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """The fastest of ``repeat`` runs of each function, the functions taking turns so that a
    busy machine slows each alike (for ratios between them)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def ms(seconds: float) -> str:
    """Seconds as right-aligned milliseconds, for a table column."""
    return f"{seconds * 1e3:9.1f} ms"


def serve(site: Path) -> tuple[Any, str]:
    """Serve the built site in ``site`` on a free localhost port from a daemon thread:
    ``(server, url)``; the caller shuts the server down."""
    import build

    server = build.make_server(site, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def open_page(
    pw: Any,
    tmp: str,
    url: str,
    args: list[str],
    env: dict[str, str] | None = None,
    chromium: str = CHROMIUM,
    viewport: dict[str, int] | None = None,
) -> tuple[Any, Any]:
    """Launch headless Chromium (Playwright ``pw``) with a throw-away profile and home in
    ``tmp``, abort every request that leaves 127.0.0.1, and open ``url``: ``(context, page)``."""
    context = pw.chromium.launch_persistent_context(
        f"{tmp}/profile",
        executable_path=chromium,
        headless=True,
        args=args,
        timeout=60_000,
        **({"viewport": viewport} if viewport else {}),
        env={**os.environ, "HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/.config", **(env or {})},
    )
    context.route(
        "**/*",
        lambda r: r.fallback() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort(),
    )
    page = context.pages[0] if context.pages else context.new_page()
    page.goto(url)
    return context, page


@contextlib.contextmanager
def worktree(rev: str, root: Path = ROOT) -> Iterator[Path]:
    """A temporary git worktree of revision ``rev`` (removed on exit), with this checkout's
    download cache linked in so building it fetches nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        git = ["git", "-C", str(root), "worktree"]
        subprocess.run([*git, "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            if (root / ".cache").is_dir():
                (tree / ".cache").symlink_to(root / ".cache")
            yield tree
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], check=False)
