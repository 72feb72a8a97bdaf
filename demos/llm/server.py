"""An OpenAI-compatible server for the model (Starlette + uvicorn: ``pip install 'tang[serve]'``).

    python -m demos.llm serve --port 8000 --device auto

``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/completions``, streamed
(server-sent events, ending ``data: [DONE]``) or whole, with ``usage``. One model answers one
request at a time: requests wait in a first-in first-out queue served by one worker thread
(the event loop stays free), and a client that disconnects stops its generation at the next
token (or leaves the queue). Errors are OpenAI's JSON: ``{"error": {message, type, param,
code}}`` with status 400, 404, 405, 413 or 500. ``GET /health`` says what the queue is doing.

Defaults follow OpenAI's API: temperature 1, top_p 1, max_tokens 16 for ``/v1/completions``;
a chat reply stops at the end of the assistant's turn or 256 tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import queue
import socket
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from demos.common import OneLineParser
from demos.llm import DEVICES, MAX_TEMPERATURE, ModelFileError, TextModel
from tang.llm.generate import Stats
from tang.llm.sampling import Sampling

PROG = "python -m demos.llm serve"
MAX_BODY = 1 << 20  # bytes in a request body, at most
MAX_STOPS = 4  # stop strings per request (OpenAI's limit)
COMPLETION_MAX_TOKENS = 16  # /v1/completions' default max_tokens (OpenAI's)
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
ERROR_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    500: "server_error",
}


class APIError(Exception):
    """A request the server refuses: an HTTP status and OpenAI's error fields."""

    def __init__(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        """OpenAI's error object."""
        kind = ERROR_TYPES.get(self.status, "invalid_request_error")
        return {
            "error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}
        }


# ---------------------------------------------------------------------------------------------
# the queue: one worker thread runs one generation at a time, first come first served


@dataclass
class Job:
    """One generation: its tokens and options in, text pieces out to the request's loop."""

    ids: list[int]
    max_tokens: int
    sampling: Sampling
    stop: list[str]
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancel: threading.Event = field(default_factory=threading.Event)
    stats: Stats = field(default_factory=Stats)

    def emit(self, kind: str, value: Any) -> None:
        """Hand ("text", piece), ("done", stats) or ("error", exc) to the waiting request."""
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            self.loop.call_soon_threadsafe(self.out.put_nowait, (kind, value))


class Worker:
    """The thread that owns the model: jobs run in the order they were submitted."""

    def __init__(self, tm: TextModel) -> None:
        self.tm = tm
        self.jobs: queue.Queue[Job | None] = queue.Queue()
        self.current: Job | None = None
        self.started = 0  # jobs that ran
        self.cancelled = 0  # jobs whose client left: stopped between tokens, or never run
        self.thread = threading.Thread(target=self._run, name="llm-worker", daemon=True)

    def start(self) -> None:
        """Start serving the queue."""
        self.thread.start()

    def submit(self, job: Job) -> None:
        """Queue ``job`` behind the ones waiting."""
        self.jobs.put(job)

    def stop(self) -> None:
        """Cancel the running job, drop the rest and end the thread."""
        if self.current is not None:
            self.current.cancel.set()
        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.cancel.set()
                job.emit("error", APIError(500, "the server is shutting down"))
        self.jobs.put(None)
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def status(self) -> dict[str, Any]:
        """What the queue is doing (``GET /health``)."""
        busy = self.current is not None
        return {
            "busy": busy,
            "queued": self.jobs.qsize(),
            "started": self.started,
            "cancelled": self.cancelled,
        }

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            if job.cancel.is_set():  # its client left while it waited
                self.cancelled += 1
                continue
            self.current = job
            self.started += 1
            try:
                pieces = self.tm.stream(
                    job.ids,
                    max_tokens=job.max_tokens,
                    sampling=job.sampling,
                    stop=job.stop,
                    stats=job.stats,
                    cancel=job.cancel,
                )
                for piece in pieces:
                    job.emit("text", piece)
                self.cancelled += job.stats.finish_reason == "cancelled"
                job.emit("done", job.stats)
            except Exception as exc:  # reported to the client as a 500, never the thread's end
                job.emit("error", exc)
            finally:
                self.current = None


# ---------------------------------------------------------------------------------------------
# reading requests


async def read_json(request: Any, limit: int = MAX_BODY) -> dict[str, Any]:
    """The request's JSON object; 413 past ``limit`` bytes (declared or read), 400 if malformed."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise APIError(400, "Content-Length is not a number")
        if int(declared) > limit:
            raise APIError(413, f"the request body is over {limit} bytes", code="request_too_large")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise APIError(413, f"the request body is over {limit} bytes", code="request_too_large")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise APIError(400, "the body must be a JSON object")
    return data


def _integer(data: dict[str, Any], name: str, low: int | None = None) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise APIError(400, f"{name} must be an integer, not {value!r}", name)
    if low is not None and value < low:
        raise APIError(400, f"{name} must be ≥ {low}, not {value}", name)
    return value


def _number(data: dict[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise APIError(400, f"{name} must be a number, not {value!r}", name)
    if not low <= value <= high:
        raise APIError(400, f"{name} must be from {low:g} to {high:g}, not {value:g}", name)
    return float(value)


def _stops(data: dict[str, Any]) -> list[str]:
    stop = data.get("stop")
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not (isinstance(stops, list) and all(isinstance(s, str) and s for s in stops)):
        raise APIError(400, "stop must be a non-empty string or a list of them", "stop")
    if len(stops) > MAX_STOPS:
        raise APIError(400, f"stop holds at most {MAX_STOPS} strings, not {len(stops)}", "stop")
    return stops


def _messages(data: dict[str, Any]) -> list[dict[str, str]]:
    messages = data.get("messages")
    if messages is None:
        raise APIError(400, "messages is required", "messages")
    if not isinstance(messages, list) or not messages:
        raise APIError(400, "messages must be a non-empty list", "messages")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise APIError(400, f"{where} must be an object", where)
        role = ROLES.get(m.get("role"))  # type: ignore[arg-type]
        if role is None:
            known = ", ".join(ROLES)
            raise APIError(
                400, f"{where}.role must be one of {known}, not {m.get('role')!r}", where
            )
        content = m.get("content")
        if isinstance(content, list):  # content parts: only text ones
            if not all(
                isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                for p in content
            ):
                raise APIError(400, f"{where}.content parts must be text parts", where)
            content = "".join(p["text"] for p in content)
        if not isinstance(content, str):
            raise APIError(400, f"{where}.content must be a string", where)
        out.append({"role": role, "content": content})
    return out


def _prompt(data: dict[str, Any]) -> str:
    prompt = data.get("prompt")
    if prompt is None:
        raise APIError(400, "prompt is required", "prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise APIError(400, "prompt must be a string (one prompt per request)", "prompt")
    if not prompt:
        raise APIError(400, "prompt is empty", "prompt")
    return prompt


@dataclass
class Params:
    """A request's checked options."""

    max_tokens: int | None
    max_name: str  # the field max_tokens came from (for errors)
    sampling: Sampling
    stop: list[str]
    stream: bool
    include_usage: bool


def parse_params(data: dict[str, Any], names: Sequence[str]) -> Params:
    """The OpenAI options of ``data`` (``names``: the max-tokens fields, preferred last)."""
    max_tokens, max_name = None, names[0]
    for name in names:
        value = _integer(data, name, 1)
        if value is not None:
            max_tokens, max_name = value, name
    n = _integer(data, "n")
    if n is not None and n != 1:
        raise APIError(400, f"n must be 1 (one choice per request), not {n}", "n")
    temperature = _number(data, "temperature", 1.0, 0.0, MAX_TEMPERATURE)
    top_p = _number(data, "top_p", 1.0, 0.0, 1.0)
    if top_p == 0:
        raise APIError(400, "top_p must be above 0", "top_p")
    top_k = _integer(data, "top_k", 0) or 0
    seed = _integer(data, "seed")
    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise APIError(400, f"stream must be true or false, not {stream!r}", "stream")
    options = data.get("stream_options") or {}
    if not isinstance(options, dict):
        raise APIError(400, "stream_options must be an object", "stream_options")
    sampling = Sampling(temperature, top_k, top_p, seed)
    return Params(
        max_tokens,
        max_name,
        sampling,
        _stops(data),
        bool(stream),
        bool(options.get("include_usage")),
    )


# ---------------------------------------------------------------------------------------------
# the app


def create_app(tm: TextModel, *, max_body: int = MAX_BODY) -> Any:
    """The Starlette app serving ``tm`` (loaded); its worker thread runs while the app does."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    worker = Worker(tm)
    # one thread tokenizes, off the event loop (a prompt may be a megabyte) and one at a time
    tokenizing = ThreadPoolExecutor(1, thread_name_prefix="llm-tokenize")

    async def tokenize(encode: Any, text: Any) -> list[int]:
        return await asyncio.get_running_loop().run_in_executor(tokenizing, encode, text)

    def error(exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    def model_object() -> dict[str, Any]:
        return {"id": tm.name, "object": "model", "created": 0, "owned_by": "tang"}

    def check_model(data: dict[str, Any]) -> None:
        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise APIError(400, "model must be a string", "model")
        if model is not None and model.lower() != tm.name:
            raise APIError(
                404,
                f"The model {model!r} does not exist; this server has {tm.name!r}",
                "model",
                "model_not_found",
            )

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {"status": "ok", "model": tm.name, "device": tm.device, **worker.status()}
        )

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [model_object()]})

    async def model(request: Request) -> JSONResponse:
        if request.path_params["name"].lower() != tm.name:
            name = request.path_params["name"]
            return error(
                APIError(404, f"The model {name!r} does not exist", "model", "model_not_found")
            )
        return JSONResponse(model_object())

    async def chat(request: Request) -> Any:
        return await complete(request, chat=True)

    async def completions(request: Request) -> Any:
        return await complete(request, chat=False)

    async def complete(request: Request, chat: bool) -> Any:
        try:
            data = await read_json(request, max_body)
            check_model(data)
            if chat:
                messages = _messages(data)
                params = parse_params(data, ["max_tokens", "max_completion_tokens"])
                ids = await tokenize(tm.encode_chat, messages)
            else:
                prompt = _prompt(data)
                params = parse_params(data, ["max_tokens"])
                ids = await tokenize(tm.encode, prompt)
                if params.max_tokens is None:
                    params.max_tokens = min(COMPLETION_MAX_TOKENS, max(1, tm.context - len(ids)))
            max_tokens = tm.room(ids, params.max_tokens)
            try:
                tm.check(ids, max_tokens, params.max_name)
            except ValueError as exc:
                raise APIError(400, str(exc), params.max_name) from None
        except APIError as exc:
            return error(exc)
        job = Job(ids, max_tokens, params.sampling, params.stop, asyncio.get_running_loop())
        worker.submit(job)
        head = {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": int(time.time()),
            "model": tm.name,
        }
        if params.stream:
            return StreamingResponse(
                events(job, head, chat, params.include_usage),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        return await whole(request, job, head, chat)

    async def whole(request: Request, job: Job, head: dict[str, Any], chat: bool) -> Any:
        watch = asyncio.create_task(until_disconnect(request, job))
        try:
            pieces = []
            while True:
                kind, value = await job.out.get()
                if kind == "text":
                    pieces.append(value)
                elif kind == "error":
                    return error(as_api_error(value))
                else:
                    break
        finally:
            watch.cancel()
            job.cancel.set()  # a no-op when done; stops the work if this task was cancelled
        text = "".join(pieces)
        if chat:
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": job.stats.finish_reason,
            }
            head = {**head, "object": "chat.completion"}
        else:
            choice = {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": job.stats.finish_reason,
            }
        return JSONResponse({**head, "choices": [choice], "usage": usage(job.stats)})

    async def events(
        job: Job, head: dict[str, Any], chat: bool, include_usage: bool
    ) -> AsyncIterator[bytes]:
        def chunk(text: str | None, finish: str | None = None, role: bool = False) -> bytes:
            if chat:
                delta: dict[str, Any] = {} if text is None else {"content": text}
                if role:
                    delta["role"] = "assistant"
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
            return sse({**head, "choices": [choice]})

        try:  # cancelled (client gone) at an await: finally stops the generation
            if chat:
                yield chunk("", role=True)
            while True:
                kind, value = await job.out.get()
                if kind == "text":
                    yield chunk(value)
                elif kind == "error":
                    yield sse(as_api_error(value).body())
                    break
                else:
                    yield chunk(None, finish=job.stats.finish_reason)
                    if include_usage:
                        yield sse({**head, "choices": [], "usage": usage(job.stats)})
                    break
            yield b"data: [DONE]\n\n"
        finally:
            job.cancel.set()

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        status = getattr(exc, "status_code", 500)
        if status == 404:
            message = f"Invalid URL ({request.method} {request.url.path})"
        elif status == 405:
            message = f"Method {request.method} is not allowed for {request.url.path}"
        else:
            message = str(getattr(exc, "detail", "")) or "error"
        response = error(APIError(status, message))
        for key, value in (getattr(exc, "headers", None) or {}).items():
            response.headers[key] = value
        return response

    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        return error(APIError(500, f"internal error: {type(exc).__name__}: {exc}"))

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        worker.start()
        try:
            yield
        finally:
            worker.stop()
            tokenizing.shutdown(wait=False, cancel_futures=True)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{name:path}", model, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: on_http_error, Exception: on_crash},
    )
    app.state.worker = worker
    return app


def sse(obj: dict[str, Any]) -> bytes:
    """One server-sent event carrying ``obj`` as JSON."""
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def usage(stats: Stats) -> dict[str, int]:
    """OpenAI's token counts for one generation."""
    return {
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.tokens,
        "total_tokens": stats.prompt_tokens + stats.tokens,
    }


def as_api_error(exc: BaseException) -> APIError:
    """An exception from the worker as a 500 (an APIError as itself)."""
    if isinstance(exc, APIError):
        return exc
    return APIError(500, f"generation failed: {type(exc).__name__}: {exc}")


async def until_disconnect(request: Any, job: Job) -> None:
    """Cancel ``job`` when the client hangs up (the body has been read: only that can come)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            job.cancel.set()
            return


# ---------------------------------------------------------------------------------------------
# command line


def parser() -> OneLineParser:
    """``serve``'s options."""
    p = OneLineParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=8000, help="0: any free port (the URL says which)")
    p.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to listen on every interface")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--model", default=None, metavar="PATH", help="the GGUF file")
    p.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    return p


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def main(argv: Sequence[str] | None = None) -> int:
    """Load the model, bind, print the URL and serve until interrupted; 2 on bad input."""
    p = parser()
    args = p.parse_args(argv)
    missing = [m for m in ("starlette", "uvicorn") if not _importable(m)]
    if missing:
        p.exit(2, f"{p.prog}: error: {' and '.join(missing)} missing: pip install 'tang[serve]'\n")
    if not 0 <= args.port <= 65535:
        p.exit(2, f"{p.prog}: error: --port must be 0 … 65535, not {args.port}\n")
    if args.max_body < 1:
        p.exit(2, f"{p.prog}: error: --max-body must be ≥ 1, not {args.max_body}\n")
    from tang.gpu import NoDeviceError

    try:
        tm = TextModel.open(args.model).load(args.device)
    except ModelFileError as exc:
        p.exit(2, f"{p.prog}: error: {exc}\n")
    except NoDeviceError as exc:
        p.exit(2, f"{p.prog}: error: --device {args.device}: {exc}\n")
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        p.exit(
            2, f"{p.prog}: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}\n"
        )
    import uvicorn

    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    config = uvicorn.Config(
        create_app(tm, max_body=args.max_body),
        log_level=args.log_level,
        access_log=False,
        timeout_graceful_shutdown=3,
    )
    print(f"serving {tm.name} on the {tm.device} device at http://{host}:{port}/v1", flush=True)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        tm.release()
    return 0


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
