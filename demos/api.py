"""The Python side of the page's worker protocol.

The page never sends code. It sends a method name and JSON parameters; the worker calls
``dispatch_json(method, params_json)`` (a coroutine), which finds the handler registered
under that name, runs it and returns a JSON envelope::

    {"ok": true, "python_ms": <ms>, "result": <JSON value>}
    {"ok": false, "error": {"type": "...", "message": "...", "traceback": "..."}}

``python_ms`` is the whole Python side of the call: the handler (its awaits included) and the
encoding of its result.

Handlers take JSON-able keyword parameters and return a JSON-able value; ``async def``
handlers are awaited (that is how a handler waits on WebGPU promises in the browser).

Registration is per module and lazy. A method ``"prefix.name"`` lives in the module
``demos.<prefix>``; that module is imported the first time one of its methods is called, and
registers its handlers at import time::

    # demos/mydemo.py (a new demo is this file and web/panels/mydemo.js, nothing else)
    from demos.api import handler, warm_up_hook
    from demos.common import session_state

    @handler("mydemo.step")
    def step(dt: float = 0.01) -> dict:
        state = session_state("mydemo")  # kept in the worker between calls
        ...

    @warm_up_hook  # optional: run slices of it while the worker is idle after boot
    def warm_up(step: int) -> bool: ...

Methods without a dot (``version``, ``ping``, ``backends``, ``methods``) live here.

Packages beyond tang (sympy) ship with the site but are not installed at boot; a handler
that needs one awaits ``require("sympy")`` first (micropip, from the site, once).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import inspect
import json
import sys
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

Handler = Callable[..., Any]

_HANDLERS: dict[str, Handler] = {}

# Where the page's wheels are (set by the worker at boot): {"base": url, "wheels": {name: path}}
SITE: dict[str, Any] = {"base": "", "wheels": {}}
# Wheels that must be installed before another one (micropip runs with deps=False: offline).
WHEEL_DEPENDS = {"sympy": ("mpmath",)}


class UnknownMethod(LookupError):
    """No handler is registered under that name."""


class BadParams(TypeError):
    """The parameters do not match the handler."""


def handler(name: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the worker method ``name``; returns ``fn`` unchanged."""

    def register(fn: Handler) -> Handler:
        if name in _HANDLERS and _HANDLERS[name] is not fn:
            raise ValueError(f"worker method {name!r} is registered twice")
        _HANDLERS[name] = fn
        return fn

    return register


def _provider(prefix: str) -> str | None:
    if not prefix.isidentifier() or prefix == "api":
        return None
    module = f"{__package__ or 'demos'}.{prefix}"
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return module if found else None


def lookup(method: str) -> Handler:
    """The handler for ``method``, importing its module on first use."""
    if method in _HANDLERS:
        return _HANDLERS[method]
    prefix, dot, _ = method.partition(".")
    module = _provider(prefix) if dot else None
    if module is not None:
        importlib.import_module(module)
    if method not in _HANDLERS:
        raise UnknownMethod(f"no worker method {method!r}")
    return _HANDLERS[method]


async def call(method: str, params: dict[str, Any] | None = None) -> Any:
    """Run one method with keyword parameters; awaits async handlers."""
    fn = lookup(method)
    params = params or {}
    if not isinstance(params, dict):
        raise BadParams(f"params for {method!r} must be a JSON object, got {type(params).__name__}")
    try:
        _signature(fn).bind(**params)
    except TypeError as exc:
        raise BadParams(f"{method}: {exc}") from None
    result = fn(**params)
    if inspect.isawaitable(result):
        result = await result
    return result


@functools.cache
def _signature(fn: Handler) -> inspect.Signature:
    """A handler's signature, read once (reading it costs more than a small handler)."""
    return inspect.signature(fn)


def _error(exc: BaseException) -> dict[str, str]:
    kind = (
        "Cancelled"
        if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        else type(exc).__name__
    )
    return {
        "type": kind,
        "message": str(exc) or kind,
        "traceback": "".join(traceback.format_exception(exc)),
    }


async def dispatch_json(method: str, params_json: str = "{}", request: int | None = None) -> str:
    """The worker's single entry point: JSON text in, JSON envelope text out. Never raises.
    ``request`` is the page's id for the call, which its interrupts name (below)."""
    start = time.perf_counter()
    try:
        params = json.loads(params_json) if params_json else {}
        body = json.dumps(await call(method, params), allow_nan=False)
        python_ms = (time.perf_counter() - start) * 1e3
        return f'{{"ok": true, "python_ms": {python_ms:.4f}, "result": {body}}}'
    except (Exception, KeyboardInterrupt, asyncio.CancelledError) as exc:
        return json.dumps({"ok": False, "error": _error(exc)})


def dispatch(
    method: str, params_json: str = "{}", request: int | None = None
) -> asyncio.Future[str]:
    """``dispatch_json`` scheduled as a task, so the worker can cancel it while it awaits."""
    return asyncio.ensure_future(dispatch_json(method, params_json, request))


# Interrupts. The page stops busy Python by writing SIGINT into Pyodide's interrupt buffer,
# and Python notices it at its next periodic check, wherever that falls. Raised there, as
# Python does by default, a KeyboardInterrupt that falls between two steps of an async
# handler lands in the event loop's own code: the task loses its next step and the worker
# waits on it forever. So the worker routes the signal: it is a KeyboardInterrupt only inside
# the handler of the request it names, where dispatch_json answers "Cancelled"; anywhere else
# it is dropped (a request between steps is cancelled through its task, when the page's
# cancel message arrives, and a signal that came late hits nothing).
_signalled: list[Callable[[], int] | None] = [None]


def route_interrupts(signalled: Callable[[], int]) -> None:
    """Route SIGINT as above; ``signalled()`` is the id of the request the page last meant
    an interrupt for."""
    import signal

    _signalled[0] = signalled
    signal.signal(signal.SIGINT, _on_interrupt)


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    signalled = _signalled[0]
    request = _request_running_in(frame)
    if signalled is not None and request is not None and request == signalled():
        raise KeyboardInterrupt


def _request_running_in(frame: FrameType | None) -> int | None:
    """The id of the request whose handler ``frame`` is in (``call`` on the stack, below it
    the ``dispatch_json`` that holds the id), or None."""
    inside = False
    while frame is not None:
        if frame.f_code is _CALL_CODE:
            inside = True
        elif frame.f_code is _DISPATCH_CODE:
            return frame.f_locals.get("request") if inside else None
        frame = frame.f_back
    return None


_CALL_CODE, _DISPATCH_CODE = call.__code__, dispatch_json.__code__


# Hooks. Demos register work for the worker's idle moments; this module names no demo.
#   @warm_up_hook  fn(step) -> bool: one short slice of warm-up after boot, step 0, 1, …
#                  until it returns False (why: web/worker.js, "Warm-up")
#   @idle_hook     fn(): after each request, when no other waits (free what it left behind)
_WARM_UPS: list[Callable[[int], bool]] = []
_IDLE_HOOKS: list[Callable[[], Any]] = []
_warming: dict[str, Any] = {"hook": 0, "step": 0, "imports": []}

# Modules of this package that are not demos (never imported to find hooks).
NOT_DEMOS = frozenset({"api", "common", "__main__", "llm"})  # llm: the desktop package


def warm_up_hook(fn: Callable[[int], bool]) -> Callable[[int], bool]:
    """Register ``fn(step) -> bool`` as a slice of the worker's warm-up; returns ``fn``."""
    if fn not in _WARM_UPS:
        _WARM_UPS.append(fn)
    return fn


def idle_hook(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Register ``fn()`` to run when the worker is idle after a request; returns ``fn``."""
    if fn not in _IDLE_HOOKS:
        _IDLE_HOOKS.append(fn)
    return fn


def demo_modules() -> list[str]:
    """Every demo module of this package (``demos.<name>``), found on disk, sorted."""
    import pkgutil

    package = sys.modules[__package__ or "demos"]
    return sorted(
        f"{package.__name__}.{info.name}"
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_") and info.name not in NOT_DEMOS
    )


def warm_up(step: int) -> bool:
    """One slice of the worker's warm-up; False when there is nothing more to do. Step 0
    starts over. The first slices import the demos not imported yet, one per slice (so a
    request waits for one import at most), and each registers its hooks; then the hooks
    run in turn, each from its own step 0 until it returns False. A demo that fails to
    import is reported on stderr and skipped: the others still warm up."""
    if step == 0:
        pending = [m for m in demo_modules() if m not in sys.modules]
        _warming.update(hook=0, step=0, imports=pending)
    if _warming["imports"]:
        module = _warming["imports"].pop(0)
        try:
            importlib.import_module(module)
        except Exception as exc:
            print(f"warm-up: cannot import {module}: {exc!r}", file=sys.stderr)
        return True
    if _warming["hook"] >= len(_WARM_UPS):
        return False
    hook, own_step = _WARM_UPS[_warming["hook"]], _warming["step"]
    _warming["step"] += 1
    if not hook(own_step):  # that hook is done: the next one starts in the next slice
        _warming.update(hook=_warming["hook"] + 1, step=0)
    return _warming["hook"] < len(_WARM_UPS)


def idle() -> int:
    """The worker calls this after each request, when no other waits: the demos' idle hooks,
    then the collection of the graph nodes the request left behind
    (``tang.expr.graph.collect_when_idle``), so that no request pays for a large one.
    Returns the nodes freed."""
    from tang.expr.graph import collect_when_idle

    for hook in list(_IDLE_HOOKS):
        hook()
    return collect_when_idle()


def configure_site(base: str, wheels_json: str) -> None:
    """Called once by the worker: the site URL and manifest["wheels"]."""
    SITE["base"] = base
    SITE["wheels"] = json.loads(wheels_json)


async def require(*names: str) -> None:
    """Install packages shipped with the site (e.g. ``"sympy"``) unless already importable."""
    wanted: list[str] = []
    for name in names:
        for dep in (*WHEEL_DEPENDS.get(name, ()), name):
            if dep not in wanted and importlib.util.find_spec(dep) is None:
                wanted.append(dep)
    if not wanted:
        return
    missing = [n for n in wanted if n not in SITE["wheels"]]
    if missing:
        raise ModuleNotFoundError(f"the site ships no wheel for {', '.join(missing)}")
    import micropip  # installed (not imported) at boot

    urls = [SITE["base"] + SITE["wheels"][n] for n in wanted]
    await micropip.install(urls, deps=False)
    importlib.invalidate_caches()
    for name in wanted:
        importlib.import_module(name)  # a failed install can be silent: prove it


# ---------------------------------------------------------------------------------------------
# built-in methods


@handler("version")
def version() -> dict[str, str]:
    """tang's version and the interpreter it runs on."""
    import tang

    return {
        "tang": tang.__version__,
        "python": sys.version.split()[0],
        "platform": sys.platform,
    }


@handler("ping")
def ping(payload: Any = None) -> Any:
    """Echo: measures a round trip through the worker."""
    return payload


@handler("memory")
def memory() -> dict[str, float]:
    """Graph nodes the intern table holds now, and the collections that have freed the rest
    (how many, nodes freed, milliseconds spent)."""
    from tang.expr import graph

    stats = graph.collect_stats
    return {
        "nodes": len(graph._interned),
        "collections": stats["runs"],
        "freed": stats["freed"],
        "collect_ms": round(stats["seconds"] * 1e3, 3),
    }


@handler("backends")
def backends() -> list[dict[str, Any]]:
    """The backends tang prints, in ``tang.lower.BACKENDS`` order: the page's one catalogue
    (its tabs, file names and highlighting come from here, not from lists of its own).
    ``precision`` lists the float types, the default first."""
    from tang.lower import BACKENDS

    return [
        {
            "name": p.name,
            "label": p.label,
            "extension": p.extension,
            "language": p.language,
            "precision": list(p.dtypes),
        }
        for p in BACKENDS.values()
    ]


@handler("methods")
def methods() -> list[str]:
    """The methods registered so far (modules not yet imported are not listed)."""
    return sorted(_HANDLERS)


@handler("packages.require")
async def packages_require(names: list[str]) -> dict[str, str]:
    """Install site packages by name (see ``require``); returns their versions."""
    await require(*names)
    from importlib import metadata

    return {name: metadata.version(name) for name in names}


@handler("sleep")
async def sleep(seconds: float = 0.0) -> float:
    """Wait without blocking the worker's event loop (tests cancellation of async work)."""
    await asyncio.sleep(min(float(seconds), 60.0))
    return seconds


@handler("spin")
def spin(seconds: float = 0.0, steps: int = 1) -> Any:
    """Busy Python for a while (tests interrupting running work); with ``steps`` > 1 the
    time is split into that many turns of the event loop, like a long run in chunks."""
    seconds, steps = min(float(seconds), 60.0), max(1, min(int(steps), 1000))
    if steps == 1:
        return _busy(seconds)

    async def stepped() -> int:
        n = 0
        for _ in range(steps):
            n += _busy(seconds / steps)
            await asyncio.sleep(0)
        return n

    return stepped()


def _busy(seconds: float) -> int:
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n
