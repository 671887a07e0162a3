"""A scripted OpenAI-compatible chat server on 127.0.0.1 (standard library only).

For tests, demos and benchmarks that must run kbx's LLM methods through litellm over real HTTP
without a real model: `ScriptedServer(answer)` serves POST /v1/chat/completions, where
`answer(messages, n)` returns the reply text for the n-th request (0-based), or an int HTTP status
to fail that request; `latency_s` delays every reply (a model's think time). Token counts are
words, so budgets and accounting have something real to count. Every request's messages,
Authorization header and body are kept in `requests`.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable


class ScriptedServer:
    def __init__(self, answer: Callable[[list[dict], int], str | int], latency_s: float = 0.0):
        self.answer, self.latency_s = answer, latency_s
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    n = len(server.requests)
                    server.requests.append({"path": self.path, "auth": self.headers.get("Authorization", ""),
                                            "body": body, "messages": body.get("messages", [])})  # fmt: skip
                if server.latency_s:
                    time.sleep(server.latency_s)
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                reply = server.answer(body.get("messages", []), n)
                if isinstance(reply, int):
                    error = {"message": f"scripted failure {reply}", "type": "server_error"}
                    return self._send(reply, {"error": error})
                prompt_tokens = sum(len(m.get("content", "").split()) for m in body.get("messages", []))
                self._send(200, {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model", "x"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(reply.split()),
                              "total_tokens": prompt_tokens + len(reply.split())},
                })  # fmt: skip

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
