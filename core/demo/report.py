"""The demo's full report (issue 15 item 3): `spokenbench demo DIR --report OUT` writes, headless and offline,

    OUT/index.md         the index: where every number comes from (simulated or published), the figures inline,
                         links to both parts, and the guided tour's text (core/demo/tour.py)
    OUT/mcq/             what `spokenbench report DIR --out OUT/mcq` writes (core/metrics/report.py)
    OUT/gender-probe/    what `spokenbench report DIR --kind gender-probe --out OUT/gender-probe` writes
    OUT/published/       the papers' own tables, copied as bundled (resources/published/), never recomputed

Both parts are `write_report` itself with its defaults (1000 bootstrap resamples, the fixed seed). Most of their
time is figure rendering (matplotlib, PNG and SVG), so when a core is idle the gender-probe part runs in a second
(forked) process while this one writes the multiple-choice part, and the two finish in about the time of the
slower one; on a busy machine they run one after the other (a second process would only compete for the cores)."""

from __future__ import annotations

import concurrent.futures
import importlib.resources
import multiprocessing
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.processes import a_core_is_free
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.safe_files import check_output_folder

MCQ_DIR = "mcq"
GENDER_DIR = "gender-probe"
PUBLISHED_DIR = "published"
REAL_DIR = "real"  # the demo's real model (spokenbench demo DIR --real), beside the simulated parts
INDEX = "index.md"
# The second process is forked once the metrics libraries are loaded here, so it starts at once and shares
# them; spawning one instead re-imports pandas, SciPy and matplotlib (about 4 s of CPU), more than it saves.
_START_METHOD = "fork"


@dataclass
class DemoReport:
    out_dir: Path
    index: Path
    parts: dict = field(default_factory=dict)  # folder name -> core.metrics.report.Report
    figures: list[Path] = field(default_factory=list)  # the PNGs, in the index's order
    parallel: bool = False
    seconds: float = 0.0
    real_summary: dict | None = None  # the real model's headline numbers, when the demo has its run


def check_report_folder(out_dir: str | Path) -> Path:
    """The report goes into a new or empty folder: a report is never mixed into other files."""
    out = Path(out_dir)
    check_output_folder(out)  # not a file, not under one: refused before the demo is built
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SpokenBenchError(f"{out} already exists and is not empty; choose a new folder for the report")
    return out


def write_demo_report(
    project_dir: str | Path,
    out_dir: str | Path,
    *,
    n_resamples: int | None = None,
    seed: int | None = None,
    parallel: bool | None = None,
    progress: Progress | None = None,
) -> DemoReport:
    """Write the demo project's full report into `out_dir` (new or empty). `parallel` None: a second process
    for the gender-probe part when a core is idle (`a_core_is_free`)."""
    from spokenbench.core.metrics.bootstrap import DEFAULT_SEED
    from spokenbench.core.metrics.report import DEFAULT_REPORT_RESAMPLES, write_report

    progress = progress or no_progress()
    started = time.perf_counter()
    out = check_report_folder(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n_resamples = DEFAULT_REPORT_RESAMPLES if n_resamples is None else n_resamples
    seed = DEFAULT_SEED if seed is None else seed
    options = {"n_resamples": n_resamples, "seed": seed}
    if parallel is None:
        parallel = a_core_is_free() and _START_METHOD in multiprocessing.get_all_start_methods()
    result = DemoReport(out_dir=out, index=out / INDEX, parallel=parallel)
    gender_future = None
    pool = None
    if parallel:
        try:
            pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(_START_METHOD))
            gender_future = pool.submit(_gender_part, str(project_dir), str(out / GENDER_DIR), options)
        except (OSError, RuntimeError):  # no second process here (a sandbox, a frozen build): one after the other
            result.parallel = False
    try:
        progress.report(0, 3, "writing the multiple-choice report")
        mcq_source, real_rows = _without_real_model(project_dir)
        result.parts[MCQ_DIR] = write_report(mcq_source, out / MCQ_DIR, kind="mcq", **options)
        if real_rows is not None:  # the real model beside the simulated listeners, in its own part
            from spokenbench.core.demo.real_model_summary import real_model_summary

            result.parts[REAL_DIR] = write_report(real_rows, out / REAL_DIR, kind="mcq", **options)
            result.real_summary = real_model_summary(real_rows, n_resamples or 0, seed)
        progress.check_cancelled()
        progress.report(1, 3, "writing the gender-probe report")
        if gender_future is not None:
            result.parts[GENDER_DIR] = gender_future.result()
        else:
            result.parts[GENDER_DIR] = _gender_part(str(project_dir), str(out / GENDER_DIR), options)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    progress.report(2, 3, "copying the published tables and writing the index")
    _copy_published(out / PUBLISHED_DIR)
    result.figures = [
        path
        for name in (MCQ_DIR, GENDER_DIR, REAL_DIR)
        if name in result.parts
        for path in result.parts[name].files
        if path.suffix == ".png"
    ]
    result.seconds = time.perf_counter() - started
    _write_index(result, Path(project_dir), n_resamples, seed)
    progress.report(3, 3, "report written")
    return result


def _without_real_model(project_dir):
    """(the multiple-choice source without the demo's real model, its rows or None); the project folder itself
    when it has no real model's run, as before."""
    from spokenbench.core.evaluation.real_demo import REAL_MODEL, split_real
    from spokenbench.core.evaluation.store import run_models
    from spokenbench.core.metrics.loading import load_project_responses
    from spokenbench.core.store import opened

    with opened(project_dir) as project:
        if REAL_MODEL not in run_models(project.conn):
            return project_dir, None
    return split_real(load_project_responses(project_dir, "mcq"))


def _gender_part(project_dir: str, out_dir: str, options: dict):
    from spokenbench.core.metrics.report import write_report

    return write_report(project_dir, out_dir, kind="gender-probe", **options)


def _copy_published(target: Path) -> None:
    with importlib.resources.as_file(importlib.resources.files("spokenbench.resources") / "published") as source:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.pyc"))


def _run_names(project_dir: Path) -> list[str]:
    from spokenbench.core.evaluation.store import run_models
    from spokenbench.core.store import opened

    with opened(project_dir) as project:
        return run_models(project.conn)


def _figure_entries(report, folder: str) -> list[tuple[str, str]]:
    notes = dict(report.entries)
    return [
        (f"{folder}/{path.name}", notes.get(path.stem, "").removesuffix(" (PNG, SVG)"))
        for path in report.files
        if path.suffix == ".png"
    ]


def _write_index(result: DemoReport, project_dir: Path, n_resamples: int, seed: int) -> None:
    from spokenbench.core.demo.tour import tour_markdown, tour_steps

    try:
        models = _run_names(project_dir)
    except Exception:  # the index still says where the numbers come from without the list
        models = []
    simulated = ", ".join(f"`{m}`" for m in models if m.startswith("simulated")) or "the demo's simulated listeners"
    lines = [
        "# SpokenBench demo report",
        "",
        f"Written by `spokenbench demo {project_dir} --report {result.out_dir}`, offline, from the demo project "
        f"`{project_dir}`. Bootstrap: {n_resamples} question-level resamples, seed {seed}"
        + (" (off)" if not n_resamples else "")
        + ".",
        "",
        "## Which numbers are simulated and which are published",
        "",
        f"- **Simulated — every table and figure in [`{MCQ_DIR}/`]({MCQ_DIR}/README.md) and "
        f"[`{GENDER_DIR}/`]({GENDER_DIR}/README.md).** They are computed by SpokenBench from the answers of the "
        f"demo's simulated listeners ({simulated}). These listeners answer from each condition's metadata, never "
        "from audio, with biases written into them (core/evaluation/simulated.py): they show how each table and "
        "figure reads a bias. They are **not** measurements of any model and not evidence of any bias.",
        f"- **Published — the files in [`{PUBLISHED_DIR}/`]({PUBLISHED_DIR}/README.md) only.** They are the papers' "
        "own tables, copied as printed (resources/published/), not recomputed here. The guided tour below says, "
        "step by step, which of a panel's numbers are simulated and which published (and from which table).",
        "",
        "## The two parts",
        "",
    ]
    for folder, title, command in (
        (MCQ_DIR, "Multiple choice (BiasInEar, Hearing the Order)", f"spokenbench report {project_dir} --out OUT"),
        (
            GENDER_DIR,
            "Gender probes (Acoustic-based Gender Differentiation)",
            f"spokenbench report {project_dir} --kind gender-probe --out OUT",
        ),
    ):
        report = result.parts[folder]
        lines.append(
            f"- [{title}]({folder}/README.md): {len(report.files)} files, the same as `{command}` writes"
            + (f"; {len(report.skipped)} skipped (listed in its index, with why)" if report.skipped else "")
        )
    if result.real_summary is not None:
        from spokenbench.core.demo.real_model_summary import summary_lines

        lines += [
            "",
            f"## Real: {result.real_summary['label']}",
            "",
            f"Measured, not simulated: Whisper tiny.en transcribed the assembled English questions and SmolLM2-135M "
            f"answered through llama.cpp, on this machine. Its tables and figures are in [`{REAL_DIR}/`]"
            f"({REAL_DIR}/README.md), apart from the simulated listeners'. A 135M model is near chance on "
            "knowledge questions: what it shows is a real selection bias (the letters it prefers), not knowledge.",
            "",
            *[f"- {line}" for line in summary_lines(result.real_summary)],
        ]
    lines += ["", "## Figures (simulated)", ""]
    for folder in (MCQ_DIR, GENDER_DIR):
        for link, note in _figure_entries(result.parts[folder], folder):
            svg = link.removesuffix(".png") + ".svg"
            lines += [f"### {note or link}", "", f"![{note or link}]({link})", "", f"[SVG]({svg})", ""]
    tour = tour_markdown(tour_steps(result.real_summary)).splitlines()
    lines += ["#" + line if line.startswith("#") else line for line in tour]
    result.index.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
