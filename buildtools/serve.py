"""A local static server with the headers the page needs (COOP/COEP, gzip, revalidation)."""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import functools
import http.server
from pathlib import Path
from typing import ClassVar

from .common import DIST, BuildError
from .site import build

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the headers the page needs.

    COOP/COEP make the page cross-origin isolated, so the page can share an interrupt buffer
    (SharedArrayBuffer) with the worker and cancel running Python. `no-cache` lets the browser
    keep files but revalidate them (a 304 on an unchanged file), so a reload is warm and a
    rebuild is never stale.
    """

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        **MIME_TYPES,
    }
    protocol_version = "HTTP/1.1"

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def send_head(self):
        """Send `<file>.gz` with Content-Encoding: gzip when it exists and the client takes it."""
        path = Path(self.translate_path(self.path))
        gz = path.with_name(path.name + ".gz")
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and gz.is_file()):
            return super().send_head()
        stat = path.stat()
        since = self.headers.get("If-Modified-Since")
        if since and "If-None-Match" not in self.headers:
            with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
                when = email.utils.parsedate_to_datetime(since)
                if when.tzinfo is None:
                    when = when.replace(tzinfo=datetime.UTC)
                if int(stat.st_mtime) <= when.timestamp():
                    self.send_response(http.HTTPStatus.NOT_MODIFIED)
                    self.send_header("Vary", "Accept-Encoding")
                    self.end_headers()
                    return None
        f = open(gz, "rb")  # noqa: SIM115 (closed by the base class after copying)
        self.send_response(http.HTTPStatus.OK)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(gz.stat().st_size))
        self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
        self.end_headers()
        return f

    def log_message(self, format: str, *args) -> None:
        pass  # quiet: errors still reach the browser as status codes

    def handle_one_request(self) -> None:
        with contextlib.suppress(ConnectionError):
            super().handle_one_request()


class SiteServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(directory: Path = DIST, port: int = 8000, host: str = "127.0.0.1") -> SiteServer:
    """A threaded server for `directory`; port 0 picks a free port (see .server_address)."""
    handler = functools.partial(SiteHandler, directory=str(directory))
    return SiteServer((host, port), handler)


def serve(port: int, out: Path = DIST) -> None:
    build(out)
    try:
        server = make_server(out, port)
    except OSError as exc:
        raise BuildError(
            f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); try --port with another number"
        ) from None
    host, real_port = server.server_address[:2]
    print(f"Serving {out} at http://{host}:{real_port}/  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
