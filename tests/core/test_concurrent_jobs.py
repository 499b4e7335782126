"""Two identical jobs on one project share the work: every unit is done — and paid for — once, whichever
process does it, and neither fails on the other's results (issue: two `synthesize` used to synthesize
everything twice and then crash on the clips' unique index; two `rewrite` sent every request twice)."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from qc_support import CHAT_ROUTE, SECRET, StubServer, chat_reply, rewrite_json
from support import physics_items, write_jsonl

from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.jobs.registry import list_jobs

pytestmark = pytest.mark.slow  # two real processes on one project

AUDIO_TESTS = Path(__file__).parent / "audio"
TESTS = Path(__file__).parents[1]

SLOW_SYNTHESIS = textwrap.dedent(
    """
    import asyncio, sys
    sys.path[:0] = [sys.argv[2], sys.argv[3]]
    from audio_support import ToneBackend
    from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
    from spokenbench.core.store import Project

    class CountingBackend(ToneBackend):
        async def synthesize(self, request):
            with open(sys.argv[4], "a") as calls:  # every paid request, from either process
                calls.write(request.text.replace("\\n", " ") + "\\n")
            await asyncio.sleep(0.02)
            return await super().synthesize(request)

    with Project.open(sys.argv[1]) as project:
        backend = CountingBackend()
        report = asyncio.run(run_synthesis(project, plan_synthesis(project.conn, backend)))
        print(report.synthesized, report.reused, report.failed)
    """
)


def test_two_identical_synthesis_jobs_synthesize_each_recipe_once(project, tmp_path):
    from audio_support import MINI_ITEMS, ToneBackend

    from spokenbench.core.audio.synthesis import plan_synthesis

    mini_project = project
    import_files(project, [write_jsonl(tmp_path / "mini.jsonl", MINI_ITEMS)], "mcq", ImportOptions(source="mini"))
    plan = plan_synthesis(mini_project.conn, ToneBackend())
    recipes = len({job.cache_key for job in plan.jobs})
    calls = tmp_path / "calls.txt"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SLOW_SYNTHESIS, str(mini_project.path), str(AUDIO_TESTS), str(TESTS), str(calls)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [p.returncode for p in processes] == [0, 0], [err for _, err in outputs]
    synthesized = [int(out.split()[0]) for out, _ in outputs]
    assert len(calls.read_text().splitlines()) == recipes, "each recipe was synthesized by exactly one process"
    assert sum(synthesized) == recipes and min(synthesized) > 0, "both processes shared the work"
    stored = mini_project.conn.execute("SELECT count(*) FROM clips WHERE status = 'ok'").fetchone()[0]
    assert stored == len(plan.jobs)
    assert mini_project.conn.execute("SELECT count(*) FROM work_claims").fetchone()[0] == 0, "claims released"
    assert [job.status for job in list_jobs(mini_project.conn)] == ["finished", "finished"]


ITEMS = physics_items(12, "c")
GOOD = rewrite_json("What is this speed in kilometers per hour?", ["one", "two", "three", "four"])


def test_two_identical_rewrite_runs_send_each_request_once(project, tmp_path):
    from dataclasses import replace

    import_files(project, [write_jsonl(tmp_path / "c.jsonl", ITEMS)], "mcq", ImportOptions(source="twice"))
    script = Path(sys.executable).with_name("spokenbench")
    env = dict(os.environ, NVIDIA_API_KEY=SECRET)
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, replace(chat_reply(GOOD), delay_s=0.05))
        command = [str(script), "rewrite", str(project.path), "--base-url", f"{server.url}/v1", "--concurrency", "2"]
        processes = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in "ab"]
        for process in processes:
            process.wait(timeout=120)
            time.sleep(0)
        errors = [process.stderr.read().decode() for process in processes]
        assert [process.returncode for process in processes] == [0, 0], errors
        requests = len(server.requests_to(CHAT_ROUTE))
    assert requests == len(ITEMS), f"{requests} requests for {len(ITEMS)} items"
    assert project.conn.execute("SELECT count(*) FROM rewrite_outcomes WHERE status = 'done'").fetchone()[0] == len(
        ITEMS
    )


def test_a_rewrite_stopped_while_another_took_its_items_over_does_not_send_them_again(project, tmp_path):
    """Ctrl+Z on a rewrite holding claims on 16 items, for longer than its heartbeat stays fresh; a second rewrite
    takes them over and rewrites them; once continued, the first sends none of them again (only the request it
    had in flight when it was stopped can be paid twice). Before: 64 requests for 60 items."""
    import signal
    from dataclasses import replace

    from spokenbench.core.jobs.registry import STALE_AFTER_S

    more = [dict(item, id=f"{item['id']}b", question=f"And {item['question']}") for item in ITEMS]  # new requests
    import_files(project, [write_jsonl(tmp_path / "c.jsonl", ITEMS + more)], "mcq", ImportOptions(source="stopped"))
    items = project.conn.execute("SELECT count(*) FROM items").fetchone()[0]
    script = Path(sys.executable).with_name("spokenbench")
    env = dict(os.environ, NVIDIA_API_KEY=SECRET)
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, replace(chat_reply(GOOD), delay_s=0.2))
        command = [str(script), "rewrite", str(project.path), "--base-url", f"{server.url}/v1", "--concurrency", "1"]
        first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.requests_to(CHAT_ROUTE)) < 3:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.01)
        time.sleep(0.05)  # the previous answer is committed: stopped while it waits for one, not while it writes
        first.send_signal(signal.SIGSTOP)
        time.sleep(STALE_AFTER_S + 1.5)
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        first.send_signal(signal.SIGCONT)
        _out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        requests = len(server.requests_to(CHAT_ROUTE))
    assert items <= requests <= items + 1, f"{requests} requests for {items} items"
    done = project.conn.execute("SELECT count(*) FROM rewrite_outcomes WHERE status = 'done'").fetchone()[0]
    assert done == items


IN_OWN_PID_NAMESPACE = textwrap.dedent(
    """
    # pid 1 of a new PID namespace (unshare --pid --fork): fork until the next child gets pid `wanted`, a pid no
    # process of the machine has, then run the command as that child, as a container's process would
    import os, sys
    wanted, command = int(sys.argv[1]), sys.argv[2:]
    while True:
        child = os.fork()
        if child == 0:
            if os.getpid() == wanted:
                os.execv(command[0], command)
            os._exit(0)
        os.waitpid(child, 0)
        if child >= wanted:
            break
    """
)


def _a_pid_no_process_has(start: int = 200) -> int:
    return next(pid for pid in range(start, 4000) if not Path(f"/proc/{pid}").exists())


@pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or not Path("/usr/bin/unshare").exists(),
    reason="needs Linux, root and unshare to start a process in a PID namespace of its own",
)
def test_a_job_in_a_container_sharing_the_hostname_is_not_taken_for_dead(project, tmp_path):
    """`docker run --network=host` gives a container the machine's hostname but pids of its own: a job there, seen
    from the machine, has a pid no process has. It used to look dead at once, so a second rewrite took its items
    over and both sent them; the job's row now names its PID namespace, and only its heartbeat tells."""
    from dataclasses import replace

    import_files(project, [write_jsonl(tmp_path / "c.jsonl", ITEMS)], "mcq", ImportOptions(source="container"))
    script = Path(sys.executable).with_name("spokenbench")
    env = dict(os.environ, NVIDIA_API_KEY=SECRET)
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, replace(chat_reply(GOOD), delay_s=0.3))
        command = [str(script), "rewrite", str(project.path), "--base-url", f"{server.url}/v1", "--concurrency", "1"]
        wanted = _a_pid_no_process_has()
        inside = subprocess.Popen(
            ["unshare", "--pid", "--fork", sys.executable, "-c", IN_OWN_PID_NAMESPACE, str(wanted), *command],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while len(server.requests_to(CHAT_ROUTE)) < 2:
            assert time.monotonic() < deadline and inside.poll() is None, inside.communicate()[1]
            time.sleep(0.01)
        [job] = [job for job in list_jobs(project.conn) if job.kind == "rewrite"]
        assert job.pid == wanted and not Path(f"/proc/{wanted}").exists()  # its pid means nothing out here
        assert job.status == "running", job.stop_reason
        outside = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert outside.returncode == 0, outside.stderr
        _out, err = inside.communicate(timeout=120)
        assert inside.returncode == 0, err
        requests = len(server.requests_to(CHAT_ROUTE))
    assert requests == len(ITEMS), f"{requests} requests for {len(ITEMS)} items"
