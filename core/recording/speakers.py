"""Speaker profiles and consent.

A speaker has a name, a language, an accent and a gender described in their own words; the gender study reads a
normalised group (male / female / other / unspecified) derived from it. Nothing of a speaker is recorded until a
consent — the text they agreed to, when, and who took it — exists and is not withdrawn. Withdrawing it deletes
their takes and the audio files no other row refers to, every voice cloned from them, the clips synthesized with
that voice and the inputs assembled from those clips; the profile and the consent record (with its withdrawal
time) stay, so it can be shown that the wish was honoured."""

from __future__ import annotations

import contextlib
import re
from dataclasses import asdict, dataclass

from spokenbench.core.domain.languages import normalize_language
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.recording import store
from spokenbench.core.recording.spool import remove_left_takes_of
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now

GENDER_GROUPS = ("male", "female", "other", "unspecified")
DEFAULT_SCOPE = "recording my voice and cloning it for research on spoken-language benchmarks"
MAX_NAME_CHARS = 80
MAX_FIELD_CHARS = 200
MAX_CONSENT_CHARS = 50_000

_MALE = {
    "male",
    "man",
    "m",
    "boy",
    "masculine",
    "he",
    "he/him",
    "cis man",
    "trans man",
    "男",
    "男性",
    "남",
    "남성",
    "남자",
}
_FEMALE = {
    "female",
    "woman",
    "f",
    "w",
    "girl",
    "feminine",
    "she",
    "she/her",
    "cis woman",
    "trans woman",
    "女",
    "女性",
    "여",
    "여성",
    "여자",
}
_UNSPECIFIED = {
    "",
    "unspecified",
    "prefer not to say",
    "rather not say",
    "n/a",
    "na",
    "none",
    "unknown",
    "-",
    "?",
    "not given",
}

CONSENT_TEMPLATE = (
    "I, {name}, agree that my voice is recorded reading the prompts shown to me, and that these recordings are "
    "stored in this project and used to create a synthetic copy of my voice (voice cloning) for research on "
    "spoken-language benchmarks. The recordings and the cloned voice are used only for this research and are not "
    "published as they are. I can withdraw this consent at any time; my recordings, the cloned voice and the "
    "audio made with it are then deleted."
)


class ConsentRequired(SpokenBenchError):
    """Recording or cloning a speaker without a consent in force."""


@dataclass(frozen=True)
class Consent:
    id: int
    scope: str
    text: str
    given_at: str
    recorded_by: str
    withdrawn_at: str | None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Speaker:
    id: int
    name: str
    language: str | None
    accent: str | None
    gender_self_described: str | None
    gender_group: str
    voice_gender: str | None
    notes: str | None
    created_at: str
    consent: Consent | None  # the newest consent, withdrawn or not
    takes: int = 0
    passing_takes: int = 0
    prompts_done: int = 0  # prompts whose newest take passed every check
    cloned_voices: int = 0

    @property
    def consent_in_force(self) -> bool:
        return self.consent is not None and self.consent.withdrawn_at is None

    @property
    def consent_state(self) -> str:
        if self.consent is None:
            return "no consent"
        if self.consent.withdrawn_at:
            return f"withdrawn {self.consent.withdrawn_at[:10]}"
        return f"given {self.consent.given_at[:10]}"

    def as_dict(self) -> dict:
        data = asdict(self)
        data["consent_in_force"] = self.consent_in_force
        return data


def normalise_gender(text: str | None) -> str:
    """A self-described gender → male / female / other / unspecified."""
    value = re.sub(r"\s+", " ", (text or "").strip().lower())
    if value in _UNSPECIFIED:
        return "unspecified"
    if value in _MALE:
        return "male"
    if value in _FEMALE:
        return "female"
    return "other"


def _clean(value: str | None, what: str, max_chars: int, required: bool = False) -> str | None:
    value = (value or "").strip()
    if not value:
        if required:
            raise SpokenBenchError(f"a speaker needs a {what}")
        return None
    if len(value) > max_chars:
        raise SpokenBenchError(f"the {what} is {len(value):,} characters long; at most {max_chars:,} are accepted")
    bad = next((c for c in value if ord(c) < 32 and c not in "\t\n"), None)
    if bad is not None:
        raise SpokenBenchError(f"the {what} contains the control character U+{ord(bad):04X}")
    return value


def _speaker(row: store.SpeakerRow, consent: store.ConsentRow | None, counts=(0, 0, 0), voices: int = 0) -> Speaker:
    return Speaker(
        row.id,
        row.name,
        row.language,
        row.accent,
        row.gender_self_described,
        row.gender_group,
        row.voice_gender,
        row.notes,
        row.created_at,
        Consent(
            consent.id, consent.scope, consent.consent_text, consent.given_at, consent.recorded_by, consent.withdrawn_at
        )
        if consent
        else None,
        *counts,
        voices,
    )


def add_speaker(
    project: Project,
    name: str,
    language: str,
    accent: str | None = None,
    gender: str | None = None,
    notes: str | None = None,
) -> Speaker:
    """Add a speaker profile. `gender` is free text as the speaker describes it."""
    name = _clean(name, "name", MAX_NAME_CHARS, required=True)
    language_text = _clean(language, "language", 40, required=True)
    try:
        language = normalize_language(language_text)
    except ValueError as error:
        raise SpokenBenchError(f"speaker {name}: {error}") from None
    accent = _clean(accent, "accent", MAX_FIELD_CHARS)
    gender = _clean(gender, "gender", MAX_FIELD_CHARS)
    notes = _clean(notes, "note", MAX_CONSENT_CHARS)
    with project.transaction() as conn:
        if store.speaker_by_name(conn, name) is not None:
            raise SpokenBenchError(f"a speaker named '{name}' already exists; choose another name")
        store.insert_speaker(conn, name, language, accent and accent.lower(), gender, normalise_gender(gender), notes)
    return get_speaker(project.conn, name)


def get_speaker(conn, name_or_id: str | int) -> Speaker:
    row = (
        store.speaker_by_id(conn, name_or_id)
        if isinstance(name_or_id, int)
        else store.speaker_by_name(conn, name_or_id)
    )
    if row is None:
        known = ", ".join(s.name for s in store.all_speakers(conn)[:20]) or "none yet"
        raise SpokenBenchError(f"no speaker '{name_or_id}' in this project (speakers: {known})")
    counts = store.speaker_take_counts(conn).get(row.id, (0, 0, 0))
    voices = store.cloned_voice_counts(conn).get(row.id, 0)
    return _speaker(row, store.latest_consents(conn).get(row.id), counts, voices)


def list_speakers(conn) -> list[Speaker]:
    consents = store.latest_consents(conn)
    counts = store.speaker_take_counts(conn)
    voices = store.cloned_voice_counts(conn)
    return [
        _speaker(row, consents.get(row.id), counts.get(row.id, (0, 0, 0)), voices.get(row.id, 0))
        for row in store.all_speakers(conn)
    ]


def consent_text_for(name: str) -> str:
    return CONSENT_TEMPLATE.format(name=name)


def give_consent(
    project: Project, speaker: str | int, consent_text: str, recorded_by: str, scope: str = DEFAULT_SCOPE
) -> Consent:
    """Record that the speaker agreed to `consent_text` now, taken by `recorded_by`."""
    consent_text = (consent_text or "").strip()
    if not consent_text:
        raise SpokenBenchError("the consent text is empty: the speaker must agree to a written text")
    if len(consent_text) > MAX_CONSENT_CHARS:
        raise SpokenBenchError(f"the consent text is {len(consent_text):,} characters; at most {MAX_CONSENT_CHARS:,}")
    recorded_by = (recorded_by or "").strip()
    if not recorded_by:
        raise SpokenBenchError("say who took the consent (--by NAME)")
    if len(recorded_by) > MAX_NAME_CHARS:
        raise SpokenBenchError(f"the name of who took the consent is longer than {MAX_NAME_CHARS} characters")
    with project.transaction() as conn:
        row = _speaker_row(conn, speaker)
        if store.active_consent(conn, row.id) is not None:
            raise SpokenBenchError(f"{row.name} has already given consent; withdraw it first to record a new one")
        given_at = utc_now()
        consent_id = store.insert_consent(conn, row.id, scope, consent_text, recorded_by, given_at)
    return Consent(consent_id, scope, consent_text, given_at, recorded_by, None)


def _speaker_row(conn, speaker: str | int) -> store.SpeakerRow:
    row = store.speaker_by_id(conn, speaker) if isinstance(speaker, int) else store.speaker_by_name(conn, speaker)
    if row is None:
        raise SpokenBenchError(f"no speaker '{speaker}' in this project")
    return row


def require_consent(conn, speaker_id: int) -> store.ConsentRow:
    consent = store.active_consent(conn, speaker_id)
    if consent is None:
        row = store.speaker_by_id(conn, speaker_id)
        name = row.name if row else f"speaker {speaker_id}"
        raise ConsentRequired(
            f"recording refused: {name} has not given consent, or withdrew it; record their consent first "
            f"(Consent… on the Speakers page, or spokenbench speakers DIR --consent '{name}' --consent-text … --by …)"
        )
    return consent


@dataclass(frozen=True)
class Withdrawal:
    speaker: str
    withdrawn_at: str
    recordings_deleted: int
    cloned_voices_deleted: int
    clips_deleted: int
    inputs_deleted: int
    files_deleted: int

    def as_dict(self) -> dict:
        return asdict(self)


def withdraw_consent(project: Project, speaker: str | int) -> Withdrawal:
    """Withdraw the speaker's consent and delete what was made from their voice (see the module's docstring).
    The rows go in one transaction; then each audio file no row refers to any more is deleted."""
    with project.transaction() as conn:
        row = _speaker_row(conn, speaker)
        when = utc_now()
        if store.mark_consents_withdrawn(conn, row.id, when) == 0:
            raise SpokenBenchError(f"{row.name} has no consent in force to withdraw")
        voice_count, files = store.delete_cloned_voices_of(conn, row.id)
        takes = store.delete_takes_of(conn, row.id)
        clips, clip_files = store.delete_cloned_clips(conn, row.id, row.name)
        inputs, input_files = store.delete_cloned_inputs(conn, row.name)
    candidates = {sha: fmt for sha, fmt in [*files, *takes, *clip_files, *input_files] if sha}
    deleted = 0
    for sha, fmt in candidates.items():
        if store.audio_referenced(project.conn, sha):
            continue
        path = project.audio.path_for(sha, fmt)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            deleted += 1
    with contextlib.suppress(OSError):  # after the audio: nothing here may stop its deletion
        remove_left_takes_of(project.path, row.id)  # a take of theirs cut short: nothing of the voice stays
    return Withdrawal(row.name, when, len(takes), voice_count, clips, inputs, deleted)
