"""What a test may skip for, and strict mode, in which a skip fails the run.

A test that cannot run because something is missing says what with ``skip_missing(kind,
what, reason)`` (``import_or_skip`` for a package, ``open_or_skip`` for a device): its reason
then starts with ``[missing KIND: WHAT]``, written here and read here, so the check below is
exact. With ``TANG_STRICT_SKIPS=1`` (``.ci/run`` sets it) every skip fails the run, whatever
its reason, except a ``(kind, what)`` that ``ALLOWED`` names with its justification: CI
cannot go green with the GPU tests, a toolchain or a package quietly left out.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, NoReturn

import pytest

STRICT_ENV = "TANG_STRICT_SKIPS"
KINDS = ("toolchain", "package", "adapter", "device")
TAG = "[missing "  # a skip_missing reason starts "[missing KIND: WHAT] "

# The one list of skips strict mode allows, each with why CI may run without the thing.
ALLOWED: dict[tuple[str, str], str] = {
    ("device", "a CUDA GPU"): (
        "running a CUDA kernel needs an NVIDIA GPU, which CI machines lack; nvcc still "
        "compiles every CUDA kernel and its host driver there (those tests run)"
    ),
}


def skip_missing(kind: str, what: str, reason: str) -> NoReturn:
    """Skip the calling test (or module) because ``what`` (a ``kind`` in KINDS) is missing;
    strict mode fails it unless ``ALLOWED`` names ``(kind, what)``."""
    __tracebackhide__ = True  # pytest reports the caller's line
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {KINDS}")
    if "]" in what:
        raise ValueError(f"what {what!r} may not contain ']'")
    pytest.skip(f"{TAG}{kind}: {what}] {reason}", allow_module_level=True)


def missing_of(message: str) -> tuple[str, str] | None:
    """``(kind, what)`` of a reason ``skip_missing`` wrote, else None."""
    if not message.startswith(TAG) or "] " not in message:
        return None
    kind, sep, what = message[len(TAG) : message.index("] ")].partition(": ")
    return (kind, what) if sep and kind in KINDS else None


def import_or_skip(name: str, reason: str) -> ModuleType:
    """``import name``, or a skip for the missing package (``pytest.importorskip``, with a
    kind that strict mode can check)."""
    __tracebackhide__ = True
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        skip_missing("package", name.partition(".")[0], f"{reason} ({exc})")


def skip_missing_tool(tool: str, reason: str) -> NoReturn:
    """A skip for a tool of tests/toolchains.py that is not here (``available(tool)`` is
    false): wgpu-py's is a missing adapter, every other a missing toolchain."""
    __tracebackhide__ = True
    if tool == "wgpu":
        skip_missing("adapter", "wgpu-py", reason)
    skip_missing("toolchain", tool, reason)


def open_or_skip(kind: str) -> Any:
    """A device to test on, or a skip saying which is missing and why (the device's own
    words): ``"native"`` opens a fresh wgpu-py device (Mesa lavapipe unless
    ``VK_ICD_FILENAMES`` names another ICD), ``"c"`` is ``tang.gpu.device("c")``, the
    compiled C device the library shares."""
    __tracebackhide__ = True
    import tang.gpu as gpu

    if kind == "native":
        from toolchains import LAVAPIPE

        os.environ.setdefault("VK_ICD_FILENAMES", LAVAPIPE)
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        try:
            from tang.gpu.native import NativeDevice

            return NativeDevice.open()
        except (gpu.NoDeviceError, ImportError) as exc:
            skip_missing("adapter", "wgpu-py", f"no wgpu-py device (tests use lavapipe): {exc}")
    if kind == "c":
        try:
            return gpu.device("c", fallback=False)
        except gpu.NoDeviceError as exc:
            skip_missing("toolchain", "a C compiler", str(exc))
    raise ValueError(f"open_or_skip opens 'native' or 'c', not {kind!r}")


# ---------------------------------------------------------------------------------------
# strict mode: a pytest plugin that tests/conftest.py and e2e/conftest.py register once


def strict() -> bool:
    """Whether this run is in strict mode (``TANG_STRICT_SKIPS=1``)."""
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def _message(report: Any, excinfo: Any) -> str:
    """The skip's reason: the exception's own text, else the report's (``Skipped: ...``)."""
    value = getattr(excinfo, "value", None)
    if isinstance(value, pytest.skip.Exception):
        return str(value.msg)
    text = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return text.removeprefix("Skipped: ")


def _verdict(message: str) -> tuple[str, str | None]:
    """What the skip was for (with its reason), and the allowlist's justification (None:
    not allowed)."""
    missing = missing_of(message)
    if missing is None:
        return f"a skip not made by tests/skips.py skip_missing: {message}", None
    kind, what = missing
    return f"missing {kind} {what!r}: {message.partition('] ')[2]}", ALLOWED.get(missing)


@dataclass(eq=False)  # a plugin: hashed by identity
class StrictSkips:
    """Counts skips by verdict; in strict mode a skip outside ``ALLOWED`` fails its test
    (one skipped at collection fails the run at its end), and the summary says which."""

    on: bool
    allowed: list[tuple[str, str, str]] = field(default_factory=list)  # nodeid, what, why
    broken: list[tuple[str, str]] = field(default_factory=list)  # nodeid, what

    def _judge(self, nodeid: str, message: str) -> tuple[str, str | None]:
        what, why = _verdict(message)
        if why is None:
            self.broken.append((nodeid, what))
        else:
            self.allowed.append((nodeid, what, why))
        return what, why

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        if report.skipped and not hasattr(report, "wasxfail"):
            what, why = self._judge(item.nodeid, _message(report, call.excinfo))
            if why is None and self.on:
                report.outcome = "failed"
                report.longrepr = (
                    f"strict skips ({STRICT_ENV}=1) fail this skip, which tests/skips.py "
                    f"ALLOWED does not name: {what}"
                )
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        report = yield
        if report.skipped:
            call = getattr(report, "call", None)
            self._judge(collector.nodeid, _message(report, getattr(call, "excinfo", None)))
        return report

    def pytest_report_header(self) -> str:
        state = "on: a skip outside tests/skips.py ALLOWED fails" if self.on else "off"
        return f"strict skips ({STRICT_ENV}): {state}"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        quiet = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        if self.on and self.broken and session.exitstatus in quiet:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.allowed or self.broken):
            return
        write = terminalreporter.write_line
        terminalreporter.section("skips")
        allowed = _grouped(
            (nodeid, f"{what}\n    allowed: {why}") for nodeid, what, why in self.allowed
        )
        for what, nodeids in allowed.items():
            write(f"allowed ({_tests(nodeids)}): {what}")
        verdict = "FAILS the run" if self.on else f"would fail with {STRICT_ENV}=1"
        for what, nodeids in _grouped(self.broken).items():
            write(f"{verdict} ({_tests(nodeids)}): {what}")
        if self.on and self.broken:
            write(f"strict skips: {len(self.broken)} skip(s) outside ALLOWED: the run fails")


def _grouped(pairs: Any) -> dict[str, list[str]]:
    """``(nodeid, what)`` pairs as ``what -> nodeids``, in the order first seen."""
    groups: dict[str, list[str]] = {}
    for nodeid, what in pairs:
        groups.setdefault(what, []).append(nodeid)
    return groups


def _tests(nodeids: list[str], shown: int = 3) -> str:
    """The first few node ids, and how many more."""
    more = len(nodeids) - shown
    return ", ".join(nodeids[:shown]) + (f" and {more} more" if more > 0 else "")


def register(config: pytest.Config) -> None:
    """Add the plugin once per run (both conftests call this; the first one registers)."""
    if not config.pluginmanager.has_plugin("tang-strict-skips"):
        config.pluginmanager.register(StrictSkips(on=strict()), "tang-strict-skips")
