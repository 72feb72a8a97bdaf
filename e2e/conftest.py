"""End-to-end fixtures: the built site, served locally, driven by Debian's Chromium.

Design
------
* ``site`` (session): builds the site once with ``build.build(out, with_tests=True)`` into a
  temporary folder of the session (a test run never touches the shipped ``dist/``, nor another
  run's site) and serves it on a free port of 127.0.0.1 in a thread. ``site.url`` is the
  page, ``site.dir`` the folder, ``site.manifest`` its manifest.
* ``launch`` (per test): a factory ``launch(args=(), env=None, profile=None) -> BrowserContext``
  starting Chromium (``/usr/bin/chromium``, never a downloaded browser) with a fresh profile
  unless one is given, its own HOME/XDG folders, and a watchdog on the launch. Extra Chromium
  flags and environment are how GPU tests pick a WebGPU adapter, e.g.::

      launch(args=["--enable-unsafe-webgpu"])                          # SwiftShader
      launch(args=["--enable-unsafe-webgpu", "--use-angle=vulkan",
                   "--use-webgpu-adapter=opengles"],
             env={"VK_ICD_FILENAMES": LAVAPIPE_ICD})                   # lavapipe

* Network guard: every context routes ``**/*``; a request to anything but localhost is
  aborted and recorded, and the test then FAILS at teardown (an accidental CDN fetch shows
  up as a failure, not as a slow test).
* ``tang_page`` (per test): the page opened in a fresh profile and booted to "ready"; a
  ``TangPage`` with ``.call(method, params)`` (a worker round trip through the page's own
  ``window.tang.call``), ``.stage()``, and ``.console_errors`` (console errors and uncaught
  page errors, which tests can assert empty).
* Running arbitrary Python in Pyodide (for example the core's unit tests in 3.14): the shipped
  page never executes text, so such tests use ``py_runner``: a separate test page,
  ``_test/index.html`` with its own worker (sources in ``e2e/site/``), that reuses the page's
  boot code and adds ``run(code)``. It exists only in a ``--with-tests`` build.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import build  # noqa: E402  (stdlib-only module at the repository root)
from tests.skips import register  # noqa: E402  (strict skips: a skip here fails a strict run)

CHROMIUM = os.environ.get("TANG_CHROMIUM", "/usr/bin/chromium")
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
# The two WebGPU adapters headless Chromium gives here: name -> (extra args, extra env).
ADAPTERS = {
    "swiftshader": (["--enable-unsafe-webgpu"], None),
    "lavapipe": (
        ["--use-angle=vulkan", "--use-webgpu-adapter=opengles"],
        {"VK_ICD_FILENAMES": LAVAPIPE_ICD},
    ),
}
BASE_ARGS = (
    "--no-sandbox",
    "--headless=new",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--password-store=basic",
    "--use-mock-keychain",
)
LAUNCH_TIMEOUT_MS = 45_000  # one launch in ~60 hung here for minutes: give up and retry
BOOT_TIMEOUT_MS = 60_000
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


E2E = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    register(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under e2e/ is marked ``e2e`` (``pytest -m "not e2e"`` leaves the browser out)."""
    for item in items:
        if item.path.is_relative_to(E2E):
            item.add_marker(pytest.mark.e2e)


@dataclass
class Site:
    url: str
    dir: Path
    manifest: dict


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Iterator[Site]:
    out = tmp_path_factory.mktemp("site")
    manifest = build.build(out, with_tests=True, quiet=True)
    server = build.make_server(out, 0)
    thread = threading.Thread(target=server.serve_forever, name="e2e-site", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield Site(url=f"http://{host}:{port}/", dir=out, manifest=manifest)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def playwright_instance():
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: run `python build.py test` (installs Debian's "
            f"chromium) or apt-get install chromium"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@dataclass
class Guard:
    """Non-localhost requests seen (and aborted) by the network guard."""

    blocked: list[str] = field(default_factory=list)

    def route(self, route) -> None:
        host = urlsplit(route.request.url).hostname or ""
        if route.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
            route.fallback()
        else:
            self.blocked.append(route.request.url)
            route.abort("blockedbyclient")


def _free_profile_dir(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def network_guard() -> Guard:
    return Guard()


@pytest.fixture
def launch(playwright_instance, network_guard, tmp_path) -> Iterator[Callable[..., object]]:
    """Factory: ``launch(args=(), env=None, profile=None)`` → a guarded BrowserContext."""
    contexts = []
    counter = iter(range(1000))

    def _launch(args=(), env=None, profile: Path | None = None, viewport=None):
        n = next(counter)
        profile = profile or _free_profile_dir(tmp_path, f"profile-{n}")
        home = _free_profile_dir(tmp_path, "home")
        browser_env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            **(env or {}),
        }
        last_error = None
        for _attempt in range(2):
            try:
                context = playwright_instance.chromium.launch_persistent_context(
                    str(profile),
                    executable_path=CHROMIUM,
                    headless=True,
                    args=[*BASE_ARGS, *args],
                    env=browser_env,
                    timeout=LAUNCH_TIMEOUT_MS,
                    viewport=viewport or {"width": 1100, "height": 800},
                )
                break
            except Exception as exc:  # the watchdog fired: try once more
                last_error = exc
        else:
            raise RuntimeError(f"Chromium did not start twice: {last_error}")
        context.route("**/*", network_guard.route)
        contexts.append(context)
        return context

    yield _launch
    for context in contexts:
        with contextlib.suppress(Exception):
            context.close()
    if network_guard.blocked:
        pytest.fail(f"the network guard blocked non-localhost requests: {network_guard.blocked}")


class TangPage:
    """A page of the site in a browser, with helpers for the worker protocol."""

    def __init__(self, page, url: str):
        self.page = page
        self.url = url
        self.console_errors: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.console_errors.append(f"pageerror: {e}"))

    def _on_console(self, message) -> None:
        if message.type == "error":
            where = (message.location or {}).get("url", "")
            self.console_errors.append(f"{message.text} ({where})" if where else message.text)

    def open(self, wait: str | None = "ready", timeout: float = BOOT_TIMEOUT_MS) -> TangPage:
        self.page.goto(self.url)
        if wait:
            self.wait_for(wait, timeout)
        return self

    def stage(self) -> str:
        return self.page.evaluate("window.tang ? window.tang.stage() : 'loading'")

    def wait_for(self, state: str, timeout: float = BOOT_TIMEOUT_MS) -> None:
        """Wait until the page reaches `state` ("ready" or "error")."""
        self.page.wait_for_function(
            "s => document.body.dataset.state === s || document.body.dataset.state === 'error'",
            arg=state,
            timeout=timeout,
        )
        got = self.page.evaluate("document.body.dataset.state")
        if got != state:
            detail = self.page.locator("#error").inner_text() if got == "error" else got
            raise AssertionError(f"page reached {got!r}, not {state!r}: {detail}")

    def call(self, method: str, params: dict | None = None, timeout_ms: int | None = None):
        """Call a worker method through the page's client; raises RuntimeError on an error."""
        result = self.page.evaluate(
            """async ([m, p, t]) => {
                 try { return {ok: true, value: await window.tang.call(m, p, {timeout: t})}; }
                 catch (e) { return {ok: false, type: e.type ?? e.name, message: e.message,
                                     traceback: e.traceback ?? ""}; }
               }""",
            [method, params or {}, timeout_ms],
        )
        if not result["ok"]:
            raise RuntimeError(f"{result['type']}: {result['message']}\n{result['traceback']}")
        return result["value"]


@pytest.fixture
def tang_page(launch, site) -> TangPage:
    """The page, booted to "ready" in a fresh profile."""
    context = launch()
    page = context.pages[0] if context.pages else context.new_page()
    return TangPage(page, site.url).open()


class PyRunner:
    """Runs Python source in Pyodide through the test-only page (_test/), never the shipped one."""

    def __init__(self, page):
        self.page = page

    def run(self, code: str, timeout_ms: int = 120_000):
        """Run `code` with runPythonAsync; returns the last expression converted to JSON."""
        result = self.page.evaluate("([c, t]) => window.tang.harness.run(c, t)", [code, timeout_ms])
        if not result["ok"]:
            raise RuntimeError(result["error"])
        return result["value"]


@pytest.fixture
def py_runner(launch, site) -> PyRunner:
    context = launch()
    page = context.pages[0] if context.pages else context.new_page()
    page.goto(site.url + "_test/index.html")
    page.wait_for_function(
        "window.tang?.harness && window.tang.harness.state !== 'booting'", timeout=BOOT_TIMEOUT_MS
    )
    state = page.evaluate("window.tang.harness.state")
    if state != "ready":
        raise AssertionError(
            f"test page did not boot: {page.evaluate('window.tang.harness.error')}"
        )
    return PyRunner(page)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = [
    "ADAPTERS",
    "BOOT_TIMEOUT_MS",
    "LAVAPIPE_ICD",
    "PyRunner",
    "Site",
    "TangPage",
    "free_port",
]
