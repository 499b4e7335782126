"""Writing batch requests: the OpenAI batch-format request lines (for provider jobs and for vLLM's offline
`run_batch`), built through the online adapter with the audio inline as base64, and the whole batch file of a
prepared plan (`write_batch_file`), written in bounded memory and recorded as a batch of provider 'file'."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    AudioInput,
    ModelAdapter,
    ModelRequest,
    OpenAICompatibleAdapter,
)
from spokenbench.core.evaluation.batch_records import (
    _check_batchable,
    _context,
    _ensure_run,
    _Line,
    _price_json,
    _store_cached,
    batch_price,
)
from spokenbench.core.evaluation.preparation import (
    EvaluationPreparation,
    RequestBuilder,
    RunSettings,
    prepare_evaluation,
)
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.remote import strip_url_credentials
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store

try:  # SIMD base64 (a dependency): the same bytes as the standard library's at ~20x its speed
    from pybase64 import b64encode as _b64encode
except ImportError:  # an install without it (a platform with no wheel): the standard library's encoder
    _b64encode = base64.b64encode

OPENAI_ENDPOINT = "/v1/chat/completions"


@dataclass
class BatchFileSummary:
    run_id: int
    batch_id: int
    path: str
    lines: int
    requests: int
    cached: int
    bytes: int
    elapsed_s: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# --------------------------------------------------------------------------------------------------
# Writing request lines


# Conventions whose audio is one base64 string in the body: the body is encoded with a short placeholder there
# and the audio's base64 (which JSON never escapes) written in its place — the same bytes as encoding the whole
# body, without scanning megabytes of base64 for characters to escape. The encoded pieces around the audio depend
# only on the texts and the audio formats, so requests with the same texts (in audio mode, most of a plan) share
# them: the body is built (by the adapter, as online) and encoded once per distinct text, not once per line.
_SPLICED_CONVENTIONS = ("openai-input-audio", "mistral-input-audio", "audio-url")
_LINE_HEAD = b'{"custom_id":'
_LINE_MIDDLE = b',"method":"POST","url":' + json.dumps(OPENAI_ENDPOINT).encode() + b',"body":'
_LINE_END = b"}\n"


class _Writer:
    """Builds each line's request through the online adapter, loading each audio file when its line is written
    (a small cache keeps inputs shared by neighbouring lines), so memory stays bounded however many lines."""

    def __init__(self, project: Project, adapter: ModelAdapter):
        self.project, self.adapter = project, adapter
        self._audio = functools.lru_cache(maxsize=64)(project.audio.read_bytes)
        self._base64 = functools.lru_cache(maxsize=64)(self._encoded)
        self._body_pieces = functools.lru_cache(maxsize=256)(self._spliced_body)  # bounded: text mode never repeats
        self.splice = adapter.preset.convention in _SPLICED_CONVENTIONS

    def loaded(self, request: ModelRequest) -> ModelRequest:
        if not request.audio:
            return request
        audio = tuple(dataclasses.replace(a, data=self._audio(a.sha256, a.format)) for a in request.audio)
        return dataclasses.replace(request, audio=audio)

    def _encoded(self, sha256: str, audio_format: str) -> bytes:
        return _b64encode(self._audio(sha256, audio_format))

    def _spliced_body(self, system: str | None, user: str, formats: tuple[str, ...]) -> tuple[bytes, ...]:
        """The encoded body of a request with these texts and audio formats, in the pieces between its audios."""
        markers = [b"\xfb\xff\xbf" + b"%09d" % n for n in range(len(formats))]  # base64: '+/+/' + digits
        placeholder = ModelRequest(system, user, tuple(AudioInput(m, "", f, 0.0) for m, f in zip(markers, formats)))
        text = json.dumps(self.adapter.chat_body(placeholder), separators=(",", ":")).encode("utf-8")
        pieces, start = [], 0
        for marker in markers:
            token = base64.b64encode(marker)
            at = text.index(token, start)
            pieces.append(text[start:at])
            start = at + len(token)
        pieces.append(text[start:])
        return tuple(pieces)

    def openai_line(self, line: _Line) -> list[bytes]:
        """The line's bytes, in pieces (written with writelines: the audio is never copied into one string)."""
        request = line.request
        if not (self.splice and request.audio):
            body = self.adapter.chat_body(self.loaded(request))
            record = {"custom_id": line.key, "method": "POST", "url": OPENAI_ENDPOINT, "body": body}
            return [json.dumps(record, separators=(",", ":")).encode("utf-8"), b"\n"]
        body = self._body_pieces(request.system, request.user, tuple(a.format for a in request.audio))
        pieces = [_LINE_HEAD, json.dumps(line.key).encode(), _LINE_MIDDLE, body[0]]
        for audio, after in zip(request.audio, body[1:]):
            pieces += [self._base64(audio.sha256, audio.format), after]
        pieces.append(_LINE_END)
        return pieces


# --------------------------------------------------------------------------------------------------
# Batch files (vLLM run_batch) and importing their results


WRITE_CHUNK = 8192  # planned requests keyed, checked against the cache and written per step (one commit each:
# their rows go into an index keyed by random hashes, and a commit writes every index page it touched)


def write_batch_file_for_settings(
    project: Project, settings: RunSettings, path: str | os.PathLike, progress: Progress | None = None
) -> tuple[BatchFileSummary, str]:
    """Plan the run from its settings and write its batch file: what the app's export does, as one picklable
    call for a job process. Returns the summary and the planned model's name."""
    prepared = prepare_evaluation(project, settings)
    return write_batch_file(project, prepared, path, progress), prepared.model_name


def write_batch_file(
    project: Project, prepared: EvaluationPreparation, path: str | os.PathLike, progress: Progress | None = None
) -> BatchFileSummary:
    """Write the OpenAI batch-format request file for the prepared plan (what the response cache already
    answers is stored, not written) and record it as a batch of provider 'file' for `import_results`. The plan
    is keyed, checked against the cache and written a chunk at a time, each line built and written on its own
    and its requests recorded as it goes (bounded memory); the file is written under a temporary name and
    renamed when complete (a failure removes it and its record)."""
    _check_batchable(prepared, None)
    progress = progress or no_progress()
    started = time.monotonic()
    target = Path(path)
    settings = prepared.settings
    run_id = _ensure_run(project, prepared)
    builder = RequestBuilder(settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, settings.params)
    audio_mode = settings.mode in ("audio", "audio+text-options")
    stored = store.done_keys(project.conn, run_id)
    jobs = [job for job in prepared.jobs if job.key not in stored]
    writer = _Writer(project, OpenAICompatibleAdapter(prepared.preset, settings.params, None))
    with project.transaction() as conn:
        batch_id = batch_store.insert_batch(
            conn,
            run_id=run_id,
            provider="file",
            model=prepared.model_name,
            api_model=prepared.preset.model,
            endpoint=strip_url_credentials(prepared.preset.base_url),
            input_file=str(target.resolve()),
            state="writing",
            requests=0,
            price_json=_price_json(batch_price(prepared.price)),
            max_output_tokens=settings.params.max_output_tokens,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    seen: dict[str, bool] = {}  # request key → answered by the cache (else: its line is written)
    lines = cached = written = 0
    try:
        with os.fdopen(handle, "wb", buffering=1 << 20) as out:
            for start in range(0, len(jobs), WRITE_CHUNK):
                progress.check_cancelled()
                keyed = []
                for job in jobs[start : start + WRITE_CHUNK]:
                    rendered = builder.render(job)  # RequestBuilder.answer's request, rendered once for both
                    request = ModelRequest(
                        rendered.system, rendered.user, job.audio if audio_mode else (), language=job.item.language
                    )
                    keyed.append((job, request, prepared.answer_key(job) or keyer.request_key(request), rendered))
                hits = store.cached_replies(project.conn, sorted({entry[2] for entry in keyed}))
                rows, answered = [], []
                for job, request, key, rendered in keyed:
                    context = _context(rendered, keyer, request)
                    from_cache = seen.get(key)
                    if from_cache is None:
                        from_cache = seen[key] = key in hits
                        if not from_cache:
                            pieces = writer.openai_line(_Line(key, request, []))
                            out.writelines(pieces)
                            written += sum(map(len, pieces))
                            lines += 1
                    if from_cache:
                        answered.append((job, key, context))
                    else:
                        planned = job.planned
                        rows.append((planned.item_id, planned.condition_key, planned.option_order, key, context))
                cached += len(answered)
                with project.transaction() as conn:
                    batch_store.insert_requests(conn, batch_id, rows)
                _store_cached(project, run_id, answered, hits)
                progress.report(min(start + WRITE_CHUNK, len(jobs)), len(jobs), "requests written")
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        with project.transaction() as conn:
            batch_store.delete_batch(conn, batch_id)
        raise
    with project.transaction() as conn:
        batch_store.update_batch(conn, batch_id, state="exported", requests=lines, bytes=written)
    return BatchFileSummary(
        run_id=run_id,
        batch_id=batch_id,
        path=str(target),
        lines=lines,
        requests=len(jobs) - cached,
        cached=cached,
        bytes=written,
        elapsed_s=time.monotonic() - started,
    )
