"""Prompts and request keys are pinned: the digests below were computed with the code before issue 28 (every
prompt rendered and every key serialized whole), so the per-presentation caches must give the same bytes."""

import datetime
import hashlib
import itertools
import json

import pytest

from spokenbench.core.evaluation import adapters
from spokenbench.core.evaluation.adapters import AudioInput, GenerationParams, ModelAdapter, ModelRequest
from spokenbench.core.evaluation.presets import resolve_model
from spokenbench.core.evaluation.prompts import MODES, PROMPTS, SYSTEM_PROMPT_VARIANTS, render_prompt, render_texts

PRESENTATIONS = [("ABCD", "ABCD"), ("DCBA", "DCBA"), ("ABCD", "DCBA"), ("BCDA", "ABCD"), ("BA", "AB"), ("CAB", "CAB")]
LANGUAGES = ("en", "zh-CN", "ko", "fr")


def rendered_prompts() -> list:
    out = []
    for name, mode, variant, labels, (order, sequence), language, transcript in itertools.product(
        PROMPTS, MODES, SYSTEM_PROMPT_VARIANTS, (True, False), PRESENTATIONS, LANGUAGES, (None, "what was heard")
    ):
        texts = [f"option {letter} {{not a placeholder}} ü" for letter in "ABCD"[: len(order)]]
        question = f"Question in {language} with {{braces}}: which one?"
        prompt = render_prompt(name, mode, question, texts, order, sequence, labels, language, variant, transcript)
        out.append(
            [prompt.system, prompt.user, prompt.presented_letters, prompt.option_texts, prompt.neutral_letter,
             prompt.neutral_text]
        )  # fmt: skip
    return out


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode()).hexdigest()


@pytest.mark.slow
def test_rendered_prompts_are_unchanged():
    prompts = rendered_prompts()
    assert len(prompts) == len(PROMPTS) * len(MODES) * 3 * 2 * len(PRESENTATIONS) * len(LANGUAGES) * 2
    assert digest(prompts) == PINNED_PROMPTS


def test_request_keys_are_unchanged():
    keys = []
    audio = (AudioInput(b"", "ab" * 32, "wav", 1.5), AudioInput(b"", "cd" * 32, "flac", 0.25))
    for (spec, base_url), params in itertools.product(
        (("vllm:bench-model", "http://127.0.0.1:8000/v1"), ("openai:gpt-4o-audio-preview", None)),
        (GenerationParams(), GenerationParams(temperature=0.7, max_output_tokens=64, thinking="low")),
    ):
        adapter = ModelAdapter(resolve_model(spec, base_url, today=datetime.date(2026, 1, 1)), params)
        for n, (system, language, sent) in enumerate(
            itertools.product((None, "Système ü"), ("en", "zh-CN"), ((), audio[:1], audio))
        ):
            request = ModelRequest(system, f"user text {n} “quoted”", sent, language=language)
            keys.append(adapter.request_key(request))
            keys.append(adapter.request_key(request))  # the second time from the adapter's kept identity
    assert digest(keys) == PINNED_KEYS


def test_texts_made_once_per_presentation_are_the_rendered_ones():
    """render_texts (a presentation's texts made once where no question goes into them) = render_prompt's."""
    for name, mode, variant, labels, (order, sequence) in itertools.product(
        PROMPTS, MODES, SYSTEM_PROMPT_VARIANTS, (True, False), PRESENTATIONS
    ):
        for question, transcript in (("Which one {x}?", None), ("Another question?", "what was heard")):
            texts = [f"option {letter}" for letter in "ABCD"[: len(order)]]
            arguments = (name, mode, question, texts, order, sequence, labels, "en", variant, transcript)
            prompt = render_prompt(*arguments)
            assert render_texts(*arguments) == (prompt.system, prompt.user), arguments


def test_request_keys_are_unchanged_when_the_kept_texts_are_dropped(monkeypatch):
    """The encoded texts a key splices are kept in a bounded table: emptied at every request, the same keys."""
    monkeypatch.setattr(adapters, "_TEXTS_JSON_MAX", 0)
    test_request_keys_are_unchanged()


PINNED_PROMPTS = "a2f983ea1bfe1b39f9f18d2cad5927194835478eafa75614fd11876f818be50c"
PINNED_KEYS = "6f80b09f47a0645d285ec35af293049d5a7c7cff399da31751f1fa51b955fabd"


def test_a_batch_file_is_the_same_whether_preparation_keyed_its_requests_or_not(audio_project, tmp_path):
    from spokenbench.core.evaluation.batch_files import write_batch_file
    from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation

    settings = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio")
    reused = prepare_evaluation(audio_project, settings)
    assert len(reused.answer_keys) == len(reused.jobs) > 0
    keyer = ModelAdapter(reused.preset, reused.settings.params)
    for job in reused.jobs:
        rendered = render_prompt(
            "standard", "audio", job.question, list(job.option_texts), job.planned.option_order,
            job.planned.label_sequence, job.planned.condition.spoken_labels, job.item.language,
        )  # fmt: skip
        request = ModelRequest(rendered.system, rendered.user, job.audio, language=job.item.language)
        assert reused.answer_key(job) == keyer.request_key(request)
    write_batch_file(audio_project, reused, tmp_path / "reused.jsonl")
    afresh = prepare_evaluation(audio_project, settings)
    afresh.answer_keys.clear()  # every request keyed again while writing, as before issue 28
    write_batch_file(audio_project, afresh, tmp_path / "afresh.jsonl")
    assert (tmp_path / "reused.jsonl").read_bytes() == (tmp_path / "afresh.jsonl").read_bytes()


def test_a_job_that_is_not_the_one_keyed_is_keyed_afresh(audio_project):
    from dataclasses import replace

    from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation

    prepared = prepare_evaluation(audio_project, RunSettings(model="vllm:m", base_url="http://127.0.0.1:9/v1"))
    job = prepared.jobs[0]
    assert prepared.answer_key(job) is not None
    assert prepared.answer_key(replace(job)) is None  # an equal copy is another object: no borrowed key


def test_the_plan_summary_counts_as_reading_every_request(audio_project):
    from collections import Counter, defaultdict

    from spokenbench.core.evaluation.plans import PlanOptions, build_plan

    plan = build_plan(audio_project.conn, PlanOptions(mode="audio", orders=("original", "reversed")))
    counts = defaultdict(Counter)
    for request in plan.requests:  # the summary as it was before issue 28
        for factor, level in request.condition.factors().items():
            counts[factor][str(level)] += 1
        counts["option_order"][request.option_order] += 1
    expected = {f: dict(sorted(c.items())) for f, c in counts.items() if len(c) > 1 or f in ("language", "order")}
    summary = plan.summary()
    assert summary["by_factor"] == expected and list(summary["by_factor"]) == list(expected)
    assert summary["requests"] == len(plan.requests) > 0


def test_a_written_out_fingerprint_is_jsons_own_encoding():
    import random

    from spokenbench.core.evaluation.adapters import _fingerprint_json

    rng = random.Random(28)
    alphabet = 'aü"\\\n\t\x00\x1f\u2028\U0001f600 {}[]:,'
    for _ in range(300):
        words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(4)]
        audio = tuple(AudioInput(b"", words[i % 4], rng.choice(("wav", "flac")), 1.0) for i in range(rng.randint(0, 3)))
        request = ModelRequest(
            rng.choice((None, words[0])), words[1], audio, kind=rng.choice(("chat", "transcribe")),
            language=rng.choice((None, words[2], "en")),
        )  # fmt: skip
        assert _fingerprint_json(request) == json.dumps(request.fingerprint(), sort_keys=True, ensure_ascii=False)
    odd = ModelRequest("s", "u", (), language=7)  # not a string: encoded by json itself, the same way
    assert _fingerprint_json(odd) == json.dumps(odd.fingerprint(), sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "text", "orders": ("original", "reversed"), "identifiers": (True, False)},
        {"mode": "audio", "simulated": True, "orders": ("original", "DCBA")},
        {"mode": "audio", "simulated": True, "filters": {"gender": ("female",)}},
    ],
)
def test_text_and_simulated_plans_make_each_condition_once(project, options):
    """Every request of a condition shares its one Condition and key; the keys are the conditions' own."""
    from eval_support import add_items

    from spokenbench.core.domain.conditions import Condition
    from spokenbench.core.evaluation.plans import PlanOptions, build_plan

    add_items(project, 5)
    plan = build_plan(project.conn, PlanOptions(**options))
    keys = {request.condition_key for request in plan.requests}
    assert len(plan.requests) > len(keys) > 1
    assert len({id(request.condition) for request in plan.requests}) == len(keys)
    for request in plan.requests:
        assert request.condition == Condition.from_key(request.condition_key)
        assert request.condition.key() == request.condition_key
    if "filters" in options:
        assert {request.condition.gender for request in plan.requests} == {"female"}
