"""The command table: every `spokenbench` command, the module that registers it and its one-line help.
`spokenbench --help` lists commands from here without importing any command module, and a command imports
only its own module (heavy libraries load when a command needs them). A module registers its commands with
`add_command`, which takes the help from here: one place for each command's summary."""

from __future__ import annotations

import argparse

COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("project_commands", "create an empty project folder"),
    "import": ("project_commands", "import benchmark items from tables"),
    "info": ("project_commands", "counts of what a project holds"),
    "items": ("project_commands", "list items"),
    "export": ("project_commands", "export items, responses or ratings"),
    "demo": ("project_commands", "build the offline demo project"),
    "synthesize": ("audio_commands", "synthesize speech for items and instruction tokens"),
    "assemble": ("audio_commands", "assemble the audio each evaluation condition presents"),
    "evaluate": ("evaluation_commands", "put assembled conditions to a model and store its answers"),
    "runs": ("evaluation_commands", "list evaluation runs"),
    "reparse": ("evaluation_commands", "re-parse stored raw answers"),
    "parse": ("evaluation_commands", "parse raw answers from elsewhere"),
    "power": ("evaluation_commands", "questions needed to detect a difference (simulated)"),
    "batches": ("batch_commands", "list the project's batch jobs; --collect stores finished results, --cancel cancels"),
    "import-results": ("batch_commands", "import a batch output file (vLLM run_batch) written for --batch-file"),
    "metrics": (
        "metrics_commands",
        "bias metrics of a responses table (accuracy, entropy, APES, κ, selection bias, gender probes)",
    ),
    "report": ("metrics_commands", "write every table (CSV, Markdown, LaTeX) and figure (PNG, SVG) to a folder"),
    "backbone": ("gender_commands", "declare the text backbone each speech model is compared with (gender study)"),
    "rewrite": ("qc_commands", "rewrite questions and options into spoken-readable text with an LLM"),
    "flag": ("qc_commands", "diff-check rewrites against the originals and list the flagged ones"),
    "review": ("qc_commands", "accept, edit or reject a flagged rewrite"),
    "transcribe": ("qc_commands", "transcribe clips with ASR systems for screening"),
    "import-transcripts": ("qc_commands", "import transcripts made by any ASR"),
    "screen": ("qc_commands", "score transcripts against the text and bin clips by WER"),
    "sample": ("qc_commands", "draw a stratified sample of clips into a named rating queue"),
    "gold": ("qc_commands", "mark clips as known-good (gold) for control clips, or list them"),
    "rate": ("qc_commands", "rate queue clips headlessly (one, a file of them, or undo the last)"),
    "qc-report": ("qc_commands", "rewriting, screening and rating results (Tables 9, 2, 3)"),
    "jobs": ("jobs_commands", "list the project's jobs (any process), or cancel one"),
    "check": ("check_commands", "verify every stored audio file against its hash (and repair what can be re-created)"),
    "pack": ("pack_commands", "write a rating queue to a self-contained annotation pack (zip) for one annotator"),
    "pack-ratings": ("pack_commands", "write the ratings made in an opened pack (PACK.d/) into the pack file"),
    "unpack": ("pack_commands", "merge a pack's ratings back into the project it was made from"),
    "import-ratings": ("pack_commands", "store the ratings of a Label Studio export of a queue this project exported"),
    "speakers": ("recording_commands", "list, add and manage the consent of recorded speakers"),
    "voices": ("voice_commands", "list the voices and their gender; --validate checks each clip's voice gender (F0)"),
}


def add_command(subparsers, name: str, **kwargs) -> argparse.ArgumentParser:
    """Register a command with the help the table gives it."""
    return subparsers.add_parser(name, help=COMMANDS[name][1], **kwargs)
