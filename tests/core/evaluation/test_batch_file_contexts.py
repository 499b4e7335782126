"""A batch file's per-request texts and contexts, made from what a presentation shares (the texts and the context's
JSON around the option texts, found once), are what rendering each request whole and `_context` give: for every
prompt, mode and system-prompt variant, with option texts JSON must escape, and for any seconds heard (none, whole
numbers, several clips); and a presentation whose texts hold the question is rendered per request."""

import dataclasses

import pytest

from spokenbench.core.evaluation import batch_files
from spokenbench.core.evaluation.adapters import AudioInput, ModelAdapter, ModelRequest
from spokenbench.core.evaluation.batch_records import _context
from spokenbench.core.evaluation.preparation import RequestBuilder, RunSettings, prepare_evaluation
from spokenbench.core.evaluation.prompts import PROMPTS, SYSTEM_PROMPT_VARIANTS


def rendered_whole(prepared, job) -> tuple:
    builder = RequestBuilder(prepared.settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, prepared.settings.params)
    rendered = builder.render(job)
    audio = job.audio if prepared.settings.mode in ("audio", "audio+text-options") else ()
    request = ModelRequest(rendered.system, rendered.user, audio, language=job.item.language)
    return rendered.system, rendered.user, _context(rendered, keyer, request)


def variants(job) -> list:
    """The job, and the job with option texts JSON escapes and with other audio: none, whole seconds, two clips."""
    texts = ('say "B" \\ ü 中文\n', "\u2028 control \x01", "\ue000 private", "plain")[: len(job.option_texts)]
    clip = job.audio[0] if job.audio else AudioInput(b"", "ab" * 32, "wav", 1.0)
    audios = [(), (dataclasses.replace(clip, seconds=2),), (clip, dataclasses.replace(clip, seconds=0.1))]
    return [job, dataclasses.replace(job, option_texts=texts)] + [dataclasses.replace(job, audio=a) for a in audios]


@pytest.mark.parametrize("mode", ["audio", "text"])
@pytest.mark.parametrize("variant", SYSTEM_PROMPT_VARIANTS)
def test_shared_parts_give_what_rendering_each_request_gives(audio_project, mode, variant):
    shapes = 0
    for prompt in PROMPTS:
        settings = RunSettings(
            model="vllm:m", base_url="http://127.0.0.1:9/v1", mode=mode, prompt=prompt, system_variant=variant
        )
        prepared = prepare_evaluation(audio_project, settings)
        keyer = ModelAdapter(prepared.preset, prepared.settings.params)
        contexts = batch_files._Contexts(prepared, RequestBuilder(prepared.settings, prepared.preset, None), keyer)
        for job in prepared.jobs:
            for each in variants(job):
                assert contexts.of(each) == rendered_whole(prepared, each), (prompt, each)
        shapes += sum(shape is not None for shape in contexts._shapes.values())
    if mode == "audio":  # the question is heard: every presentation's parts are shared
        assert shapes == 2 * len(PROMPTS)
    else:  # the question is in the texts: rendered per request
        assert shapes == 0


def test_a_presentation_shares_its_parts_and_renders_nothing_per_request(audio_project, monkeypatch):
    prepared = prepare_evaluation(audio_project, RunSettings(model="vllm:m", base_url="http://127.0.0.1:9/v1"))
    keyer = ModelAdapter(prepared.preset, prepared.settings.params)
    contexts = batch_files._Contexts(prepared, RequestBuilder(prepared.settings, prepared.preset, None), keyer)
    expected = [rendered_whole(prepared, job) for job in prepared.jobs]

    def refuse(*args):
        raise AssertionError("rendered per request")

    monkeypatch.setattr(RequestBuilder, "render", refuse)
    assert [contexts.of(job) for job in prepared.jobs] == expected
