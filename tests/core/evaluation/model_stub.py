"""A loopback HTTP server that speaks just enough of the OpenAI and Gemini APIs for the official SDKs:
chat completions, audio transcriptions and generateContent. Tests script failures (429 with Retry-After
or Gemini's RetryInfo, 500, 401, a hang past the client's timeout, a 200 with malformed JSON, garbage
text) and read back every request it received. Used by the tests and by tests/benchmarks/bench_runner.py.

Run standalone (the SIGKILL test and the benchmark do): python model_stub.py --port-file F [--delay S] [--hold-after N]"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GEMINI_ROUTE = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)")


class Scripted:
    """One scripted reply: 'ok', '429', '500', '401', '400', 'timeout', 'malformed', 'garbage', 'empty'."""

    def __init__(self, kind: str, retry_after: float | None = None, text: str | None = None, hang_s: float = 3.0):
        self.kind, self.retry_after, self.text, self.hang_s = kind, retry_after, text, hang_s


class StubState:
    def __init__(
        self, delay_s: float = 0.0, hold_after: int | None = None, log_path: Path | None = None, burst: int = 0
    ):
        self.delay_s = delay_s
        self.hold_after = hold_after  # after this many 200 answers, every further request hangs unanswered
        self.log_path = log_path
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # notified whenever a request is answered or held
        self.held = 0  # requests hanging unanswered because of hold_after
        # the first `burst` answers wait for each other and go out at the same instant
        self.burst = threading.Barrier(burst) if burst > 1 else None
        self.gate = threading.Event()  # cleared: answers wait (they are still given, once it is set again)
        self.gate.set()
        self.script: collections.deque[Scripted] = collections.deque()
        self.requests: list[dict] = []
        self.answered = 0
        self.granted = 0  # requests let through while a hold_after quota is set
        self.answer_fn = None  # body dict → reply text, for tests that need specific answers
        self.release = threading.Event()

    def next_script(self) -> Scripted | None:
        with self.lock:
            return self.script.popleft() if self.script else None

    def wait_for(self, predicate, timeout: float = 30.0) -> bool:
        """Wait until `predicate(state)` holds (checked whenever a request is answered or held)."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self), timeout)


def default_answer(body: bytes) -> str:
    """A deterministic letter from the request bytes: the same request always gets the same answer."""
    return f"Answer: [[{'ABCD'[hashlib.sha256(body).digest()[0] % 4]}]]"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ModelStub/1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes; Nagle + delayed ACK would add 40 ms

    def log_message(self, *args) -> None:  # quiet
        return

    @property
    def state(self) -> StubState:
        return self.server.state  # type: ignore[attr-defined]

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        state = self.state
        path = self.path.split("?")[0]
        entry = {
            "path": path,
            "sha256": hashlib.sha256(body).hexdigest(),
            "time": time.time(),
            "authorization": self.headers.get("Authorization") or self.headers.get("x-goog-api-key"),
            "body": body,
            "status": None,
        }
        with state.lock:
            state.requests.append(entry)
        scripted = state.next_script() or Scripted("ok")
        if scripted.kind == "ok" and state.hold_after is not None:
            with state.lock:  # decide and reserve in one step, so concurrent requests cannot overshoot the quota
                hold = state.granted >= state.hold_after
                state.granted += 0 if hold else 1
                state.held += 1 if hold else 0
                state.changed.notify_all()
            if hold:  # decided on arrival: a test sees at once that the client sent another request
                state.release.wait()  # never answered: dropped when released
                entry["status"] = "dropped"
                self.close_connection = True
                return
            if state.burst is not None:
                try:
                    state.burst.wait(timeout=30)
                except threading.BrokenBarrierError:
                    pass
        if scripted.kind == "ok":
            state.gate.wait()
        if state.delay_s:
            time.sleep(state.delay_s)
        try:
            self._reply(path, body, scripted, entry)
        except (BrokenPipeError, ConnectionResetError):
            entry["status"] = "client gone"

    def _reply(self, path: str, body: bytes, scripted: Scripted, entry: dict) -> None:
        gemini = GEMINI_ROUTE.match(path)
        kind = scripted.kind
        if kind == "timeout":
            time.sleep(scripted.hang_s)
            entry["status"] = "hung"
            self.close_connection = True
            return
        if kind in ("429", "500", "401", "400"):
            status = int(kind)
            headers = {}
            if gemini:
                error = {
                    "error": {
                        "code": status,
                        "message": f"stub {kind}",
                        "status": {
                            429: "RESOURCE_EXHAUSTED",
                            500: "INTERNAL",
                            401: "UNAUTHENTICATED",
                            400: "INVALID_ARGUMENT",
                        }[status],
                    }
                }
                if status == 429 and scripted.retry_after is not None:
                    error["error"]["details"] = [
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{scripted.retry_after}s"}
                    ]
            else:
                # like some providers and proxies, echo the credential back (the security test needs the worst case)
                message = f"stub {kind} for {self.headers.get('Authorization', '')}"
                if status == 401:
                    message = f"Incorrect API key provided: {self.headers.get('Authorization', '')}"
                error = {"error": {"message": message, "type": "stub", "code": kind}}
                if status == 429 and scripted.retry_after is not None:
                    headers["retry-after"] = f"{scripted.retry_after:g}"
            if gemini:
                error["error"]["message"] += f" (key {self.headers.get('x-goog-api-key', '')})"
            self._send(status, json.dumps(error).encode(), headers)
            entry["status"] = status
            return
        if kind == "malformed":
            self._send(200, b'{"choices": [ {"index": 0, "message": ', {})
            entry["status"] = "malformed"
            return
        state = self.state
        if scripted.text is not None:
            text = scripted.text
        elif kind == "garbage":
            text = "zxq lorem ipsum 42 %%"
        elif kind == "empty":
            text = ""
        elif state.answer_fn is not None:
            text = state.answer_fn(json.loads(body or b"{}"))
        else:
            text = default_answer(body)
        if path.endswith("/audio/transcriptions"):
            payload = {"text": "Question: what is two plus two? A: three. B: four. C: five. D: six."}
        elif gemini:
            payload = {
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
                "usageMetadata": {
                    "promptTokenCount": 120,
                    "candidatesTokenCount": 6,
                    "totalTokenCount": 126,
                    "promptTokensDetails": [
                        {"modality": "TEXT", "tokenCount": 40},
                        {"modality": "AUDIO", "tokenCount": 80},
                    ],
                },
            }
        else:
            payload = {
                "id": "stub",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
            }
        self._send(200, json.dumps(payload).encode(), {})
        entry["status"] = 200
        with state.lock:
            state.answered += 1
            state.changed.notify_all()
            if state.log_path is not None:
                with open(state.log_path, "a") as log:  # the SIGKILL test reads what was answered
                    log.write(entry["sha256"] + "\n")
                    log.flush()

    def _send(self, status: int, payload: bytes, headers: dict) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 256  # the listen backlog: 32+ clients connect at once
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client killed mid-request is expected here
        return


class LoopbackServer:
    """A stub HTTP server on 127.0.0.1 (an ephemeral port unless given) serving `handler` with `state`, run on a
    thread inside `with`; the SDKs reach it through `openai_url` or `gemini_url`."""

    def __init__(self, handler, state, port: int = 0):
        self.state = state
        self.httpd = _QuietServer(("127.0.0.1", port), handler)
        self.httpd.state = state  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def gemini_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def release(self) -> None:
        """Let go of requests the stub holds, before it shuts down."""

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


class StubServer(LoopbackServer):
    def __init__(
        self,
        delay_s: float = 0.0,
        hold_after: int | None = None,
        log_path: Path | None = None,
        port: int = 0,
        burst: int = 0,
    ):
        super().__init__(Handler, StubState(delay_s, hold_after, log_path, burst), port)

    def script(self, *entries: Scripted) -> None:
        with self.state.lock:
            self.state.script.extend(entries)

    @property
    def requests(self) -> list[dict]:
        with self.state.lock:
            return list(self.state.requests)

    def answered_bodies(self) -> list[dict]:
        return [json.loads(r["body"]) for r in self.requests if r["status"] == 200 and r["body"].startswith(b"{")]

    def release(self) -> None:
        self.state.release.set()
        self.state.gate.set()


def decode_audio_b64(text: str) -> bytes:
    return base64.b64decode(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--hold-after", type=int)
    parser.add_argument("--log")
    options = parser.parse_args()
    server = StubServer(options.delay, options.hold_after, Path(options.log) if options.log else None)
    with server:
        Path(options.port_file).write_text(str(server.port))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            sys.exit(0)
