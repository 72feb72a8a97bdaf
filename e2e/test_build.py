"""build.py: the wheel, the manifest, the server, and one clear line when a tool is missing."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, Site, free_port

import build
import tang


def test_tang_wheel_is_reproducible_and_complete(tmp_path):
    with build._build_lock():
        runtime = build.fetch_pyodide()
        pycs = build.compile_pyc(build.wheel_sources(), runtime, build.make_snapshot(runtime))
    a = build.build_tang_wheel(tmp_path / "a", pycs)
    b = build.build_tang_wheel(tmp_path / "b", pycs)
    assert a.read_bytes() == b.read_bytes()
    assert a.name == f"tang-{tang.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(a) as zf:
        names = set(zf.namelist())
        assert {"tang/__init__.py", "demos/__init__.py", "demos/api.py"} <= names
        assert "tang/__pycache__/__init__.cpython-314.pyc" in names
        assert not [n for n in names if n.endswith(".py") and "__pycache__" in n]
        meta = zf.read(f"tang-{tang.__version__}.dist-info/METADATA").decode()
        assert f"Version: {tang.__version__}" in meta
        record = zf.read(f"tang-{tang.__version__}.dist-info/RECORD").decode().splitlines()
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            if digest:
                data = zf.read(name)
                assert int(size) == len(data)
                assert digest == build._record_hash(data)


def test_manifest_lists_every_file_with_its_hash(site: Site):
    files = site.manifest["files"]
    on_disk = {p.relative_to(site.dir).as_posix() for p in site.dir.rglob("*") if p.is_file()}
    assert on_disk - set(files) == {"manifest.json"}
    for rel, info in files.items():
        data = (site.dir / rel).read_bytes()
        assert info == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}, rel
    assert site.manifest["tang"] == tang.__version__
    assert site.manifest["pyodide"] == build.PYODIDE_VERSION
    for wheel in site.manifest["wheels"].values():
        assert wheel in files


def test_rebuild_is_incremental(tmp_path):
    out = tmp_path / "dist"
    build.build(out, quiet=True)
    mtime = (out / "pyodide" / "pyodide.asm.wasm").stat().st_mtime_ns
    started = time.perf_counter()
    build.build(out, quiet=True)
    assert time.perf_counter() - started < 10
    assert (out / "pyodide" / "pyodide.asm.wasm").stat().st_mtime_ns == mtime
    (out / "stale.txt").write_text("left over")
    build.build(out, quiet=True)
    assert not (out / "stale.txt").exists()


@pytest.fixture(scope="module")
def served(site: Site):
    server = build.make_server(site.dir, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def get(port: int, path: str, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


@pytest.mark.parametrize(
    ("path", "mime"),
    [
        ("/", "text/html"),
        ("/pyodide/pyodide.mjs", "text/javascript"),
        ("/main.js", "text/javascript"),
        ("/pyodide/pyodide.asm.wasm", "application/wasm"),
        ("/manifest.json", "application/json"),
        ("/pyodide/python_stdlib.zip", "application/zip"),
        (f"/wheels/tang-{tang.__version__}-py3-none-any.whl", "application/zip"),
    ],
)
def test_server_types_and_isolation_headers(served, path, mime):
    response, body = get(served, path)
    assert response.status == 200
    assert response.getheader("Content-Type").split(";")[0] == mime
    assert response.getheader("Cross-Origin-Opener-Policy") == "same-origin"
    assert response.getheader("Cross-Origin-Embedder-Policy") == "require-corp"
    assert body


def test_server_sends_precompressed_files_and_revalidates(served, site):
    plain, body = get(served, "/pyodide/pyodide.asm.wasm")
    zipped, gz = get(served, "/pyodide/pyodide.asm.wasm", {"Accept-Encoding": "gzip, br"})
    assert plain.getheader("Content-Encoding") is None
    assert zipped.getheader("Content-Encoding") == "gzip"
    assert zipped.getheader("Content-Type") == "application/wasm"
    assert gzip.decompress(gz) == body == (site.dir / "pyodide/pyodide.asm.wasm").read_bytes()
    for headers in ({}, {"Accept-Encoding": "gzip"}):
        again, _ = get(
            served,
            "/pyodide/pyodide.asm.wasm",
            {**headers, "If-Modified-Since": plain.getheader("Last-Modified")},
        )
        assert again.status == 304
    missing, _ = get(served, "/no/such/file.js")
    assert missing.status == 404


def run_build(tmp_path: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "build.py"), "build", "--out", str(tmp_path / "out")],
        env={**os.environ, "TANG_BUILD_CACHE": str(tmp_path / "cache"), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_missing_npm_is_one_clear_line(tmp_path):
    proc = run_build(tmp_path, {"PATH": str(tmp_path / "empty-bin")})
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines == [lines[-1]] and "npm not found" in lines[-1]
    assert "apt-get install" in lines[-1]


def test_unreachable_registry_is_one_clear_line(tmp_path):
    port = free_port()  # nothing listens there
    proc = run_build(
        tmp_path,
        {"npm_config_registry": f"http://127.0.0.1:{port}/", "npm_config_fetch_retries": "0"},
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("build.py: error:") and "registry reachable" in last


def test_pytest_collecting_nothing_fails(tmp_path):
    empty = tmp_path / "test_nothing.py"
    empty.write_text("")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "build.py"), "test", str(empty)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "collected no tests" in proc.stderr
