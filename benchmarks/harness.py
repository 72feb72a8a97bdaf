"""Helpers shared by the benchmark scripts: every timing goes through them (one call, the first
call apart from the rest, contenders taking turns, the phases of one run), and the built site
served on localhost and opened in headless Chromium that may reach nothing else.

Each script runs as ``python benchmarks/X.py``, which puts this folder on ``sys.path``, so they
``import harness``; the page helpers need the repository root on ``sys.path`` (for ``build``),
as every script that opens a page already sets."""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

CHROMIUM = os.environ.get("TANG_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent


T = TypeVar("T")


def once(fn: Callable[[], T]) -> tuple[float, T]:
    """(seconds, result) of one call of ``fn``: work too long to repeat, or the part of a run
    that counts (the setup before it not timed)."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def runs(fn: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    """(first call, each of the next ``repeat`` calls) in seconds: the first call (compiling,
    paging in, filling caches) timed apart."""
    first, _ = once(fn)
    return first, [once(fn)[0] for _ in range(repeat)]


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(first call, median of the next ``repeat`` calls) in seconds."""
    first, times = runs(fn, repeat)
    return first, statistics.median(times)


def fastest(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(first call, fastest of the next ``repeat`` calls) in seconds: on a shared machine
    load only adds time, so the fastest run is the steadiest estimate of the work."""
    first, times = runs(fn, repeat)
    return first, min(times)


def _interleaved(fns: list[Callable[[], object]], repeat: int) -> list[list[float]]:
    """Each function's seconds per run, the functions taking turns ``repeat`` times."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times, strict=True):
            ts.append(once(fn)[0])
    return times


def fastest_interleaved(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """The fastest of ``repeat`` runs of each function, the functions taking turns so that a
    busy machine slows each alike (for ratios between them)."""
    return [min(ts, default=float("inf")) for ts in _interleaved(fns, repeat)]


def median_interleaved(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """The median of ``repeat`` runs of each function, the functions taking turns."""
    return [statistics.median(ts) for ts in _interleaved(fns, repeat)]


def fastest_reported(
    contenders: dict[str, Callable[[], tuple[float, T]]], repeat: int
) -> tuple[dict[str, float], dict[str, T]]:
    """For contenders that time themselves (``(seconds, result)``: a part of each call, such
    as training without building the model): each one's fastest seconds over ``repeat`` runs
    and its last result, the contenders taking turns. The garbage collector runs to the end
    before each run (untimed), so a full collection that the previous contender's objects
    made due does not land in the next one's clock: one took 0.26 s of a 0.4 s epoch."""
    best: dict[str, float] = {}
    last: dict[str, T] = {}
    for _ in range(repeat):
        for name, run in contenders.items():
            gc.collect()
            seconds, last[name] = run()
            best[name] = min(best.get(name, float("inf")), seconds)
    return best, last


class Stopwatch:
    """The phases of one run, timed in turn: ``lap()`` ends the phase begun at the previous
    lap (or at ``restart``, or at creation) and returns its seconds."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Start the next phase now (what ran since the last lap is not counted)."""
        self._mark = time.perf_counter()

    def lap(self) -> float:
        """Seconds of the phase that ends now; the next one starts at once."""
        now = time.perf_counter()
        seconds, self._mark = now - self._mark, now
        return seconds

    def elapsed(self) -> float:
        """Seconds of the phase so far, without ending it (for a deadline)."""
        return time.perf_counter() - self._mark


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
