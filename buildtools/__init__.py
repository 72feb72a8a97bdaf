"""The build steps behind `python build.py` (a build tool: not part of the tang wheel).

    common    paths, the .cache/ folder, one-line errors, running a client, the build lock
    fetch     the Pyodide runtime (npm) and the page's wheels (pip), pinned by sha256
    bundle    the editor bundle (esbuild) and gzip copies of big files
    wheel     the tang wheel (tang/ + demos/) and CPython 3.14 bytecode for wheels
    site      dist/: everything placed, with its manifest
    serve     the local server (COOP/COEP headers, gzip)
    testenv   test requirements (pip extras, Debian packages) and the pytest run

Standard library only.
"""
