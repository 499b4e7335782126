"""A loopback HTTP server that the real SDKs (openai, google-genai) talk to in tests. Each route answers from a
script of replies — success, 429 with Retry-After, 5xx, a slow reply, malformed JSON, garbage — so the tests
exercise the SDKs' real request and error paths without the network and without mocking SDK internals."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict | list | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode(), "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain"
        return self.body, self.headers.get("Content-Type", "application/octet-stream")


def chat_answer(letter: str) -> dict:
    """An OpenAI chat completion answering with `letter` as the prompts ask ("Answer: [[B]]")."""
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": f"Answer: [[{letter}]]"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self):
        return json.loads(self.body)


class StubServer:
    def __init__(self):
        self._routes: list[tuple[str, re.Pattern, list]] = []
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {key.lower(): value for key, value in self.headers.items()}
                reply = server._next_reply(Request(self.command, self.path, headers, body))
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload, content_type = reply.encoded()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.headers.get("Content-Type", content_type))
                    for key, value in reply.headers.items():
                        if key != "Content-Type":
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: leaving `with StubServer()` would otherwise wait up to half a second.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def script(self, method: str, path_pattern: str, *replies: Reply) -> None:
        """Replies for requests matching (method, regex on the path), in order; the last one repeats."""
        self._routes.append((method, re.compile(path_pattern), list(replies)))

    def _next_reply(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            for method, pattern, replies in self._routes:
                if method == request.method and pattern.search(request.path):
                    return replies.pop(0) if len(replies) > 1 else replies[0]
        return Reply(404, {"error": {"message": f"no stub route for {request.method} {request.path}"}})

    def requests_to(self, path_pattern: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if re.search(path_pattern, r.path)]

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
