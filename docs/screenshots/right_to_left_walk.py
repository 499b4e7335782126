"""Screenshots of an Arabic and Hebrew benchmark in the app, on a real X server with a PulseAudio null sink, driven
by keys alone (tests/real_device.py):

    python docs/screenshots/right_to_left_walk.py OUT [--screen 1280x720]

Builds OUT/project (`spokenbench init`, `import` of six Arabic and six Hebrew questions with digits, Latin
formulas and a final full stop, rewrites flagged by `spokenbench flag`, espeak-ng clips in the 'default' accent,
a rating queue, two systems' transcripts, two annotators' ratings, a simulated run) and takes:
- OUT/rtl-rating-1.png, -2.png: the Rating page (Ctrl+3, Enter) on the queue's first clips, the second after 1 with
  its transcripts (T; two systems' imported transcripts, screened);
- OUT/rtl-rewrites.png: the Rewrites page (Ctrl+2, J four times) on a flagged Arabic question, its diff;
- OUT/rtl-items.png: the Items page (Ctrl+1) with the first item's detail (↓);
- OUT/rtl-qc-disagreements.png: the QC page (Ctrl+4, Tab into its table, Ctrl+Tab to the last tab), the clips two
  other annotators (`spokenbench rate --from`) disagree on;
- OUT/rtl-results.png: the Results page (Ctrl+7) on a simulated run.
Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import walk_arguments, walked_session  # noqa: E402

QUESTIONS = [
    ("ar", "geography", "ما هي عاصمة فرنسا؟", ["باريس", "ليون", "مرسيليا", "نيس"],
     "ما هي عاصمة فرنسا؟", ["باريس", "ليون", "مرسيليا", "نيس"]),
    ("ar", "chemistry", "كم عدد ذرات الهيدروجين في جزيء الماء (H2O)؟", ["1", "2", "3", "4"],
     "كم عدد ذرات الهيدروجين في جزيء الماء؟", ["واحدة", "اثنتان", "ثلاث", "أربع"]),
    ("ar", "history", "في أي عام بدأت الحرب العالمية الأولى، وفقاً لمعظم المؤرخين في أوروبا والشرق الأوسط وشمال أفريقيا وآسيا؟",
     ["1914", "1918", "1939", "1945"],
     "في أي عام بدأت الحرب العالمية الأولى، وفقاً لمعظم المؤرخين في أوروبا والشرق الأوسط وشمال أفريقيا وآسيا؟",
     ["ألف وتسعمئة وأربعة عشر", "ألف وتسعمئة وثمانية عشر", "ألف وتسعمئة وتسعة وثلاثون", "ألف وتسعمئة وخمسة وأربعون"]),
    ("ar", "biology", "أي جزيء يحمل المعلومات الوراثية في الخلية؟", ["DNA", "ATP", "الجلوكوز", "الكولاجين"],
     "أي جزيء يحمل المعلومات الوراثية في الخلية؟", ["الحمض النووي", "أدينوسين ثلاثي الفوسفات", "الجلوكوز", "الكولاجين"]),
    ("ar", "math", "ما ناتج 12 × 12.", ["124", "144", "142", "132"],
     "ما ناتج اثني عشر ضرب اثني عشر.", ["مئة وأربعة وعشرون", "مئة وأربعة وأربعون", "مئة واثنان وأربعون", "مئة واثنان وثلاثون"]),
    ("ar", "physics", "ما وحدة قياس القوة في النظام الدولي (SI)؟", ["النيوتن (N)", "الجول", "الواط", "الباسكال"],
     "ما وحدة قياس القوة في النظام الدولي للوحدات؟", ["النيوتن", "الجول", "الواط", "الباسكال"]),
    ("he", "geography", "מהי בירת יפן?", ["טוקיו", "אוסקה", "קיוטו", "נגויה"],
     "מהי בירת יפן?", ["טוקיו", "אוסקה", "קיוטו", "נגויה"]),
    ("he", "math", "כמה זה 7 כפול 8?", ["54", "56", "58", "64"],
     "כמה זה שבע כפול שמונה?", ["חמישים וארבע", "חמישים ושש", "חמישים ושמונה", "שישים וארבע"]),
    ("he", "chemistry", "מהו הסמל הכימי של זהב (Au או Ag)?", ["Au", "Ag", "Fe", "Cu"],
     "מהו הסמל הכימי של זהב?", ["אֵיי יוּ", "אֵיי גִ'י", "אֶף אִי", "סִי יוּ"]),
    ("he", "history", "באיזו שנה הוקמה מדינת ישראל, לפי ההכרזה שנקראה בתל אביב ביום שישי אחר הצהריים?",
     ["1948", "1956", "1967", "1973"],
     "באיזו שנה הוקמה מדינת ישראל, לפי ההכרזה שנקראה בתל אביב ביום שישי אחר הצהריים?",
     ["אלף תשע מאות ארבעים ושמונה", "אלף תשע מאות חמישים ושש", "אלף תשע מאות שישים ושבע", "אלף תשע מאות שבעים ושלוש"]),
    ("he", "biology", "איזה איבר שואב דם בגוף האדם.", ["הלב", "הכבד", "הריאות", "הכליות"],
     "איזה איבר שואב דם בגוף האדם.", ["הלב", "הכבד", "הריאות", "הכליות"]),
    ("he", "physics", "מהי מהירות האור בריק (בערך 300,000 ק\"מ לשנייה)?", ["c", "g", "h", "e"],
     "מהי מהירות האור בריק, בערך שלוש מאות אלף קילומטר לשנייה?", ["סִי", "גִ'י", "אֵייץ'", "אִי"]),
]  # fmt: skip


def build_project(out: Path) -> Path:
    """OUT/project: the questions imported, their rewrites added and flagged, spoken, and a rating queue."""
    from spokenbench.core.domain.items import option_part
    from spokenbench.core.store.items import iter_items
    from spokenbench.core.store.project import opened
    from spokenbench.core.store.rewrites import add_rewrite

    project = out / "project"
    shutil.rmtree(project, ignore_errors=True)
    rows = [
        {"id": f"{language}-{n}", "language": language, "subject": subject, "question": question,
         "options": options, "answer": "A"}
        for n, (language, subject, question, options, _, _) in enumerate(QUESTIONS, 1)
    ]  # fmt: skip
    table = out / "questions.jsonl"
    table.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    rewrites = {row["id"]: (spoken, spoken_options) for row, (*_, spoken, spoken_options) in zip(rows, QUESTIONS)}

    def run(*args: str) -> None:
        subprocess.run(["spokenbench", *args], check=True, capture_output=True)

    run("init", str(project))
    run("import", str(project), str(table), "--format", "mcq", "--source", "rtl")
    with opened(project) as store, store.transaction() as conn:
        for item_id, item in list(iter_items(conn)):
            spoken, spoken_options = rewrites[item.source_id]
            add_rewrite(conn, item_id, "question", spoken, "rtl-walk")
            for option, text in zip(item.options, spoken_options):
                add_rewrite(conn, item_id, option_part(option.letter), text, "rtl-walk")
    run("flag", str(project))
    run("synthesize", str(project), "--tts", "espeak", "--parts", "questions,options")
    run("sample", str(project), "--name", "arabic-hebrew", "--per-bin", "20")
    with opened(project) as store:  # two systems' transcripts: one exact, one with a final full stop
        clips = store.conn.execute("SELECT id, text FROM clips WHERE part NOT LIKE 'token%'").fetchall()
    for asr, ending in (("asr-exact", ""), ("asr-stop", ".")):
        transcripts = out / f"{asr}.jsonl"
        transcripts.write_text(
            "".join(json.dumps({"clip_id": i, "text": t + ending}, ensure_ascii=False) + "\n" for i, t in clips),
            encoding="utf-8",
        )
        run("import-transcripts", str(project), str(transcripts), "--asr", asr)
    run("screen", str(project))
    with opened(project) as store:
        queued = [clip for (clip,) in store.conn.execute("SELECT clip_id FROM rating_queue_clips ORDER BY position")]
    for annotator, every in (("ann-a", 0), ("ann-b", 3)):  # every third clip: ann-b says incorrect, ann-a correct
        ratings = out / f"{annotator}.jsonl"
        ratings.write_text(
            "".join(
                json.dumps({"clip": clip, "rating": "incorrect" if every and n % every == 0 else "correct"}) + "\n"
                for n, clip in enumerate(queued)
            ),
            encoding="utf-8",
        )
        run("rate", str(project), "--queue", "arabic-hebrew", "--annotator", annotator, "--from", str(ratings))
    run("evaluate", str(project), "--model", "simulated:accent-sensitive", "--mode", "audio", "--prompt", "standard")
    return project


def main() -> None:
    out, screen = walk_arguments(__doc__)
    with walked_session(out, screen, build_project(out), queue_keys=("Return",)) as (desktop, _process, _figures):
        time.sleep(1.5)
        desktop.screenshot(out / "rtl-rating-1.png")
        desktop.xdotool("key", "1")
        time.sleep(1.5)  # saved: keys pressed while a rating saves are ignored
        desktop.xdotool("key", "t")  # the next clip's transcripts
        time.sleep(1.0)
        desktop.screenshot(out / "rtl-rating-2.png")
        desktop.xdotool("key", "ctrl+2")
        time.sleep(2.5)
        desktop.xdotool("key", "j", "j", "j", "j")  # past ar-2's options to its question: '(H2O)' dropped
        time.sleep(1.0)
        desktop.screenshot(out / "rtl-rewrites.png")
        desktop.xdotool("key", "ctrl+1")
        time.sleep(2.5)
        desktop.xdotool("key", "Down")
        time.sleep(1.5)
        desktop.screenshot(out / "rtl-items.png")
        desktop.xdotool("key", "ctrl+4")
        time.sleep(3.0)
        desktop.xdotool("key", *(["Tab"] * 6))  # into the QC page's table, inside its tabs
        time.sleep(0.5)
        desktop.xdotool("key", *(["ctrl+Tab"] * 7))  # the last tab: Disagreements
        time.sleep(1.0)
        desktop.screenshot(out / "rtl-qc-disagreements.png")
        desktop.xdotool("key", "ctrl+7")
        time.sleep(4.0)
        desktop.screenshot(out / "rtl-results.png")
    shots = ("rtl-rating-1", "rtl-rating-2", "rtl-rewrites", "rtl-items", "rtl-qc-disagreements", "rtl-results")
    print("\n".join(str(out / f"{name}.png") for name in shots))


if __name__ == "__main__":
    main()
