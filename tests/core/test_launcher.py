"""The Evaluate page's Qt-free logic (core/evaluation/launcher.py): the form's choices, the form turned into
RunSettings, the plan as text, resuming a stored run with the settings it was made with, runs with their
failures by kind, and the connection test of a custom OpenAI-compatible endpoint."""

import datetime as _dt

import pytest
from stub_server import Reply, StubServer

from spokenbench.core.domain.items import Item, Option
from spokenbench.core.evaluation import launcher
from spokenbench.core.evaluation.launcher import CUSTOM, LaunchForm, settings_from_form
from spokenbench.core.evaluation.preparation import prepare_evaluation
from spokenbench.core.evaluation.runner import run_evaluation
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store.items import insert_items


def add_items(project, count=4, language="en"):
    items = [
        Item(
            source="t",
            source_id=f"q{n}",
            language=language,
            question=f"What is {n} plus {n}?",
            options=tuple(Option(letter, str(2 * n + k)) for k, letter in enumerate("ABCD")),
            answer="A",
        )
        for n in range(count)
    ]
    with project.transaction() as conn:
        return insert_items(conn, items)


def test_presets_carry_their_retirement_and_simulated_listeners_are_labelled():
    choices = {choice.spec: choice for choice in launcher.model_choices(_dt.date(2026, 11, 30))}
    retired = choices["openai:gpt-4o-audio-preview"]
    assert not retired.available and retired.retired == "2026-05-07" and "retired on 2026-05-07" in retired.label
    assert retired.successor == "openai:gpt-audio-mini"
    retiring = choices["openai:gpt-audio-mini"]
    assert retiring.available and "retires on 2027-01-20" in retiring.label
    simulated = [choice for choice in choices.values() if choice.simulated]
    assert {c.spec for c in simulated} >= {"simulated:steady", "simulated:order-sensitive"}
    assert all("simulated" in c.label for c in simulated)
    # before the date, the same preset is still offered
    earlier = {c.spec: c for c in launcher.model_choices(_dt.date(2026, 1, 1))}
    assert earlier["openai:gpt-4o-audio-preview"].available


def test_prompts_and_modes_come_from_core():
    assert [p.name for p in launcher.prompt_choices()][:4] == ["standard", "cot", "neutral", "open"]
    assert all(p.description for p in launcher.prompt_choices())
    assert [mode for mode, _ in launcher.mode_choices()] == ["audio", "pipeline", "text", "audio+text-options"]


def test_form_becomes_settings_with_the_grid_and_budget():
    settings = settings_from_form(
        LaunchForm(
            model="openai:gpt-audio-mini",
            mode="audio",
            prompt="cot",
            languages="en, zh",
            accents="british indian",
            genders="female",
            orders="original,DCBA",
            permutations="cyclic",
            speeds="0.8, 1.2",
            snr="clean 10",
            limit="5",
            seed="3",
            budget="$0.5",
            identifiers="both",
        )
    )
    plan = settings.plan
    assert settings.model == "openai:gpt-audio-mini" and settings.prompt == "cot" and settings.budget_usd == 0.5
    assert plan.filters == {
        "language": ("en", "zh"),
        "accent": ("british", "indian"),
        "gender": ("female",),
        "speed": ("0.8", "1.2"),
        "snr_db": ("clean", "10"),
    }
    assert plan.orders == ("original", "DCBA") and plan.permutations == "cyclic" and plan.identifiers == (True, False)
    assert plan.limit == 5 and plan.seed == 3
    assert "budget=$0.5" in launcher.describe_settings(settings)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"languages": "english"}, "languages"),
        ({"speeds": "fast"}, "speeds"),
        ({"volumes": "0"}, "volumes"),
        ({"limit": "0"}, "limit"),
        ({"budget": "lots"}, "budget"),
        ({"genders": "other"}, "genders"),
        ({"model": CUSTOM, "custom_base_url": ""}, "base URL"),
        ({"model": CUSTOM, "custom_base_url": "http://h:8000/v1", "custom_model": ""}, "model name"),
        (
            {"model": CUSTOM, "custom_base_url": "http://h/v1", "custom_model": "m", "custom_key_variable": "MY_KEY"},
            "VLLM_API_KEY",
        ),
    ],
)
def test_a_wrong_field_is_named(changes, message):
    with pytest.raises(SpokenBenchError, match=message):
        settings_from_form(LaunchForm(**{"model": "simulated:steady", **changes}))


def test_custom_endpoint_settings():
    settings = settings_from_form(
        LaunchForm(
            model=CUSTOM,
            custom_provider="vllm",
            custom_base_url="http://127.0.0.1:8000/v1",
            custom_model="Qwen/Qwen2-Audio-7B-Instruct",
            custom_key_variable="VLLM_API_KEY",
        )
    )
    assert settings.model == "vllm:Qwen/Qwen2-Audio-7B-Instruct" and settings.base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.slow
def test_plan_is_shown_and_a_stored_run_resumes_as_itself(project):
    add_items(project, 4)
    settings = settings_from_form(LaunchForm(model="simulated:order-sensitive", accents="british", limit="3"))
    prepared = prepare_evaluation(project, settings)
    text = "\n".join(launcher.plan_lines(prepared))
    assert f"plan: {prepared.request_count} request(s) over 3 item(s)" in text
    assert "simulated" in text and "$0 (simulated)" in text and "run: a new run" in text
    summary = run_evaluation(project, prepared)
    assert summary.status == "finished"
    [row] = launcher.run_rows(project.conn)
    assert row.run_id == summary.run_id and row.simulated and row.mode_label == "simulated (audio)"
    assert row.responses == row.total == prepared.request_count and not row.resumable
    again = prepare_evaluation(project, launcher.settings_for_run(project.conn, summary.run_id))
    assert again.resume_run_id == summary.run_id and again.already_stored == prepared.request_count
    assert again.requests_to_send == 0
    assert "resumes run" in "\n".join(launcher.plan_lines(again))
    assert launcher.response_count(project.conn, summary.run_id) == prepared.request_count


def test_a_custom_endpoint_run_resumes_with_its_base_url(project):
    add_items(project, 2)
    settings = settings_from_form(
        LaunchForm(model=CUSTOM, mode="text", custom_base_url="http://127.0.0.1:9/v1", custom_model="m")
    )
    prepared = prepare_evaluation(project, settings)
    from spokenbench.core.evaluation import store

    with project.transaction() as conn:
        run_id = store.create_run(
            conn, "r", prepared.model_name, "vllm", "text", "standard", prepared.prompt_text, prepared.identity, 2, None
        )
    resumed = launcher.settings_for_run(project.conn, run_id)
    assert resumed.base_url == "http://127.0.0.1:9/v1" and resumed.model == "vllm:m" and resumed.mode == "text"
    assert prepare_evaluation(project, resumed).resume_run_id == run_id


def test_errors_are_grouped_by_kind():
    assert launcher.error_kind("HTTP 500: server error (after 6 attempt(s))") == "HTTP 500"
    assert launcher.error_kind("connection failed (APIConnectionError: x) (after 2 attempt(s))") == "connection failed"
    assert launcher.error_kind("timed out after 120 s") == "timed out"
    text = launcher.progress_text(12, 48, "35.2/s ETA 0:01 2 err $0.0123", {"HTTP 500": 2}, 0.0123)
    assert text == "12/48 · 35.2/s · ETA 0:01 · errors: 2 HTTP 500 · spent $0.0123"


def test_a_run_paused_on_a_full_disk_says_so_on_its_line():
    paused = "paused: the disk is full (/p): 4 result(s) held, stored once there is room; free some space"
    assert launcher.progress_text(12, 48, paused, None, 0.01) == f"12/48 · spent $0.0100 · {paused}"


def test_connection_to_a_stub_server_succeeds_and_a_401_is_clear():
    with StubServer() as server:
        server.script("GET", r"/ok/v1/models$", Reply(200, {"object": "list", "data": [{"id": "qwen-audio"}]}))
        server.script("GET", r"/locked/v1/models$", Reply(401, {"error": {"message": "bad key"}}))
        found = launcher.check_connection(server.url + "/ok/v1", "qwen-audio", key="k-123")
        assert "connected: 1 model(s) served (qwen-audio)" in found and "qwen-audio is served" in found
        assert server.requests_to("/ok/")[0].headers["authorization"] == "Bearer k-123"
        assert "NOT among" in launcher.check_connection(server.url + "/ok/v1", "other")
        with pytest.raises(SpokenBenchError, match=r"key was rejected \(HTTP 401\)"):
            launcher.check_connection(server.url + "/locked/v1", key="wrong")
        with pytest.raises(SpokenBenchError, match="needs a key and none was set"):
            launcher.check_connection(server.url + "/locked/v1")
        with pytest.raises(SpokenBenchError, match="HTTP 404"):
            launcher.check_connection(server.url + "/nowhere/v1")
    with pytest.raises(SpokenBenchError, match="http"):
        launcher.check_connection("localhost:8000")


def test_condition_levels_of_a_project_without_audio(project):
    add_items(project, 2, "zh")
    levels = launcher.condition_levels(project.conn)
    assert levels["language"] == ["zh"] and levels["accent"] == ["beijing", "northeastern"]
    assert levels["gender"] == ["female", "male"]


def test_a_cancel_seen_right_before_a_request_is_a_cancel_never_a_finished_run(project, monkeypatch):
    """A cancel that arrives after a worker's own check and before its request is sent (seen by `remote`'s
    check, not by the loop's watcher) used to let the job loop return as if it had finished: the run was
    recorded finished with answers missing and the CLI exited 0. It is a cancel: Cancelled, the run
    cancelled and resumable."""
    import asyncio

    from spokenbench.core.evaluation.budget import Budget
    from spokenbench.core.evaluation.simulated import SimulatedAdapter
    from spokenbench.core.foundation.errors import Cancelled
    from spokenbench.core.foundation.progress import Progress

    add_items(project, 10)
    progress = Progress()
    calls = []
    reserve, generate = Budget.reserve, SimulatedAdapter.generate

    async def reserving(self, amount):
        calls.append(amount)
        if len(calls) == 20:
            progress.cancel()
        return await reserve(self, amount)

    async def paced(self, request):
        await asyncio.sleep(0.002)
        return await generate(self, request)

    monkeypatch.setattr(Budget, "reserve", reserving)
    monkeypatch.setattr(SimulatedAdapter, "generate", paced)
    prepared = prepare_evaluation(project, settings_from_form(LaunchForm(model="simulated:steady")))
    with pytest.raises(Cancelled):
        run_evaluation(project, prepared, progress)
    [row] = launcher.run_rows(project.conn)
    assert row.status == "cancelled" and row.resumable and row.shown_status == "cancelled"


def assemble(project, item_ids, orders=("original",), speeds=(1.0,), volumes=(1.0,), snrs=(None,)):
    """Assembled-input rows as `spokenbench assemble` stores them (the audio itself is not needed to plan)."""
    from spokenbench.core.audio.store import replace_assembled_input
    from spokenbench.core.domain.conditions import Condition, order_strings

    with project.transaction() as conn:
        for item_id in item_ids:
            for order in orders:
                for speed in speeds:
                    for volume in volumes:
                        for snr in snrs:
                            condition = Condition(
                                "en", "american", "Zephyr", "female", order, speed=speed, volume=volume, snr_db=snr
                            )
                            option_order, label_sequence = order_strings(order, 4)
                            sha = f"{item_id}{condition.key()}".encode().hex()[:64].ljust(64, "0")
                            replace_assembled_input(
                                conn, item_id, condition.key(), option_order, label_sequence, sha, sha, "wav",
                                1.0, 16000, 0, "text", "now",
                            )  # fmt: skip


def prepare_form(project, **fields):
    settings = settings_from_form(LaunchForm(**{"model": "openai:gpt-audio-mini", "mode": "audio", **fields}))
    launcher.check_selection(project.conn, settings, str(project.path))
    return prepare_evaluation(project, settings)


def test_unassembled_perturbations_are_named_with_the_assemble_command(project):
    ids = add_items(project, 3)
    assemble(project, ids, orders=("original", "reversed"), speeds=(1.0, 1.25))
    levels = launcher.condition_levels(project.conn)
    assert levels["speed"] == ["1", "1.25"] and levels["volume"] == ["1"] and levels["snr_db"] == ["clean"]
    assert prepare_form(project, speeds="1.25").request_count == 6  # assembled: planned
    with pytest.raises(SpokenBenchError) as raised:
        prepare_form(project, speeds="0.8, 1.25")
    message = str(raised.value)
    assert "speed 0.8 is not assembled in this project (assembled: 1, 1.25)" in message
    assert f"run `spokenbench assemble {project.path} --speed 0.8,1.25` first" in message
    with pytest.raises(SpokenBenchError) as raised:
        prepare_form(project, volumes="1.5", snr="10", orders="reversed")
    message = str(raised.value)
    assert "volume 1.5 is not assembled in this project (assembled: 1)" in message
    assert "noise (SNR dB) 10 is not assembled in this project (assembled: clean)" in message
    assert "--orders reversed --volume 1.5 --snr 10` first" in message
    assert "the plan is empty" not in message


def test_unassembled_orders_and_permutation_strategies_are_named(project):
    ids = add_items(project, 2)
    assemble(project, ids, orders=("original", "reversed"))
    assert prepare_form(project, orders="DCBA").request_count == 2  # the same presentation as 'reversed'
    with pytest.raises(SpokenBenchError, match=r"order token-backward is not assembled in this project \(assembled "
                       r"orders: original, reversed\): run `spokenbench assemble .* --orders token-backward` first"):  # fmt: skip
        prepare_form(project, orders="token-backward")
    with pytest.raises(SpokenBenchError) as raised:
        prepare_form(project, permutations="cyclic")
    message = str(raised.value)
    assert "the cyclic permutations BCDA, CDAB, DABC are not assembled" in message  # ABCD is 'original'
    assert "--orders BCDA,CDAB,DABC` first" in message


def test_a_simulated_or_text_run_says_perturbations_need_assembled_audio(project):
    add_items(project, 2)
    levels = launcher.condition_levels(project.conn)
    assert (levels["speed"], levels["volume"], levels["snr_db"]) == (["1"], ["1"], ["clean"])  # the placeholders
    settings = settings_from_form(LaunchForm(model="simulated:steady", speeds="0.8"))
    problem = launcher.unassembled_selection(project.conn, settings)
    assert problem.startswith("speed 0.8 is not available to the simulated listener") and "(only 1)" in problem
    assert "spokenbench assemble DIR --speed 0.8" in problem
    unperturbed = settings_from_form(LaunchForm(model="simulated:steady", mode="text", speeds="1", snr="clean"))
    assert launcher.unassembled_selection(project.conn, unperturbed) is None


@pytest.mark.slow  # imports the assembly module (numpy, soundfile) on first use
def test_only_an_audio_run_of_a_real_model_asks_for_assembly(project):
    add_items(project, 2)
    for form in (
        LaunchForm(model="simulated:steady", mode="audio", volumes="1"),
        LaunchForm(model="openai:gpt-audio-mini", mode="text"),
    ):  # these hear no assembled audio
        assert launcher.run_assembly_needed(project.conn, settings_from_form(form)) is None
    audio = settings_from_form(LaunchForm(model="openai:gpt-audio-mini", mode="audio", volumes="1.5"))
    assert launcher.run_assembly_needed(project.conn, audio) is None  # no clips: nothing to build (the plan says so)
    request = launcher.AssemblyRequest(orders=("reversed",), volumes=("1.5",), languages=("en",))
    assert request.command("P") == "spokenbench assemble P --orders reversed --volume 1.5 --languages en"
    assert request.describe() == "orders reversed · volume 1.5"
    assert launcher.AssemblyRequest().describe() == "orders original"  # the command's default
