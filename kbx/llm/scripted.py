"""A scripted OpenAI-compatible chat server on 127.0.0.1 (standard library only).

For tests, demos and benchmarks that must run kbx's LLM methods through litellm over real HTTP
without a real model: `ScriptedServer(answer)` serves POST /v1/chat/completions, where
`answer(messages, n)` returns the reply for the n-th request (0-based): its text, a `Reply` (text
with a finish reason, a think time or a model name of its own), or a `Failure` (or a bare int HTTP
status) to fail that request. A failure is answered at once, as a provider's rate limiter does.

It behaves as a real server does where kbx must cope with one:
- Token counts are words, so budgets and accounting have something real to count.
- `max_tokens` is honoured: a longer reply is cut after that many words, with finish_reason
  "length" (how a model that writes too much comes back).
- `context_window` (0: none), in words: a prompt that does not fit is refused with HTTP 400
  (context_length_exceeded), and an answer is cut where prompt and answer fill the window, below
  the max_tokens asked for (llama-cpp-python's server does both).
- `served_model` (""): the one model the server serves, listed at GET /v1/models; every answer
  carries it instead of the name asked for, or, with `echo_model`, the name asked for (as
  llama-cpp-python's server does: one model, answered under any name). Without it the server has
  no listing (404) and answers as whatever was asked.
- `latency_s` delays every completion (a model's think time); `serial` answers one request at a
  time, queueing the others, as a single-model local server does.
- `port` (0: any free one): a second server on the port of a stopped one is the same endpoint, as a
  restarted server is (the same llm.api_base, so the same job resumes).

Every request's messages, Authorization header and body are kept in `requests`, and its start and
end (time.monotonic) in `spans`, so a test can count the calls in flight at any moment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import json
import re
import threading
import time
from collections.abc import Callable

STOP, LENGTH = "stop", "length"
PREFLIGHT_TEXT = "Reply with the word ok"  # kbx.llm.client's preflight prompt


@dataclasses.dataclass(frozen=True)
class Failure:
    """An HTTP error reply, e.g. Failure(429, {"Retry-After": "1"})."""

    status: int
    headers: dict = dataclasses.field(default_factory=dict)
    message: str = ""
    code: str = ""


@dataclasses.dataclass(frozen=True)
class Reply:
    """A completion with more said about it than its text."""

    text: str
    finish_reason: str = STOP
    delay_s: float = 0.0  # think time of this answer alone (on top of the server's latency_s)
    model: str = ""  # the model name the answer carries ("": the server's)


def words(text: str) -> int:
    return len(text.split())


def cut_after_words(text: str, n: int) -> str:
    """`text` up to the end of its n-th word, its layout kept (n >= 1)."""
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    return text[: ends[n - 1]] if len(ends) > n else text


class ScriptedServer:
    def __init__(self, answer: Callable[[list[dict], int], str | int | Failure | Reply], latency_s: float = 0.0,
                 *, served_model: str = "", echo_model: bool = False, context_window: int = 0, serial: bool = False,
                 port: int = 0):  # fmt: skip
        self.answer, self.latency_s = answer, latency_s
        self.served_model, self.echo_model, self.context_window = served_model, echo_model, context_window
        self.requests: list[dict] = []
        self.spans: list[tuple[float, float]] = []  # (start, end) of every answered request
        self.lock = threading.Lock()
        self.one_at_a_time = threading.Lock() if serial else None
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(self))  # 0: any free port
        self.httpd.daemon_threads = True  # a request still sleeping never holds up the end of a test
        self.httpd.request_queue_size = 256  # a study's worth of concurrent calls must not be refused
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def chat_requests(self) -> list[dict]:
        """Requests other than the preflight ping."""
        return [r for r in self.requests if PREFLIGHT_TEXT not in r["messages"][-1]["content"]]

    def respond(self, n: int, body: dict) -> tuple[int, dict, dict]:
        """(HTTP status, JSON payload, headers) for request n."""
        messages = body.get("messages", [])
        prompt_tokens = sum(words(m.get("content", "")) for m in messages)
        window = self.context_window
        if window and prompt_tokens >= window:
            return _failure(Failure(400, message=f"Requested tokens ({prompt_tokens}) exceed context window of "
                                                 f"{window}", code="context_length_exceeded"))  # fmt: skip
        reply = self.answer(messages, n)
        if isinstance(reply, int):
            reply = Failure(reply)
        if isinstance(reply, Failure):
            return _failure(reply)
        if isinstance(reply, str):
            reply = Reply(reply)
        if self.latency_s or reply.delay_s:
            time.sleep(self.latency_s + reply.delay_s)
        limit = int(body.get("max_tokens") or 0) or (1 << 30)
        if window:
            limit = min(limit, window - prompt_tokens)  # what fits the window is all it writes
        text, finish = reply.text, reply.finish_reason
        if words(text) > limit:
            text, finish = cut_after_words(text, limit), LENGTH
        model = reply.model or (not self.echo_model and self.served_model) or body.get("model", "x")
        return 200, {
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": words(text),
                      "total_tokens": prompt_tokens + words(text)},
        }, {}  # fmt: skip


def _failure(f: Failure) -> tuple[int, dict, dict]:
    kind = "rate_limit_exceeded" if f.status == 429 else ("invalid_request_error" if f.status < 500 else "server_error")
    error = {"message": f.message or f"scripted failure {f.status}", "type": kind, "code": f.code or None}
    return f.status, {"error": error}, f.headers


def _handler(server: ScriptedServer):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_GET(self):
            if self.path.endswith("/models") and server.served_model:
                return self._send(200, {"object": "list", "data": [{"id": server.served_model, "object": "model"}]}, {})
            self._send(404, {"error": {"message": "not found"}}, {})

        def do_POST(self):
            started = time.monotonic()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with server.lock:
                n = len(server.requests)
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization", ""), "body": body,
                                        "messages": body.get("messages", []), "at": started})  # fmt: skip
            try:
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}}, {})
                with server.one_at_a_time or contextlib.nullcontext():
                    self._send(*server.respond(n, body))
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): as a real server
                pass
            finally:
                with server.lock:
                    server.spans.append((started, time.monotonic()))

        def _send(self, status: int, payload: dict, headers: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, str(value))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def in_flight_share(spans: list[tuple[float, float]], level: int, start: float, end: float) -> float:
    """The share of [start, end] during which at least `level` of `spans` were open."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    open_, covered, last = 0, 0.0, start
    for at, step in events:
        at = min(max(at, start), end)
        if open_ >= level:
            covered += at - last
        last = at
        open_ += step
    if open_ >= level:
        covered += end - last
    return covered / (end - start) if end > start else 0.0
