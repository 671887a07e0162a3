"""A scripted OpenAI-compatible chat server on 127.0.0.1 (standard library only).

For tests, demos and benchmarks that must run kbx's LLM methods through litellm over real HTTP
without a real model: `ScriptedServer(answer)` serves POST /v1/chat/completions, where
`answer(messages, n)` returns the reply text for the n-th request (0-based), or a `Failure` (or a
bare int HTTP status) to fail that request. `latency_s` delays every completion (a model's think
time); a failure is answered at once, as a provider's rate limiter does. Token counts are words, so
budgets and accounting have something real to count. Every request's messages, Authorization
header and body are kept in `requests`, and its start and end (time.monotonic) in `spans`, so a
test can count the calls in flight at any moment.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading
import time
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Failure:
    """An HTTP error reply, e.g. Failure(429, {"Retry-After": "1"})."""

    status: int
    headers: dict = dataclasses.field(default_factory=dict)


class ScriptedServer:
    def __init__(self, answer: Callable[[list[dict], int], str | int | Failure], latency_s: float = 0.0):
        self.answer, self.latency_s = answer, latency_s
        self.requests: list[dict] = []
        self.spans: list[tuple[float, float]] = []  # (start, end) of every answered request
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                started = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    n = len(server.requests)
                    server.requests.append({"path": self.path, "auth": self.headers.get("Authorization", ""),
                                            "body": body, "messages": body.get("messages", []),
                                            "at": started})  # fmt: skip
                try:
                    self._answer(n, body)
                finally:
                    with server.lock:
                        server.spans.append((started, time.monotonic()))

            def _answer(self, n: int, body: dict) -> None:
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                reply = server.answer(body.get("messages", []), n)
                if isinstance(reply, int):
                    reply = Failure(reply)
                if isinstance(reply, Failure):
                    kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
                    error = {"message": f"scripted failure {reply.status}", "type": kind}
                    return self._send(reply.status, {"error": error}, reply.headers)
                if server.latency_s:
                    time.sleep(server.latency_s)
                prompt_tokens = sum(len(m.get("content", "").split()) for m in body.get("messages", []))
                self._send(200, {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model", "x"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(reply.split()),
                              "total_tokens": prompt_tokens + len(reply.split())},
                })  # fmt: skip

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, str(value))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
        return [r for r in self.requests if "Reply with the word ok" not in r["messages"][-1]["content"]]


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
