"""dist/: the page, the editor bundle, the runtime and the wheels placed in one folder, with a
manifest of every file's sha256 (incremental: unchanged files are left alone)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from .bundle import bundle_editor, bundle_math, gzipped, katex_assets
from .common import BENCH_SITE, CACHE, DIST, TEST_SITE, WEB, build_lock, cached_sha256, log
from .fetch import (
    MODEL_NAME,
    PYODIDE_FILES,
    PYODIDE_VERSION,
    fetch_model,
    fetch_pyodide,
    fetch_wheels,
    make_snapshot,
)
from .wheel import (
    PRECOMPILE,
    build_tang_wheel,
    compile_pyc,
    precompile_wheel,
    tang_version,
    wheel_sources,
)

GZIP_MIN_SIZE = 100_000


def _place(src: Path | bytes, dest: Path) -> None:
    """Copy (or write) into dest unless it already holds the same bytes."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(src, bytes):
        if not dest.exists() or dest.read_bytes() != src:
            dest.write_bytes(src)
        return
    if dest.exists():
        s, d = src.stat(), dest.stat()
        if s.st_size == d.st_size and int(s.st_mtime) == int(d.st_mtime):
            return
    shutil.copy2(src, dest)


def _tree(folder: Path) -> list[tuple[str, Path]]:
    return [
        (p.relative_to(folder).as_posix(), p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
    ]


def build(
    out: Path = DIST, with_tests: bool = False, quiet: bool = False, with_benchmarks: bool = False
) -> dict:
    """Make the static site in `out`; returns the manifest. Cheap when nothing changed.
    `with_tests` adds the e2e harness (_test/), `with_benchmarks` the benchmark-only pages
    (_bench/); a shipped site has neither."""
    with build_lock():
        return _build(Path(out), with_tests, quiet, with_benchmarks)


def _build(out: Path, with_tests: bool, quiet: bool, with_benchmarks: bool = False) -> dict:
    started = time.perf_counter()
    runtime = fetch_pyodide()
    wheels = fetch_wheels()
    placed: set[str] = set()

    def place(rel: str, src: Path | bytes) -> None:
        _place(src, out / rel)
        placed.add(rel)

    for rel, src in _tree(WEB):
        if not rel.startswith("editor/"):
            place(rel, src)
    editor = bundle_editor()
    if editor is not None:
        place("editor.js", editor)
        place("math.js", bundle_math())
        for rel, src in katex_assets():
            place(rel, src)
    for name in PYODIDE_FILES:
        place(f"pyodide/{name}", runtime / name)
    snapshot = make_snapshot(runtime)
    place("pyodide/snapshot.bin", snapshot)
    wheel_files = {}
    for name, path in wheels.items():
        if name in PRECOMPILE:
            path = precompile_wheel(path, runtime, snapshot)
        place(f"wheels/{path.name}", path)
        wheel_files[name] = f"wheels/{path.name}"
    tang_whl = build_tang_wheel(
        CACHE / "tang-wheel", compile_pyc(wheel_sources(), runtime, snapshot)
    )
    place(f"wheels/{tang_whl.name}", tang_whl)
    wheel_files["tang"] = f"wheels/{tang_whl.name}"
    # the LLM card's model: fetched by the page only when a visitor asks (not on the boot
    # path, not in the snapshot); its manifest entry is what the card checks it against
    model_rel = f"models/{MODEL_NAME}"
    place(model_rel, fetch_model())
    if with_tests:
        for rel, src in _tree(TEST_SITE):
            place(f"_test/{rel}", src)
    if with_benchmarks:
        for rel, src in _tree(BENCH_SITE):
            place(f"_bench/{rel}", src)

    # Precompressed copies of the big runtime files: make_server() sends them with
    # Content-Encoding: gzip (any static host that compresses does the same).
    for rel in sorted(placed):
        if (
            rel.startswith("pyodide/")
            and (out / rel).stat().st_size > GZIP_MIN_SIZE
            and not rel.endswith(".zip")
        ):
            place(rel + ".gz", gzipped(out / rel))

    # Drop whatever an earlier build left that this one did not produce.
    for path in sorted(out.rglob("*"), reverse=True):
        rel = path.relative_to(out).as_posix()
        if path.is_file() and rel not in placed and rel != "manifest.json":
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()

    files = {}
    for rel in sorted(placed):
        path = out / rel
        files[rel] = {"sha256": cached_sha256(path), "size": path.stat().st_size}
    manifest = {
        "tang": tang_version(),
        "pyodide": PYODIDE_VERSION,
        "wheels": dict(sorted(wheel_files.items())),
        "models": {MODEL_NAME.split(".")[0]: {"path": model_rel, **files[model_rel]}},
        "files": files,
    }
    place("manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
    if not quiet:
        total = sum(f["size"] for f in files.values())
        log(
            f"dist ready: {out} ({len(files)} files, {total / 1e6:.1f} MB, "
            f"{time.perf_counter() - started:.2f} s)"
        )
    return manifest
