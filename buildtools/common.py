"""What every build step shares: paths, the cache, one-line errors, running a tool, the lock."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
TEST_SITE = ROOT / "e2e" / "site"  # the e2e harness page: dist/_test/ with --with-tests
BENCH_SITE = ROOT / "benchmarks" / "site"  # benchmark-only pages: dist/_bench/, on request
EDITOR = WEB / "editor"  # CodeMirror sources: bundled into dist/editor.js, not copied
CACHE = Path(os.environ.get("TANG_BUILD_CACHE") or ROOT / ".cache")
DIST = ROOT / "dist"

SUBPROCESS_TIMEOUT = 600


class BuildError(Exception):
    """A problem the user can fix; main() prints it as one line and exits 1."""


def log(msg: str) -> None:
    print(f"build.py: {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def require(tool: str, what: str, how: str) -> None:
    if shutil.which(tool) is None:
        raise BuildError(f"{tool} not found, needed to {what}; {how}")


def run_tool(
    argv: list[str], what: str, how: str, cwd: Path | None = None, env: dict | None = None
) -> str:
    """Run an external client; any failure becomes a one-line BuildError."""
    if os.sep not in argv[0]:
        require(argv[0], what, how)
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
        )
    except subprocess.TimeoutExpired:
        raise BuildError(
            f"`{' '.join(argv)}` gave no answer in {SUBPROCESS_TIMEOUT} s while "
            f"trying to {what}: is the package registry reachable?"
        ) from None
    if proc.returncode != 0:
        raise BuildError(
            f"`{' '.join(argv)}` failed while trying to {what} "
            f"(is the package registry reachable?): {_gist(proc)}"
        )
    return proc.stdout


def _gist(proc: subprocess.CompletedProcess) -> str:
    """The line of a failed tool's output most likely to say why (errors first), shortened."""
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b(error|ERR!|Error:)", ln) and len(ln) < 2000]
    line = (errors or lines or [f"exit code {proc.returncode}"])[-1]
    return line if len(line) <= 300 else line[:297] + "..."


_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def cached_sha256(path: Path) -> str:
    """sha256_file, remembered per (path, size, mtime) for the life of the process."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HASH_CACHE:
        _HASH_CACHE[key] = sha256_file(path)
    return _HASH_CACHE[key]


@contextlib.contextmanager
def build_lock():
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(CACHE / "build.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
