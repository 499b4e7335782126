"""A loopback HTTP server speaking just enough of the OpenAI Batch API and Gemini's batch mode for the official
SDKs (`openai`: files.create / batches.create, retrieve, list (newest first, paged), cancel / files.content;
`google-genai`: batches.create (inline requests or a file), get, list (paged), cancel / files.upload (resumable) /
files.download).

Each poll of a batch moves it one state on (OpenAI: validating → in_progress → finalizing → completed;
Gemini: PENDING → RUNNING → SUCCEEDED), so tests see every state. Tests script failures: request keys that
fail (an error line, or an inline error), a batch that fails validation, downloads that hang until released
(the killed `--collect` test), a create that hangs after the batch exists (a submitter killed before it stored the
id), a batch list that fails; and read back what was uploaded and asked."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
import urllib.parse
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler

from model_stub import LoopbackServer

OPENAI_STATES = ("validating", "in_progress", "finalizing", "completed")
GEMINI_STATES = ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED")
GEMINI_CREATE = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+):batchGenerateContent$")
GEMINI_BATCH = re.compile(r"^/(v1|v1beta|v1alpha)/batches/([^/:]+)(:cancel)?$")
GEMINI_LIST = re.compile(r"^/(v1|v1beta|v1alpha)/batches$")
GEMINI_DOWNLOAD = re.compile(r"^/(?:download/)?(v1|v1beta|v1alpha)/files/([^/:]+):download$")


def answer_for(custom_id: str) -> str:
    """A deterministic letter per request key."""
    return f"Answer: [[{'ABCD'[hashlib.sha256(custom_id.encode()).digest()[0] % 4]}]]"


class BatchStubState:
    def __init__(self):
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self.fail_keys: set[str] = set()  # request keys answered with an error
        self.fail_next_batch = False  # the next batch fails validation
        self.downloads_open = threading.Event()  # set: downloads beyond download_budget may go on
        self.downloads_waiting = 0
        self.download_budget: int | None = None  # this many downloads go through, later ones wait for downloads_open
        self.downloads: list[str] = []  # paths of the downloads answered
        self.answer_fn = answer_for
        self.uploads: dict[str, dict] = {}  # Gemini resumable sessions
        self.instant = False  # a batch is finished at its first poll (tests that do not follow the states)
        self.upload_budget: int | None = None  # this many OpenAI file uploads go through, later ones hang
        self.uploads_hanging = 0
        self.uploads_open = threading.Event()  # set: hanging uploads go on
        self.create_hangs = False  # a batch create makes the batch, then its reply hangs (until creates_open)
        self.creates_hanging = 0
        self.creates_open = threading.Event()
        self.create_reply_status: int | None = None  # a batch create makes the batch, then answers this error
        self.list_failure: str | None = None  # '429' or 'garbage': how every batch list answers
        self.list_page_size: int | None = None  # caps the page size a list asks for (to see paging)

    def new_id(self, prefix: str) -> str:
        with self.lock:
            return f"{prefix}{next(self.ids)}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:
        return

    @property
    def state(self) -> BatchStubState:
        return self.server.state  # type: ignore[attr-defined]

    # -- plumbing -----------------------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload, headers: dict | None = None, raw: bool = False) -> None:
        data = payload if raw else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _log(self, method: str) -> str:
        path = self.path.split("?")[0]
        with self.state.lock:
            self.state.requests.append((method, path))
        return path

    def do_GET(self) -> None:  # noqa: N802
        path = self._log("GET")
        if path.startswith("/v1/files/") and path.endswith("/content"):
            return self._download(self.state.files.get(path.split("/")[3]))
        if GEMINI_LIST.match(path) and self.headers.get("x-goog-api-key"):  # Gemini's v1 shares OpenAI's path
            return self._gemini_list()
        if path == "/v1/batches":
            return self._openai_list()
        if path.startswith("/v1/batches/") and path.split("/")[3] in self.state.batches:
            return self._openai_poll(path.split("/")[3])  # Gemini's batches are 'batches/…' (the same path in v1)
        match = GEMINI_DOWNLOAD.match(path)
        if match:
            return self._download(self.state.files.get(f"files/{match.group(2)}"))
        match = GEMINI_BATCH.match(path)
        if match:
            return self._gemini_poll(f"batches/{match.group(2)}")
        self._send(404, {"error": {"message": f"no route {path}"}})

    def do_POST(self) -> None:  # noqa: N802
        path = self._log("POST")
        body = self._body()
        if path == "/v1/files":
            return self._openai_upload(body)
        if path == "/v1/batches":
            return self._openai_create(json.loads(body))
        if path.startswith("/v1/batches/") and path.endswith("/cancel"):
            return self._cancel(path.split("/")[3], "openai")
        if re.match(r"^/upload/(v1|v1beta|v1alpha)/files$", path):
            return self._gemini_upload_start()
        if path.startswith("/upload-session/"):
            return self._gemini_upload_chunk(path.rsplit("/", 1)[1], body)
        match = GEMINI_CREATE.match(path)
        if match:
            return self._gemini_create(match.group(2), json.loads(body))
        match = GEMINI_BATCH.match(path)
        if match and match.group(3):
            return self._cancel(f"batches/{match.group(2)}", "gemini")
        self._send(404, {"error": {"message": f"no route {path}"}})

    def _query(self) -> dict[str, str]:
        return {
            name: values[-1] for name, values in urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).items()
        }

    def _list_page(self, api: str, size: int, after) -> tuple[list[dict], bool] | None:
        """A page of `api`'s batches, newest first, after the one named `after`; None: the list is failing (sent)."""
        if self.state.list_failure == "429":
            self._send(429, {"error": {"code": 429, "message": "stub: rate limited", "status": "RESOURCE_EXHAUSTED"}})
            return None
        if self.state.list_failure == "garbage":
            self._send(200, b"<html>not json</html>", raw=True)
            return None
        with self.state.lock:
            newest_first = [b for b in reversed(list(self.state.batches.values())) if b["api"] == api]
        names = [b.get("id") or b.get("name") for b in newest_first]
        start = names.index(after) + 1 if after in names else 0
        size = min(size, self.state.list_page_size or size)
        return newest_first[start : start + size], start + size < len(newest_first)

    def _openai_list(self) -> None:
        query = self._query()
        page = self._list_page("openai", int(query.get("limit", 20)), query.get("after"))
        if page is not None:
            data = [self._openai_view(b, OPENAI_STATES[b["step"]]) for b in page[0]]
            self._send(200, {"object": "list", "data": data, "has_more": page[1]})

    def _gemini_list(self) -> None:
        query = self._query()
        page = self._list_page("gemini", int(query.get("pageSize", 50)), query.get("pageToken"))
        if page is not None:
            reply = {"operations": [self._gemini_view(b, GEMINI_STATES[b["step"]]) for b in page[0]]}
            if page[1]:
                reply["nextPageToken"] = page[0][-1]["name"]
            self._send(200, reply)

    def _created(self, batch: dict) -> int | None:
        """A create whose batch now exists: its reply hangs while `create_hangs` (the test kills the submitter);
        returns the error status to answer instead of the batch, if any."""
        with self.state.lock:
            hang = self.state.create_hangs
            self.state.creates_hanging += hang
        if hang:
            self.state.creates_open.wait(60)
        return self.state.create_reply_status

    def _create_failed(self, status: int) -> None:
        self._send(status, {"error": {"code": status, "message": "stub: internal error", "status": "INTERNAL"}})

    def _download(self, data: bytes | None) -> None:
        if data is None:
            return self._send(404, {"error": {"message": "no such file"}})
        state = self.state
        with state.lock:
            free = state.download_budget is None or state.download_budget > 0
            if state.download_budget:
                state.download_budget -= 1
            state.downloads_waiting += 0 if free else 1
        if not free:
            state.downloads_open.wait()
            with state.lock:
                state.downloads_waiting -= 1
        with state.lock:
            state.downloads.append(self.path)
        self._send(200, data, raw=True)

    # -- the batch's life -----------------------------------------------------------------------------

    def _new_batch(self, api: str, lines: list[tuple[str, dict]], **extra) -> dict:
        state = self.state
        batch = {
            "api": api,
            "lines": lines,  # (key, request body)
            "step": 0,
            "failed": state.fail_next_batch,
            "cancelled": False,
            "created_at": int(time.time()),
            **extra,
        }
        state.fail_next_batch = False
        return batch

    def _advance(self, batch: dict, states: tuple[str, ...]) -> str:
        """The batch's state for this poll (each poll moves one state on)."""
        with self.state.lock:
            if batch["cancelled"]:  # the cancel's own reply said 'cancelling'
                return "cancelled"
            if batch["failed"]:
                return "failed"
            batch["step"] = len(states) - 1 if self.state.instant else min(batch["step"] + 1, len(states) - 1)
            return states[batch["step"]]

    def _answered_lines(self, batch: dict) -> list[tuple[str, dict]]:
        """What the batch answered: all of it, or the first half when it was cancelled."""
        lines = batch["lines"]
        return lines[: len(lines) // 2] if batch["cancelled"] else lines

    def _cancel(self, batch_id: str, api: str) -> None:
        batch = self.state.batches.get(batch_id)
        if batch is None:
            return self._send(404, {"error": {"message": "no such batch"}})
        with self.state.lock:
            batch["cancelled"] = True
        if api == "openai":
            return self._send(200, self._openai_view(batch, "cancelling"))
        self._send(200, {})

    # -- OpenAI ---------------------------------------------------------------------------------------

    def _openai_upload(self, body: bytes) -> None:
        with self.state.lock:
            hang = self.state.upload_budget is not None and self.state.upload_budget <= 0
            if self.state.upload_budget:
                self.state.upload_budget -= 1
            self.state.uploads_hanging += hang
        if hang:  # a submitter caught mid-upload (a test kills it, or starts another job meanwhile)
            self.state.uploads_open.wait(60)
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body
        )
        fields = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()
        }
        file_id = self.state.new_id("file-")
        self.state.files[file_id] = fields["file"]
        self._send(
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(fields["file"]),
                "created_at": int(time.time()),
                "filename": "input.jsonl",
                "purpose": fields["purpose"].decode(),
                "status": "processed",
            },
        )

    def _openai_create(self, body: dict) -> None:
        data = self.state.files.get(body["input_file_id"])
        if data is None:
            return self._send(400, {"error": {"message": "unknown input file"}})
        lines = []
        for raw in data.splitlines():
            record = json.loads(raw)
            assert record["url"] == body["endpoint"] == "/v1/chat/completions" and record["method"] == "POST"
            lines.append((record["custom_id"], record["body"]))
        batch_id = self.state.new_id("batch_")
        batch = self._new_batch("openai", lines, id=batch_id, input_file_id=body["input_file_id"])
        batch["metadata"] = body.get("metadata")
        self.state.batches[batch_id] = batch
        if failed := self._created(batch):
            return self._create_failed(failed)
        self._send(200, self._openai_view(batch, "validating"))

    def _openai_poll(self, batch_id: str) -> None:
        batch = self.state.batches.get(batch_id)
        if batch is None:
            return self._send(404, {"error": {"message": "no such batch"}})
        status = self._advance(batch, OPENAI_STATES)
        if status in ("completed", "cancelled") and "output_file_id" not in batch:
            self._openai_results(batch)
        self._send(200, self._openai_view(batch, status))

    def _openai_results(self, batch: dict) -> None:
        state = self.state
        output, errors = [], []
        for number, (key, body) in enumerate(self._answered_lines(batch), start=1):
            if key in state.fail_keys:
                errors.append(
                    {
                        "id": f"batch_req_{number}",
                        "custom_id": key,
                        "response": {
                            "status_code": 400,
                            "request_id": f"req_{number}",
                            "body": {
                                "error": {"message": "stub: audio input rejected", "type": "invalid_request_error"}
                            },
                        },
                        "error": None,
                    }
                )
                continue
            output.append(
                {
                    "id": f"batch_req_{number}",
                    "custom_id": key,
                    "response": {
                        "status_code": 200,
                        "request_id": f"req_{number}",
                        "body": completion(body, state.answer_fn(key)),
                    },
                    "error": None,
                }
            )
        if output:
            batch["output_file_id"] = state.new_id("file-out-")
            state.files[batch["output_file_id"]] = "".join(json.dumps(line) + "\n" for line in output).encode()
        else:
            batch["output_file_id"] = None
        if errors:
            batch["error_file_id"] = state.new_id("file-err-")
            state.files[batch["error_file_id"]] = "".join(json.dumps(line) + "\n" for line in errors).encode()
        batch["counts"] = {"total": len(batch["lines"]), "completed": len(output), "failed": len(errors)}

    def _openai_view(self, batch: dict, status: str | None = None) -> dict:
        view = {
            "id": batch["id"],
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": batch["input_file_id"],
            "completion_window": "24h",
            "status": status or "validating",
            "created_at": batch["created_at"],
            "output_file_id": batch.get("output_file_id"),
            "error_file_id": batch.get("error_file_id"),
            "request_counts": batch.get("counts", {"total": len(batch["lines"]), "completed": 0, "failed": 0}),
            "metadata": batch.get("metadata"),
        }
        if status == "failed":
            view["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_file", "message": "stub: validation failed"}],
            }
        return view

    # -- Gemini ---------------------------------------------------------------------------------------

    def _gemini_upload_start(self) -> None:
        session = self.state.new_id("s")
        self.state.uploads[session] = {"data": b""}
        port = self.server.server_address[1]
        self._send(200, {}, {"x-goog-upload-url": f"http://127.0.0.1:{port}/upload-session/{session}"})

    def _gemini_upload_chunk(self, session: str, body: bytes) -> None:
        upload = self.state.uploads[session]
        upload["data"] += body
        command = self.headers.get("X-Goog-Upload-Command", "")
        if "finalize" not in command:
            return self._send(200, {}, {"x-goog-upload-status": "active"})
        name = f"files/{self.state.new_id('upload')}"
        self.state.files[name] = upload["data"]
        file = {"name": name, "mimeType": "application/jsonl", "sizeBytes": str(len(upload["data"])), "state": "ACTIVE"}
        self._send(200, {"file": file}, {"x-goog-upload-status": "final"})

    def _gemini_create(self, model: str, body: dict) -> None:
        source = body["batch"]["inputConfig"]
        if "fileName" in source:
            lines = [
                (record["key"], record["request"])
                for record in map(json.loads, self.state.files[source["fileName"]].splitlines())
            ]
        else:
            lines = [(entry["metadata"]["key"], entry["request"]) for entry in source["requests"]["requests"]]
        name = f"batches/{self.state.new_id('b')}"
        batch = self._new_batch("gemini", lines, name=name, model=f"models/{model}", file=("fileName" in source))
        batch["display_name"] = body["batch"].get("displayName")
        self.state.batches[name] = batch
        if failed := self._created(batch):
            return self._create_failed(failed)
        self._send(200, self._gemini_view(batch, "BATCH_STATE_PENDING"))

    def _gemini_poll(self, name: str) -> None:
        batch = self.state.batches.get(name)
        if batch is None:
            return self._send(404, {"error": {"code": 404, "message": "no such batch", "status": "NOT_FOUND"}})
        state = self._advance(batch, GEMINI_STATES)
        state = {
            "cancelling": "BATCH_STATE_RUNNING",
            "cancelled": "BATCH_STATE_CANCELLED",
            "failed": "BATCH_STATE_FAILED",
        }.get(state, state)
        self._send(200, self._gemini_view(batch, state))

    def _gemini_view(self, batch: dict, state: str) -> dict:
        metadata = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "model": batch["model"],
            "displayName": batch.get("display_name"),
            "state": state,
            "createTime": "2026-11-30T00:00:00Z",
        }
        if state in ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_CANCELLED"):
            responses = []
            for key, _request in self._answered_lines(batch):
                if key in self.state.fail_keys:
                    responses.append(
                        {"error": {"code": 400, "message": "stub: audio input rejected"}, "metadata": {"key": key}}
                    )
                else:
                    responses.append({"response": gemini_response(self.state.answer_fn(key)), "metadata": {"key": key}})
            if batch["file"]:
                name = batch.setdefault("output_name", f"files/{self.state.new_id('out')}")
                self.state.files[name] = "".join(
                    json.dumps({"key": r["metadata"]["key"], **{k: v for k, v in r.items() if k != "metadata"}}) + "\n"
                    for r in responses
                ).encode()
                metadata["output"] = {"responsesFile": name}
            else:
                metadata["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        return {"name": batch["name"], "metadata": metadata}


def completion(body: dict, text: str) -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }


def gemini_response(text: str) -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": 120,
            "candidatesTokenCount": 6,
            "totalTokenCount": 126,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 40}, {"modality": "AUDIO", "tokenCount": 80}],
        },
    }


class BatchStub(LoopbackServer):
    def __init__(self):
        super().__init__(Handler, BatchStubState())

    def paths(self, method: str | None = None) -> list[str]:
        with self.state.lock:
            return [path for m, path in self.state.requests if method in (None, m)]

    def release(self) -> None:
        self.state.downloads_open.set()
        self.state.uploads_open.set()
        self.state.creates_open.set()
