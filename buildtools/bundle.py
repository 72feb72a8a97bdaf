"""The editor bundle (web/editor/ through esbuild) and gzip copies of big files, cached in
.cache/."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from .common import CACHE, EDITOR, BuildError, cached_sha256, log, require, run_tool


def bundle_editor() -> Path | None:
    """web/editor/index.js (CodeMirror) bundled by esbuild into one ES module, cached in
    .cache/editor/ (see _bundle)."""
    return _bundle("index.js", "editor")


def bundle_math() -> Path | None:
    """web/editor/math.js (KaTeX, for the how-it-works panels) bundled into one ES module."""
    return _bundle("math.js", "math")


def katex_assets() -> list[tuple[str, Path]]:
    """KaTeX's stylesheet and woff2 fonts as (path in the site, file): the page serves them
    itself, next to dist/math.js (the stylesheet finds its fonts in fonts/ beside it)."""
    dist = _deps() / "node_modules" / "katex" / "dist"
    if not (dist / "katex.min.css").exists():
        raise BuildError(f"katex is missing from {EDITOR / 'package.json'}'s dependencies")
    files = [("katex/katex.min.css", dist / "katex.min.css")]
    files += [(f"katex/fonts/{p.name}", p) for p in sorted((dist / "fonts").glob("*.woff2"))]
    return files


def _deps() -> Path:
    """web/editor/'s npm packages, installed with `npm ci` from its package-lock.json into
    .cache/editor/deps/ (never into web/), once per lock file."""
    what = "install the page's npm packages (web/editor: CodeMirror, KaTeX, esbuild)"
    how = "install Node.js and npm (Debian: apt-get install nodejs npm)"
    deps = CACHE / "editor" / "deps"
    manifests = [EDITOR / "package.json", EDITOR / "package-lock.json"]
    lock_key = hashlib.sha256(b"".join(m.read_bytes() for m in manifests if m.exists()))
    stamp = deps / ".installed"
    if not (stamp.exists() and stamp.read_text() == lock_key.hexdigest()):
        require("npm", what, how)
        log("installing the page's npm packages (npm ci)")
        shutil.rmtree(deps, ignore_errors=True)
        deps.mkdir(parents=True)
        for m in manifests:
            if m.exists():
                shutil.copy(m, deps / m.name)
        command = "ci" if (deps / "package-lock.json").exists() else "install"
        run_tool(["npm", command, "--silent", "--no-audit", "--no-fund"], what, how, cwd=deps)
        stamp.write_text(lock_key.hexdigest())
    return deps


def _bundle(entry: str, name: str) -> Path | None:
    """web/editor/<entry> bundled by esbuild into .cache/editor/<name>-<hash>.js, the hash
    over every file of web/editor/ (so any change there rebuilds it)."""
    if not (EDITOR / "package.json").exists():
        return None
    files = [
        p
        for p in sorted(EDITOR.rglob("*"))
        if p.is_file() and "node_modules" not in p.relative_to(EDITOR).parts
    ]
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(EDITOR).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    folder = CACHE / "editor"
    out = folder / f"{name}-{h.hexdigest()[:16]}.js"
    if out.exists():
        return out
    what = f"bundle web/editor/{entry} with esbuild"
    how = "install Node.js and npm (Debian: apt-get install nodejs npm)"
    deps = _deps()
    esbuild = deps / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        raise BuildError(f"esbuild is missing from {EDITOR / 'package.json'}'s dependencies")
    tmp = out.with_suffix(".tmp.js")
    run_tool(
        [
            str(esbuild),
            str(EDITOR / entry),
            "--bundle",
            "--format=esm",
            "--minify",
            "--log-level=error",
            f"--outfile={tmp}",
        ],
        what,
        how,
        env={"NODE_PATH": str(deps / "node_modules")},
    )
    tmp.replace(out)
    for old in folder.glob(f"{name}-*.js"):
        if old != out:
            old.unlink()
    return out


def gzipped(src: Path) -> Path:
    """A gzip copy of src in .cache/gz/ (deterministic: no name, mtime 0), cached by content."""
    import gzip

    digest = cached_sha256(src)
    path = CACHE / "gz" / f"{digest}.gz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(src, "rb") as f:
            data = gzip.compress(f.read(), compresslevel=6, mtime=0)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path
