"""The tang wheel (tang/ and demos/, built with zipfile: no network, deterministic) and
CPython 3.14 bytecode for it and for the big third-party wheels (Pyodide under node)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from .common import CACHE, ROOT, BuildError, cached_sha256, log, run_tool
from .fetch import PYODIDE_VERSION

# (PEP 552), used as is whatever the file times. Sources stay in the wheel for tracebacks.
PYC_SCRIPT = """\
import { pathToFileURL } from "node:url";
import { readFileSync, writeFileSync } from "node:fs";
const [runtime, snapshot, jobsFile] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(runtime + "/pyodide.mjs").href);
const pyodide = await loadPyodide({
  indexURL: runtime + "/",
  _loadSnapshot: new Uint8Array(readFileSync(snapshot)),
});
const compile = pyodide.runPython(`
import importlib._bootstrap_external as bx, importlib.util, sys
def compile_pyc(source, filename):
    data = bytes(source)
    code = compile(data, filename, "exec", dont_inherit=True)
    return bytes(bx._code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
compile_pyc
`);
for (const job of JSON.parse(readFileSync(jobsFile, "utf8"))) {
  let pyc;
  try {
    pyc = compile(new Uint8Array(readFileSync(job.src)), job.filename);
  } catch (err) {
    continue; // not valid 3.14 source (left as .py: the import reports it, not the build)
  }
  writeFileSync(job.out, pyc.toJs());
  pyc.destroy();
}
"""
PYODIDE_SITE_PACKAGES = "/lib/python3.14/site-packages"

# A fixed timestamp keeps the tang wheel byte-for-byte reproducible.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
# The packages the tang wheel ships (build tools such as buildtools/ stay out).
WHEEL_PACKAGES = ("tang", "demos")
# Wheels shipped with bytecode added (big ones: Pyodide would compile them on every import).
PRECOMPILE = ("sympy", "mpmath")


def tang_version() -> str:
    text = (ROOT / "tang" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not match:
        raise BuildError("tang/__init__.py has no __version__ = '...' line")
    return match.group(1)


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def wheel_sources() -> list[tuple[str, Path]]:
    files = []
    for package in WHEEL_PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if (
                path.is_file()
                and path.suffix in (".py", ".json", ".txt")
                and "__pycache__" not in path.parts
            ):
                files.append((path.relative_to(ROOT).as_posix(), path))
    return files


def compile_pyc(
    sources: list[tuple[str, Path]],
    runtime: Path,
    snapshot: Path,
    quiet: bool = False,
    label: str = "tang",
) -> dict[str, Path]:
    """arc name of each .py -> its CPython 3.14 .pyc in .cache/pyc/ (cached by content)."""
    folder = CACHE / "pyc"
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256((PYODIDE_VERSION + PYC_SCRIPT).encode()).hexdigest()[:8]
    found, jobs = {}, []
    for arc, src in sources:
        if not arc.endswith(".py"):
            continue
        filename = f"{PYODIDE_SITE_PACKAGES}/{arc}"
        digest = hashlib.sha256(src.read_bytes() + filename.encode()).hexdigest()[:32]
        out = folder / f"{key}-{digest}.pyc"
        found[arc] = out
        if not out.exists():
            jobs.append({"src": str(src), "filename": filename, "out": str(out)})
    if jobs:
        if not quiet:
            log(f"compiling {len(jobs)} module(s) of {label} to CPython 3.14 bytecode (Pyodide)")
        script = CACHE / "compile-pyc.mjs"
        script.write_text(PYC_SCRIPT)
        jobs_file = CACHE / "pyc-jobs.json"
        jobs_file.write_text(json.dumps(jobs))
        run_tool(
            ["node", str(script), str(runtime), str(snapshot), str(jobs_file)],
            what="compile tang to bytecode (runs Pyodide under node)",
            how="install Node.js 18 or newer (Debian: apt-get install nodejs)",
        )
    return {arc: pyc for arc, pyc in found.items() if pyc.exists()}


def pyc_name(arc: str) -> str:
    folder, _, name = arc.rpartition("/")
    return f"{folder}/__pycache__/{name[:-3]}.cpython-314.pyc"


def _wheel_bytes(entries: list[tuple[str, bytes]], dist_info: str) -> bytes:
    """A wheel (zip) of `entries` plus a fresh RECORD, with fixed timestamps."""
    entries = [(arc, data) for arc, data in entries if arc != f"{dist_info}/RECORD"]
    record = "".join(f"{arc},{record_hash(data)},{len(data)}\n" for arc, data in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def precompile_wheel(src: Path, runtime: Path, snapshot: Path) -> Path:
    """`src` with CPython 3.14 bytecode added and its tests left out (cached in
    .cache/wheels-pyc/)."""
    out = CACHE / "wheels-pyc" / src.name
    stamp = out.with_suffix(".source-sha256")
    digest = cached_sha256(src)
    if out.exists() and stamp.exists() and stamp.read_text() == digest:
        return out
    (CACHE / "wheels-pyc").mkdir(parents=True, exist_ok=True)
    unpacked = Path(tempfile.mkdtemp(prefix="unpacked-", dir=CACHE / "wheels-pyc"))
    with zipfile.ZipFile(src) as zf:
        names = zf.namelist()
        zf.extractall(unpacked)
    dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
    names = [n for n in names if "/tests/" not in n]  # as Pyodide does: tests stay out
    sources = [(n, unpacked / n) for n in names if n.endswith(".py")]
    pycs = compile_pyc(sources, runtime, snapshot, quiet=False, label=src.name)
    entries = [(n, (unpacked / n).read_bytes()) for n in names if not n.endswith("/")]
    entries += [(pyc_name(arc), pyc.read_bytes()) for arc, pyc in sorted(pycs.items())]
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(_wheel_bytes(entries, dist_info))
    tmp.replace(out)
    stamp.write_text(digest)
    shutil.rmtree(unpacked, ignore_errors=True)
    return out


def build_tang_wheel(out_dir: Path, pycs: dict[str, Path] | None = None) -> Path:
    version = tang_version()
    dist_info = f"tang-{version}.dist-info"
    path = out_dir / f"tang-{version}-py3-none-any.whl"
    sources = wheel_sources()
    entries: list[tuple[str, bytes]] = [(arc, src.read_bytes()) for arc, src in sources]
    entries += [(pyc_name(arc), pyc.read_bytes()) for arc, pyc in sorted((pycs or {}).items())]
    metadata = (
        f"Metadata-Version: 2.1\nName: tang\nVersion: {version}\n"
        "Summary: Plain Python math, written once, run on floats, dual numbers and "
        "traced graphs.\nRequires-Python: >=3.11\n"
    )
    entries += [
        (f"{dist_info}/METADATA", metadata.encode()),
        (
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: tang build.py\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (f"{dist_info}/top_level.txt", b"demos\ntang\n"),
    ]
    data = _wheel_bytes(entries, dist_info)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path
