"""Bookkeeping shared by provider batch jobs (core/evaluation/batches.py), batch files (batch_files.py) and
their results (batch_results.py): which planned requests go into a batch and with what context, the response
rows a result becomes, batch prices, and settling a run whose batches are done."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from spokenbench.core.domain.items import Item
from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    AudioInput,
    ModelAdapter,
    ModelReply,
    ModelRequest,
)
from spokenbench.core.evaluation.budget import reply_cost
from spokenbench.core.evaluation.parsing import map_to_original, parse_answer
from spokenbench.core.evaluation.plans import PlannedRequest
from spokenbench.core.evaluation.preparation import (
    EvaluationPreparation,
    Job,
    RequestBuilder,
)
from spokenbench.core.evaluation.presets import Price
from spokenbench.core.evaluation.prompts import presentation_texts, render_prompt
from spokenbench.core.evaluation.runner import create_prepared_run
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store.database import utc_now

BATCH_DISCOUNT = 0.5  # both providers bill batch requests at half the online price


def batch_price(price: Price | None) -> Price | None:
    """The price a batch request is billed at."""
    if price is None:
        return None
    scale = BATCH_DISCOUNT
    return dataclasses.replace(
        price,
        input=price.input * scale,
        output=price.output * scale,
        audio_input=None if price.audio_input is None else price.audio_input * scale,
        audio_per_minute=None if price.audio_per_minute is None else price.audio_per_minute * scale,
    )


# --------------------------------------------------------------------------------------------------
# What goes into a batch


@dataclass
class _Line:
    """One unique request: the planned requests it answers (identical requests share one line)."""

    key: str
    request: ModelRequest  # without audio bytes
    jobs: list[tuple[Job, str]]  # (job, context json)


def _context(rendered, keyer: ModelAdapter, request: ModelRequest) -> str:
    """What parsing and costing a result needs later, without the plan. Written out for the usual types (the
    bytes of json.dumps with ensure_ascii=False and compact separators: a batch file records one per request);
    anything else goes through json."""
    text_est, audio_est = keyer.estimate_tokens(request)
    context = {
        "letters": rendered.presented_letters,
        "texts": rendered.option_texts,
        "neutral_letter": rendered.neutral_letter,
        "neutral_text": rendered.neutral_text,
        "text_est": text_est,
        "audio_est": audio_est,
        "audio_s": sum(a.seconds for a in request.audio),
    }
    texts, neutral_letter, neutral_text, audio_s = (
        context["texts"],
        context["neutral_letter"],
        context["neutral_text"],
        context["audio_s"],
    )
    if not (
        type(context["letters"]) is str
        and type(texts) is dict
        and all(type(k) is str and type(v) is str for k, v in texts.items())
        and (neutral_letter is None or type(neutral_letter) is str)
        and (neutral_text is None or type(neutral_text) is str)
        and type(text_est) is int
        and type(audio_est) is int
        and (type(audio_s) is int or (type(audio_s) is float and math.isfinite(audio_s)))
    ):
        return json.dumps(context, ensure_ascii=False, separators=(",", ":"))
    text = _JSON_TEXT
    shown = ",".join(f"{text(k)}:{text(v)}" for k, v in texts.items())
    return (
        f'{{"letters":{text(context["letters"])},"texts":{{{shown}}},'
        f'"neutral_letter":{"null" if neutral_letter is None else text(neutral_letter)},'
        f'"neutral_text":{"null" if neutral_text is None else text(neutral_text)},'
        f'"text_est":{int.__repr__(text_est)},"audio_est":{int.__repr__(audio_est)},'
        f'"audio_s":{(float if type(audio_s) is float else int).__repr__(audio_s)}}}'
    )


_JSON_TEXT = json.encoder.encode_basestring  # json.dumps's string encoder with ensure_ascii=False


class _Contexts:
    """Each planned request's texts (system, user) and request context (`_context`'s JSON), made from what is the
    same for every request of its presentation when the texts sent hold no question (audio mode): the texts, and
    the context's JSON around its option texts, found once by rendering with markers for the option texts. Per
    request, only the item's encoded option texts and the seconds heard are put in. Other requests (the question
    in the texts, a text or duration JSON would write otherwise) are rendered whole (`RequestBuilder.render`)."""

    MARKER = "\ue000%d\ue001"  # an option text's stand-in (a private-use character JSON leaves as it is)
    KNOWN_TEXTS = 4096  # items whose encoded option texts are kept (a plan's requests of an item are neighbours)

    def __init__(self, prepared: EvaluationPreparation, builder: RequestBuilder, keyer: ModelAdapter):
        settings = prepared.settings
        self.builder, self.keyer = builder, keyer
        self._prompt = (settings.prompt, settings.mode, settings.system_variant)
        self.heard = settings.mode in ("audio", "audio+text-options")  # RequestBuilder.answer's audio
        self._shapes: dict[tuple, tuple | None] = {}
        self._encoded: dict[tuple, tuple[str, ...] | None] = {}

    def of(self, job: Job) -> tuple[str | None, str, str]:
        """(system, user, context) of the job's answer request."""
        return self.of_parts(job.planned, job.item, job.question, job.option_texts, job.audio)

    def shape_of(self, option_order: str, label_sequence: str, spoken_labels: bool, language: str) -> tuple | None:
        """A presentation's (system, user, context pieces, sources) (`_shape`), made once."""
        presentation = (option_order, label_sequence, spoken_labels, language)
        shape = self._shapes.get(presentation, _UNSEEN)
        if shape is _UNSEEN:
            shape = self._shapes[presentation] = self._shape(*presentation)
        return shape

    def encoded(self, option_texts: tuple) -> tuple[str, ...] | None:
        """The option texts as JSON strings (`_encode`), kept for the neighbouring requests of their item."""
        encoded = self._encoded.get(option_texts, _UNSEEN)
        if encoded is _UNSEEN:
            if len(self._encoded) >= self.KNOWN_TEXTS:
                self._encoded.clear()
            encoded = self._encoded[option_texts] = self._encode(option_texts)
        return encoded

    def of_parts(
        self, planned: PlannedRequest, item: Item, question: str, option_texts: tuple, audio: tuple
    ) -> tuple[str | None, str, str]:
        """`of` a job given as its fields (`JobParts`): no Job is made unless its texts are rendered whole."""
        language = item.language
        shape = self.shape_of(planned.option_order, planned.label_sequence, planned.condition.spoken_labels, language)
        if not self.heard:
            audio = ()
        if shape is not None:
            encoded = self.encoded(option_texts)
            seconds = 0
            for clip in audio:
                seconds += clip.seconds
            number = type(seconds)
            if encoded is not None and (number is int or (number is float and math.isfinite(seconds))):
                system, user, pieces, sources = shape
                context = [pieces[0]]
                for source, piece in zip(sources, pieces[1:]):
                    context += (encoded[source], piece)
                context.append(self.audio_tail(system, user, seconds))
                return system, user, "".join(context)
        rendered = self.builder.render(Job(planned, item, question, option_texts, audio))
        request = ModelRequest(rendered.system, rendered.user, audio, language=language)
        return rendered.system, rendered.user, _context(rendered, self.keyer, request)

    def audio_tail(self, system: str | None, user: str, seconds) -> str:
        """The context's end after its '"audio_est":' for this much audio heard."""
        audio_est = self.keyer.estimate_tokens_of(system, user, seconds)[1]
        return f'{int.__repr__(audio_est)},"audio_s":{type(seconds).__repr__(seconds)}}}'

    def _shape(self, option_order: str, label_sequence: str, spoken_labels: bool, language: str) -> tuple | None:
        """(system, user, the context's pieces around its option texts up to its audio estimate, the option text
        each gap takes), or None when the question goes into the texts."""
        prompt, mode, variant = self._prompt
        texts = presentation_texts(prompt, mode, option_order, label_sequence, spoken_labels, language, variant)
        if texts is None:
            return None
        markers = [self.MARKER % n for n in range(len(option_order))]
        rendered = render_prompt(
            prompt, mode, "", markers, option_order, label_sequence, spoken_labels, language, variant
        )
        context = _context(rendered, self.keyer, ModelRequest(rendered.system, rendered.user, ()))
        head, found, _ = context.rpartition(',"audio_est":')
        if (rendered.system, rendered.user) != texts or not found:
            return None
        pieces, sources, start = [], [], 0
        for letter, marker in rendered.option_texts.items():
            token = _JSON_TEXT(marker)
            at = head.find(token, start)
            if at < 0 or not isinstance(letter, str):
                return None
            pieces.append(head[start:at])
            sources.append(markers.index(marker))
            start = at + len(token)
        pieces.append(head[start:] + found)
        return (*texts, tuple(pieces), tuple(sources))

    @staticmethod
    def _encode(option_texts: tuple) -> tuple[str, ...] | None:
        """The option texts as JSON strings; None when one is not a string (its context is made by json)."""
        if not all(type(text) is str for text in option_texts):
            return None
        return tuple(map(_JSON_TEXT, option_texts))


_UNSEEN = object()


def _check_batchable(prepared: EvaluationPreparation, provider: str | None) -> None:
    if prepared.simulated:
        raise SpokenBenchError("a simulated listener answers offline at once: run it without --batch/--batch-file")
    if prepared.settings.mode == "pipeline":
        raise SpokenBenchError(
            "pipeline mode asks twice per request (the transcript, then the answer): it cannot go into one batch; "
            "run it online, or batch a text run of the transcripts"
        )
    convention = prepared.preset.convention
    if provider == "gemini" and convention != "gemini":
        raise SpokenBenchError(f"--batch gemini needs a Gemini model, not {prepared.preset.spec}")
    if provider in ("openai", None) and convention == "gemini":
        option = "--batch openai" if provider else "--batch-file"
        raise SpokenBenchError(
            f"{option} writes OpenAI chat-completions requests; {prepared.preset.spec} is a Gemini model "
            "(use --batch gemini)"
        )


def _plan_lines(
    project: Project, prepared: EvaluationPreparation, run_id: int | None, skip: set[tuple[int, str]]
) -> tuple[list[_Line], list[tuple[Job, str, str]], int]:
    """(lines to send, (job, key, context) answered by the response cache, planned requests already stored)."""
    settings = prepared.settings
    builder = RequestBuilder(settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, settings.params)
    stored = store.done_keys(project.conn, run_id) if run_id is not None else set()
    lines: dict[str, _Line] = {}
    keyed = []
    audio_mode = settings.mode in ("audio", "audio+text-options")
    contexts = _Contexts(prepared, builder, keyer)  # the texts and contexts a batch file's planning makes too
    for job in prepared.jobs:
        if job.key in stored or job.key in skip:
            continue
        system, user, context = contexts.of(job)  # RequestBuilder.answer's texts, made once for it and the context
        request = ModelRequest(system, user, job.audio if audio_mode else (), language=job.item.language)
        key = prepared.answer_key(job) or keyer.request_key(request)  # keyed once, while preparing
        keyed.append((job, request, key, context))
    cache = store.cached_replies(project.conn, sorted({entry[2] for entry in keyed}))
    cached = []
    for job, request, key, context in keyed:
        if key in cache:
            cached.append((job, key, context))
            continue
        line = lines.get(key)
        if line is None:
            line = lines[key] = _Line(key, request, [])
        line.jobs.append((job, context))
    already = sum(1 for job in prepared.jobs if job.key in stored)
    return list(lines.values()), cached, already


def _request_rows(line: _Line) -> list[tuple]:
    return [
        (job.planned.item_id, job.planned.condition_key, job.planned.option_order, line.key, context)
        for job, context in line.jobs
    ]


def _ensure_run(project: Project, prepared: EvaluationPreparation) -> int:
    """The run this batch belongs to: the one being resumed, or a new one (status 'created' until collected)."""
    if prepared.resume_run_id is not None:
        return prepared.resume_run_id
    with project.transaction() as conn:
        run_id = create_prepared_run(conn, prepared)
        store.mark_run(conn, run_id, "created", "batch pending")
    return run_id


def _store_cached(
    project: Project, run_id: int, cached: list[tuple[Job, str, str]], replies: dict | None = None
) -> None:
    """Planned requests the response cache answers: stored now, at no cost, as an online run stores them."""
    if not cached:
        return
    if replies is None:
        replies = store.cached_replies(project.conn, sorted({key for _job, key, _context in cached}))
    records = []
    for job, key, context in cached:
        hit = replies[key]
        reply = ModelReply(hit.raw_text, hit.input_tokens, hit.output_tokens)
        records.append(
            _record(
                run_id, job.planned.item_id, job.planned.condition_key, job.planned.option_order, key, context, reply
            )
        )
        records[-1] = dataclasses.replace(records[-1], cached=True, attempts=0, cost_usd=0.0, latency_ms=hit.latency_ms)
    with project.transaction() as conn:
        store.upsert_responses(conn, records)


def _record(
    run_id: int,
    item_id: int,
    condition_key: str,
    option_order: str,
    key: str,
    context: str | dict,
    reply: ModelReply | None,
    error: str | None = None,
    cost: float | None = None,
    created_at: str | None = None,
) -> store.ResponseRecord:
    """The response row of one planned request, parsed exactly as an online answer (`created_at`: now, unless
    the caller stores many rows at one time)."""
    created_at = created_at or utc_now()
    if reply is None:
        return store.ResponseRecord(
            run_id=run_id,
            item_id=item_id,
            condition_key=condition_key,
            option_order=option_order,
            created_at=created_at,
            error=error or "no result",
        )
    ctx = json.loads(context) if isinstance(context, str) else context
    parsed = parse_answer(reply.text, ctx["letters"], ctx["texts"], ctx["neutral_letter"], ctx["neutral_text"])
    return store.ResponseRecord(
        run_id=run_id,
        item_id=item_id,
        condition_key=condition_key,
        option_order=option_order,
        created_at=created_at,
        raw_text=reply.text,
        parsed_letter=parsed.letter,
        parse_status=parsed.status,
        mapped_option=map_to_original(parsed.letter, option_order),
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        request_sha256=key,
        cached=False,
        attempts=1,
        cost_usd=cost,
        parse_detail=parsed.detail,
    )


class _Estimates:
    """Stands in for an adapter in `reply_cost`: the estimates stored with the request."""

    def __init__(self, text_est: int, audio_est: int):
        self.estimates = (text_est, audio_est)

    def estimate_tokens(self, _request) -> tuple[int, int]:
        return self.estimates


def _cost(price: Price | None, context: str | dict, reply: ModelReply, max_output: int) -> float:
    if price is None:
        return 0.0
    ctx = json.loads(context) if isinstance(context, str) else context
    request = ModelRequest(None, "", (AudioInput(b"", "", "wav", ctx["audio_s"]),) if ctx["audio_s"] else ())
    return reply_cost(price, _Estimates(ctx["text_est"], ctx["audio_est"]), request, reply, max_output)


def _price_json(price: Price | None) -> str | None:
    return None if price is None else json.dumps(dataclasses.asdict(price), sort_keys=True)


def _price_from(text: str | None) -> Price | None:
    return None if not text else Price(**json.loads(text))


def _settle_run(project: Project, run_id: int) -> None:
    """A run with no batch left to collect is finished (its failed requests stay for --resume)."""
    with project.transaction() as conn:
        _settle_run_in(conn, run_id)


def _settle_run_in(conn, run_id: int) -> None:
    if batch_store.run_batches_waiting(conn, run_id):
        return
    row = store.run_row(conn, run_id)
    if row is None:
        return
    answered, failed = batch_store.run_answer_counts(conn, run_id)
    if answered + failed >= (row["total_requests"] or 0):
        store.mark_run(conn, run_id, "finished", None)
