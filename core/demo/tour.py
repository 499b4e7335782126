"""The guided tour of the demo project (issue 15 item 2), Qt-free: the papers' findings, one step each, with the
page and panel that shows it and which of its numbers are simulated and which are published.

    for step in TOUR:
        step.title, step.text          # what the step says
        step.page, step.panel          # where it points: a sidebar page key and a Results panel key (core/results/)
        step.published                 # whether the step turns the panel's published layer on
        step.simulated_note, step.published_note   # plainly: where the numbers come from

The desktop app draws it in a side panel (widgets/tour_panel.py, wired in app/tour.py); `tour_markdown()` gives
the same text for a report or the CLI. The simulated numbers are the demo's simulated listeners (core/evaluation/
simulated.py: metadata-only stand-ins built with these biases, so they show what each panel looks like, never
evidence); the published numbers are the papers' own tables, bundled as CSV in resources/published/."""

from __future__ import annotations

from dataclasses import dataclass

from spokenbench.core.results.names import PANEL_ORDER, PAPER_TITLES

SIMULATED = "simulated"
PUBLISHED = "published"
REAL = "real"
# what a step may point at beside its panel: the run picker, the panel's figure, the gender-probe detail
FOCUS_TARGETS = ("runs", "panel", "gender_detail")


@dataclass(frozen=True)
class TourStep:
    key: str
    title: str
    text: str  # plain text; paragraphs separated by a blank line
    page: str  # the sidebar page it opens (app/main_window.py PAGES)
    panel: str | None  # the Results panel it selects (core/results/names.py PANEL_ORDER)
    focus: str  # what it highlights: one of FOCUS_TARGETS
    published: bool  # the panel's published layer shown in this step
    simulated_note: str  # which numbers on screen are simulated, and by what
    published_note: str  # which numbers are published, and where from
    view: str | None = None  # the panel's view it shows (the gender probes' answer setting, e.g. free_form)
    real_note: str = ""  # which numbers a real model measured (the demo built with --real)

    @property
    def sources(self) -> tuple[str, ...]:
        """Which kinds of numbers the step shows: 'simulated', 'published', 'real'."""
        notes = ((SIMULATED, self.simulated_note), (PUBLISHED, self.published_note), (REAL, self.real_note))
        return tuple(kind for kind, note in notes if note)


_DEMO_LISTENERS = (
    "Simulated: the demo's listeners (simulated:steady, simulated:order-sensitive, simulated:accent-sensitive) "
    "answer from each condition's metadata, never from audio, with biases written into them "
    "(core/evaluation/simulated.py). They show how the panel reads a bias; they are not evidence of one."
)
_GENDER_LISTENERS = (
    "Simulated: the demo's gender study — simulated:male-leaning and simulated:gender-balanced hear the 12 probes; "
    "simulated:gender-balanced also reads them as text, as the declared backbone of both. Their preferences are "
    "written into them (core/evaluation/simulated.py)."
)

TOUR: tuple[TourStep, ...] = (
    TourStep(
        key="two-kinds-of-numbers",
        title="Two kinds of numbers",
        text=(
            "This tour walks through what three papers found about how audio language models answer spoken "
            "multiple-choice questions, each finding on the panel that shows it.\n\n"
            "Every panel can show two kinds of numbers. Yours come from the runs listed on the left: in this demo "
            "they are all simulated listeners, marked SIMULATED in the run list and 'yours (simulated)' in the "
            "panels. The papers' own numbers appear when you tick 'Published (paper)' above a figure, labelled "
            "'published — paper, Table N'."
        ),
        page="results",
        panel="accuracy_by_level",
        focus="runs",
        published=False,
        simulated_note=_DEMO_LISTENERS,
        published_note="Published: the papers' tables in resources/published/, shown only when the layer is on.",
    ),
    TourStep(
        key="option-order",
        title="Option order moves answers most",
        text=(
            "Reading the same options in reverse order changes answers more than who speaks them or how. "
            "BiasInEar's Tables 6 and 11-17 (hatched, below the demo's) print every one of its nine models as less "
            "accurate when the options are reversed, in every language, accent and voice.\n\n"
            "Above them, the demo's order-sensitive listener, built to prefer early positions, loses several points "
            "on the same question pairs while the steady listener barely moves; the table below gives the exact "
            "McNemar test of each. The Gold position panel shows the same bias from Hearing the Order's side: "
            "accuracy moves with the position the right answer is read in."
        ),
        page="results",
        panel="mcnemar",
        focus="panel",
        published=True,
        simulated_note=_DEMO_LISTENERS,
        published_note=f"Published: {PAPER_TITLES['biasinear']}, Tables 6 and 11-17 (accuracy, original vs reversed).",
    ),
    TourStep(
        key="language-accent-gender",
        title="Language matters more than accent, accent more than gender",
        text=(
            "Which language a question is spoken in moves accuracy most, then the accent within a language, and "
            "the speaker's voice gender hardly at all. In BiasInEar's Tables 18-20 (Gemini 2.5 Flash) English "
            "questions are answered about 17 points better than Chinese or Korean ones, accents within a language "
            "differ by a point or two, and female and male voices by a fraction of a point; its Table 21 orders "
            "the answer shifts (APES) the same way: language, then accent, then gender.\n\n"
            "The demo's accent-sensitive listener was built to lose accuracy in Korean and Chinese and in two "
            "accents: compare its bars across the language, accent and gender subplots."
        ),
        page="results",
        panel="accuracy_by_level",
        focus="panel",
        published=True,
        simulated_note=_DEMO_LISTENERS,
        published_note=f"Published: {PAPER_TITLES['biasinear']}, Tables 18-20 (accuracy by gender, accent, language).",
    ),
    TourStep(
        key="speech-carries-text",
        title="Speech carries what text already shows",
        text=(
            "Much of a speech model's bias is already in the text model it is built on. The gender paper's κ "
            "measures how closely a SpeechLM's answers follow its backbone LLM reading the same question as text: "
            "its published Table 1 reports up to 0.59. BiasInEar's published Table 8 finds the same direction for "
            "option order and language: the answer shifts seen with audio are already there with text input, and "
            "larger with audio (resources/published/biasinear/table08_apes_text_vs_audio.csv). These published "
            "numbers are not on screen in this step: tick 'Published (paper)' above the figure to see them.\n\n"
            "Look at the κ subplot: the demo's gender-balanced listener, read as text, is the declared backbone "
            "of both speech listeners, so κ tells how much of each one's answers the text already gives."
        ),
        page="results",
        panel="gender_probe",
        focus="panel",
        published=False,
        view="binary_option",
        simulated_note=_GENDER_LISTENERS,
        published_note=(
            f"Published: {PAPER_TITLES['gender_differentiation']}, Table 1 (κ, J, Δ, ν of six LLaMA-Omni models); "
            f"{PAPER_TITLES['biasinear']}, Table 8 (APES, text vs audio)."
        ),
    ),
    TourStep(
        key="permutation-voting",
        title="Permutation voting steadies rankings",
        text=(
            "Ask each question in several option orders and take the majority answer: the position bias largely "
            "cancels out. In Hearing the Order's Table 3 (SPEECH-MMAU) voting over every order raises accuracy for "
            "all six models and cuts RSD where the position bias was strongest (Phi-4-Multimodal from 0.273 to "
            "0.110, both Qwen2.5-Omni models by about half), so which model ranks above which depends less on the "
            "order the options happened to be read in.\n\n"
            "The demo asks each question in two orders only (original and reversed), so its simulated votes have "
            "little to work with and its ranks do not move: the published ranks below show what voting over every "
            "order does."
        ),
        page="results",
        panel="ranking_changes",
        focus="panel",
        published=True,
        simulated_note=_DEMO_LISTENERS,
        published_note=f"Published: {PAPER_TITLES['hearing_the_order']}, Table 3 (original, cyclic and full voting).",
    ),
    TourStep(
        key="gender-probes",
        title="Male-oriented answers where it is a stereotype, gender ignored where it matters",
        text=(
            "On gender-stereotypical questions, SpeechLMs lean to the male-oriented answer whoever speaks: in the "
            "gender paper's published Table 1 (not on screen unless you tick 'Published (paper)'), Δ is above zero on stereotypical questions for all six LLaMA-Omni models "
            "(significant for five). Yet on questions whose right answer depends on the speaker's gender, they "
            "answer male and female voices almost alike: J, the overlap of the two voices' answers, is 0.83 or "
            "more.\n\n"
            "Below the figure, the detail lists J, Δ with its significance marks, ν and κ per category for the "
            "demo's simulated listeners, the answers per question by disagreement, and a listening view of one "
            "probe in the male, female and neutralized voices."
        ),
        page="results",
        panel="gender_probe",
        focus="gender_detail",
        published=False,
        view="binary_option",
        simulated_note=_GENDER_LISTENERS,
        published_note=f"Published: {PAPER_TITLES['gender_differentiation']}, Table 1 (J with Table 8's intervals, Δ, ν, κ).",
    ),
    TourStep(
        key="free-form",
        title="Free answers: the same picture by similarity",
        text=(
            "Without options the model answers in its own words, so the gender paper measures by meaning: J_s is "
            "how similar the answers to a male and a female voice are (sentence similarity, all-MiniLM-L6-v2), "
            "Δ_s the preference among the answers that name one option, and s how similar the speech model's "
            "answers are to its backbone's. In its Table 3 the published J_s is 0.81-0.96 — voices hardly change the answers "
            "— while s is only 0.46-0.66 and Δ_s stays near zero on the Dependent questions.\n\n"
            "The panel now shows the free-form setting: J_s where J was, Δ_s where Δ was, s where κ was; the "
            "detail below lists them per category for the demo's simulated listeners, whose free answers are "
            "an option's words (so their J_s and s run higher than a real model's)."
        ),
        page="results",
        panel="gender_probe",
        focus="gender_detail",
        published=False,
        simulated_note=_GENDER_LISTENERS + " In the free form they answer with an option's words.",
        published_note=f"Published: {PAPER_TITLES['gender_differentiation']}, Table 3 (J_s, Δ_s, s, ν of six models).",
        view="free_form",
    ),
)


REAL_STEP_KEY = "real-model-position-bias"


def real_model_step(summary: dict | None = None) -> TourStep:
    """The step about the demo's real model (core/evaluation/real_demo.py), shown only when its run exists; with
    `summary` (real_demo_summary.real_model_summary) its numbers are in the text, with their intervals."""
    from spokenbench.core.demo.real_model_summary import summary_lines
    from spokenbench.core.evaluation.real_demo import REAL_LABEL

    text = (
        f"Every number so far came from simulated listeners. The run labelled '{REAL_LABEL}' is a real model: "
        "Whisper tiny.en transcribed the demo's English questions, spoken in its two voices with the options read "
        "in all four rotations, and SmolLM2-135M answered through llama.cpp, on this machine.\n\n"
        "A 135M-parameter model is close to chance (25%) on knowledge questions, so its accuracy says little. What "
        "it shows is position bias, measured as Hearing the Order does: RSD (how unevenly accuracy spreads over "
        "the gold answer's positions), CKLD (how far its answer letters are from the gold letters' spread) and the "
        "accuracy change when the gold answer is read in each position. Select its run on the Results page: the "
        "Gold position panel draws them; the lines below (and the report's real/ part) give RSD and CKLD with "
        "question-level bootstrap intervals."
    )
    if summary is not None:
        text += "\n\n" + "\n".join(summary_lines(summary)[1:5])
    return TourStep(
        key=REAL_STEP_KEY,
        title="A real model's position bias",
        text=text,
        page="results",
        panel="gold_position",
        focus="panel",
        published=False,
        simulated_note="",
        published_note="",
        real_note=f"Real: the run '{REAL_LABEL}' (local:smollm2-135m, pipeline mode with local:tiny.en), measured "
        "here; kept apart from the simulated listeners in the report (its own part, real/).",
    )


def tour_steps(real_summary: dict | None = None, has_real: bool = False) -> tuple[TourStep, ...]:
    """The tour, with the real model's step last when the project has its run (`has_real`, or its `real_summary`)."""
    if real_summary is None and not has_real:
        return TOUR
    return (*TOUR, real_model_step(real_summary))


def step_index(key: str) -> int:
    for index, step in enumerate(TOUR):
        if step.key == key:
            return index
    raise KeyError(key)


def tour_markdown(steps: tuple[TourStep, ...] = TOUR) -> str:
    """The tour as Markdown (one section per step, with where its numbers come from), for a report."""
    lines = ["# Guided tour of the findings", ""]
    for number, step in enumerate(steps, start=1):
        where = f"Results → {step.panel}" if step.panel else step.page
        lines += [f"## {number}. {step.title}", "", f"*Panel: {where}*", ""]
        lines += [step.text, ""]
        lines += [f"- {note}" for note in (step.simulated_note, step.published_note, step.real_note) if note]
        lines.append("")
    return "\n".join(lines)


def _check() -> None:
    for step in TOUR:
        assert step.panel is None or step.panel in PANEL_ORDER, step.key
        assert step.focus in FOCUS_TARGETS, step.key


_check()
