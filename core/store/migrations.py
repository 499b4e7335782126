"""Forward-only schema migrations. The database's `PRAGMA user_version` is the number of migrations
applied; opening a project applies the missing ones, each in its own transaction, after backing the
database up. Later issues append to MIGRATIONS; never edit a migration that has shipped."""

from __future__ import annotations

MIGRATION_1_FOUNDATION = """
CREATE TABLE project_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One question of a benchmark in one language. source_id is shared by the translations of a question
-- (Global-MMLU-Lite's sample_id), so metrics can follow a question across languages.
CREATE TABLE items (
    id             INTEGER PRIMARY KEY,
    source         TEXT NOT NULL,
    source_id      TEXT NOT NULL,
    language       TEXT NOT NULL,
    kind           TEXT NOT NULL DEFAULT 'mcq' CHECK (kind IN ('mcq', 'gender-probe')),
    subject        TEXT,
    subject_category TEXT,
    cultural_label TEXT CHECK (cultural_label IN ('CS', 'CA')),
    category       TEXT CHECK (category IN ('independent', 'stereotypical', 'dependent')),
    question       TEXT NOT NULL CHECK (length(trim(question)) > 0),
    answer         TEXT,               -- gold letter in original order; NULL where there is none (gender probes)
    extra_json     TEXT,               -- source columns kept verbatim for export
    import_id      INTEGER REFERENCES imports(id),
    created_at     TEXT NOT NULL,
    UNIQUE (source, source_id, language)
);
CREATE INDEX items_language ON items(language);

CREATE TABLE options (
    item_id     INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL CHECK (position >= 0),
    letter      TEXT NOT NULL,
    text        TEXT NOT NULL CHECK (length(trim(text)) > 0),
    orientation TEXT CHECK (orientation IN ('male', 'female', 'neutral')),
    PRIMARY KEY (item_id, position),
    UNIQUE (item_id, letter)
);

-- Every import, so an export can say where items came from.
CREATE TABLE imports (
    id         INTEGER PRIMARY KEY,
    file       TEXT NOT NULL,
    format     TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    item_count INTEGER NOT NULL,
    created_at TEXT NOT NULL
);

-- Spoken-readable text per item part ('question', 'option_A', ...), versioned; the newest accepted
-- version is what TTS reads.
CREATE TABLE rewrites (
    id          INTEGER PRIMARY KEY,
    item_id     INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    part        TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    text        TEXT NOT NULL,
    origin      TEXT NOT NULL,          -- 'llm:<model>', 'manual', 'demo', 'identity'
    status      TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'flagged', 'accepted', 'edited', 'rejected')),
    reviewer    TEXT,
    reviewed_at TEXT,
    created_at  TEXT NOT NULL,
    UNIQUE (item_id, part, version)
);

-- Audio for an item part or for an instruction token (item_id NULL, part = 'token:<label>').
CREATE TABLE clips (
    id             INTEGER PRIMARY KEY,
    item_id        INTEGER REFERENCES items(id) ON DELETE CASCADE,
    part           TEXT NOT NULL,
    text           TEXT NOT NULL,
    language       TEXT NOT NULL,
    accent         TEXT,
    voice          TEXT,
    speaker_gender TEXT CHECK (speaker_gender IN ('male', 'female')),
    speaker_id     INTEGER REFERENCES speakers(id),
    backend        TEXT NOT NULL,
    model          TEXT,
    prompt         TEXT,
    cache_key      TEXT NOT NULL,         -- hash of (backend, model, voice, prompt, text): never synthesize twice
    sha256         TEXT,                  -- audio/<sha[:2]>/<sha>.<ext>; NULL while failed
    audio_format   TEXT,
    duration_s     REAL,
    sample_rate    INTEGER,
    status         TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failed')),
    failure        TEXT,
    created_at     TEXT NOT NULL
);
CREATE INDEX clips_item ON clips(item_id);
CREATE INDEX clips_cache_key ON clips(cache_key);
-- one clip per item part and synthesis recipe; instruction tokens (no item) are unique per recipe too
CREATE UNIQUE INDEX clips_identity ON clips(coalesce(item_id, 0), part, cache_key);

CREATE TABLE transcripts (
    id          INTEGER PRIMARY KEY,
    clip_id     INTEGER NOT NULL REFERENCES clips(id) ON DELETE CASCADE,
    asr         TEXT NOT NULL,
    model       TEXT,
    text        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (clip_id, asr)
);

CREATE TABLE ratings (
    id         INTEGER PRIMARY KEY,
    clip_id    INTEGER NOT NULL REFERENCES clips(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL CHECK (length(trim(annotator)) > 0),
    rating     TEXT NOT NULL CHECK (rating IN ('correct', 'acceptable', 'incorrect')),
    note       TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX ratings_clip ON ratings(clip_id);

CREATE TABLE speakers (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    gender     TEXT CHECK (gender IN ('male', 'female')),
    language   TEXT,
    accent     TEXT,
    notes      TEXT,
    created_at TEXT NOT NULL
);

-- A recording may only exist under a consent that covers it.
CREATE TABLE consents (
    id           INTEGER PRIMARY KEY,
    speaker_id   INTEGER NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
    scope        TEXT NOT NULL,          -- what the speaker agreed to, e.g. 'voice cloning for research'
    consent_text TEXT NOT NULL,
    given_at     TEXT NOT NULL,
    recorded_by  TEXT NOT NULL,
    withdrawn_at TEXT
);

CREATE TABLE recordings (
    id          INTEGER PRIMARY KEY,
    speaker_id  INTEGER NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
    consent_id  INTEGER NOT NULL REFERENCES consents(id),
    item_id     INTEGER REFERENCES items(id) ON DELETE SET NULL,
    part        TEXT,
    text        TEXT,
    sha256      TEXT NOT NULL,
    audio_format TEXT NOT NULL,
    duration_s  REAL NOT NULL,
    sample_rate INTEGER NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE runs (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    model       TEXT NOT NULL,
    provider    TEXT,
    mode        TEXT NOT NULL,           -- 'audio', 'pipeline', 'text', 'spoken-question', 'simulated'
    prompt      TEXT NOT NULL,           -- template name
    prompt_text TEXT,
    parameters_json TEXT NOT NULL DEFAULT '{}',
    status      TEXT NOT NULL DEFAULT 'created'
                CHECK (status IN ('created', 'running', 'finished', 'cancelled', 'failed')),
    created_at  TEXT NOT NULL,
    finished_at TEXT
);

CREATE TABLE responses (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    item_id        INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    condition_key  TEXT NOT NULL,        -- canonical JSON of the condition's factors
    option_order   TEXT NOT NULL,        -- original letters in presented order, e.g. 'DCBA'
    raw_text       TEXT,
    parsed_letter  TEXT,                 -- as presented
    parse_status   TEXT CHECK (parse_status IN ('ok', 'failed', 'ambiguous', 'refusal')),
    mapped_option  TEXT,                 -- original letter the parsed one maps to
    latency_ms     REAL,
    input_tokens   INTEGER,
    output_tokens  INTEGER,
    error          TEXT,
    created_at     TEXT NOT NULL,
    UNIQUE (run_id, item_id, condition_key)
);
CREATE INDEX responses_run ON responses(run_id);
"""

# Audio: each clip's active speech level, and the assembled inputs an evaluated model hears.
MIGRATION_2_AUDIO = """
ALTER TABLE clips ADD COLUMN speech_level_db REAL;

CREATE TABLE assembled_inputs (
    id              INTEGER PRIMARY KEY,
    item_id         INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    condition_key   TEXT NOT NULL,       -- core.domain.conditions.Condition.key(); the same string as responses.condition_key
    option_order    TEXT NOT NULL,       -- original letter at each presented letter
    label_sequence  TEXT NOT NULL,       -- presented letters in spoken order
    recipe_sha256   TEXT NOT NULL,       -- hash of the source clips and settings: reassembly skips unchanged inputs
    sha256          TEXT NOT NULL,
    audio_format    TEXT NOT NULL,
    duration_s      REAL NOT NULL,
    sample_rate     INTEGER NOT NULL,
    clipped_samples INTEGER NOT NULL DEFAULT 0,
    text_rendering  TEXT NOT NULL,       -- the same condition as text, for text-vs-audio comparisons
    created_at      TEXT NOT NULL,
    UNIQUE (item_id, condition_key)
);

CREATE TABLE input_chunks (
    input_id    INTEGER NOT NULL REFERENCES assembled_inputs(id) ON DELETE CASCADE,
    max_seconds REAL NOT NULL,
    position    INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    duration_s  REAL NOT NULL,
    PRIMARY KEY (input_id, max_seconds, position)
);
"""

# Evaluation: a response cache keyed by the request's hash (reruns and resumes never pay twice), run
# progress, budget and cost, and per-response bookkeeping (cache hit, attempts, cost, parse detail).
MIGRATION_3_EVALUATION = """
CREATE TABLE response_cache (
    request_sha256 TEXT PRIMARY KEY,     -- sha256 of (provider, model, endpoint, parameters, prompt, audio sha256s)
    model          TEXT NOT NULL,        -- 'provider:name'
    raw_text       TEXT NOT NULL,
    input_tokens   INTEGER,
    output_tokens  INTEGER,
    audio_seconds  REAL,
    latency_ms     REAL,
    cost_usd       REAL,
    finish_reason  TEXT,
    created_at     TEXT NOT NULL
);

ALTER TABLE runs ADD COLUMN total_requests INTEGER;
ALTER TABLE runs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN budget_usd REAL;
ALTER TABLE runs ADD COLUMN stop_reason TEXT;   -- why a run ended early: 'budget', 'cancelled', 'auth', 'error'
ALTER TABLE runs ADD COLUMN updated_at TEXT;

ALTER TABLE responses ADD COLUMN request_sha256 TEXT;
ALTER TABLE responses ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;   -- 1 = answered from the response cache
ALTER TABLE responses ADD COLUMN attempts INTEGER;
ALTER TABLE responses ADD COLUMN cost_usd REAL;
ALTER TABLE responses ADD COLUMN parse_detail TEXT;  -- 'neutral', 'refusal', 'out of range', ...
ALTER TABLE responses ADD COLUMN transcript TEXT;    -- pipeline mode: what the ASR step heard
CREATE INDEX responses_request ON responses(request_sha256);
"""

# Quality control (BiasInEar 2.1-2.2, App. B): the LLM rewriting cache and outcomes, diff checks and review
# decisions on rewrites, ASR failures, per-clip screening scores, named rating queues.
MIGRATION_4_QC = """
-- Every LLM rewriting answer received, keyed by the hash of its request (model, messages, parameters): a rerun
-- or a resumed run never asks the same thing twice.
CREATE TABLE rewrite_requests (
    request_sha256 TEXT PRIMARY KEY,
    item_id        INTEGER REFERENCES items(id) ON DELETE SET NULL,
    model          TEXT NOT NULL,
    attempt        INTEGER NOT NULL,
    raw_text       TEXT NOT NULL,
    input_tokens   INTEGER,
    output_tokens  INTEGER,
    latency_ms     REAL,
    created_at     TEXT NOT NULL
);

-- How the LLM rewriting of an item ended: 'done' (rewrites stored), 'manual' (no valid answer within the allowed
-- attempts: rewrite it by hand), 'failed' (the request itself failed; the next run tries again).
CREATE TABLE rewrite_outcomes (
    item_id    INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    status     TEXT NOT NULL CHECK (status IN ('done', 'manual', 'failed')),
    model      TEXT NOT NULL,
    attempts   INTEGER NOT NULL,
    problem    TEXT,
    updated_at TEXT NOT NULL
);

-- The diff check of one rewrite version against the original text: both normalized (whitespace removed,
-- lowercased); flagged = they differ; diff_json lists the character-level differences.
CREATE TABLE rewrite_checks (
    rewrite_id          INTEGER PRIMARY KEY REFERENCES rewrites(id) ON DELETE CASCADE,
    flagged             INTEGER NOT NULL CHECK (flagged IN (0, 1)),
    original_normalized TEXT NOT NULL,
    rewrite_normalized  TEXT NOT NULL,
    diff_json           TEXT NOT NULL,
    checked_at          TEXT NOT NULL
);

-- Review decisions, one row each (the newest per version counts). An edit points at the version it created;
-- rewrite_id is NULL for a hand-written rewrite of a part that had none (an item marked for manual rewriting).
CREATE TABLE rewrite_reviews (
    id                INTEGER PRIMARY KEY,
    item_id           INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    part              TEXT NOT NULL,
    rewrite_id        INTEGER REFERENCES rewrites(id) ON DELETE CASCADE,
    decision          TEXT NOT NULL CHECK (decision IN ('accept', 'edit', 'reject')),
    edited_rewrite_id INTEGER REFERENCES rewrites(id) ON DELETE SET NULL,
    reviewer          TEXT NOT NULL CHECK (length(trim(reviewer)) > 0),
    note              TEXT,
    created_at        TEXT NOT NULL
);
CREATE INDEX rewrite_reviews_rewrite ON rewrite_reviews(rewrite_id);

-- The last failure of an ASR system on a clip; listed after a batch, retried by the next run, removed on success.
CREATE TABLE transcript_failures (
    clip_id    INTEGER NOT NULL REFERENCES clips(id) ON DELETE CASCADE,
    asr        TEXT NOT NULL,
    message    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (clip_id, asr)
);

-- ASR screening per clip: the error rate of each transcript against the clip's text, the minimum kept.
CREATE TABLE clip_screening (
    clip_id         INTEGER PRIMARY KEY REFERENCES clips(id) ON DELETE CASCADE,
    metric          TEXT NOT NULL CHECK (metric IN ('wer', 'cer')),
    errors          INTEGER NOT NULL,
    reference_units INTEGER NOT NULL,
    error_rate      REAL NOT NULL,
    wer_bin         INTEGER NOT NULL CHECK (wer_bin BETWEEN 0 AND 3),   -- 0, (0, 0.2], (0.2, 0.6], > 0.6
    best_asr        TEXT NOT NULL,
    asr_count       INTEGER NOT NULL,
    cer             REAL,                -- also the character error rate where the language reports both (Korean)
    screened_at     TEXT NOT NULL
);
CREATE INDEX clip_screening_bin ON clip_screening(wer_bin);

-- Named rating queues: a stratified sample of clips for human rating, in the order raters see them.
CREATE TABLE rating_queues (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE CHECK (length(trim(name)) > 0),
    strategy        TEXT NOT NULL CHECK (strategy IN ('wer-bins', 'unscreened')),
    seed            INTEGER NOT NULL,
    per_bin         INTEGER NOT NULL,
    parameters_json TEXT NOT NULL,
    created_at      TEXT NOT NULL
);

CREATE TABLE rating_queue_clips (
    queue_id   INTEGER NOT NULL REFERENCES rating_queues(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    clip_id    INTEGER NOT NULL REFERENCES clips(id) ON DELETE CASCADE,
    language   TEXT NOT NULL,
    accent     TEXT,
    wer_bin    INTEGER,                  -- at sampling time; NULL when sampled without screening
    error_rate REAL,
    PRIMARY KEY (queue_id, position),
    UNIQUE (queue_id, clip_id)
);

ALTER TABLE ratings ADD COLUMN queue_id INTEGER REFERENCES rating_queues(id) ON DELETE SET NULL;
"""

# Tables whose changes open screens care about. A trigger per table and statement kind bumps that table's
# counter, so any process (the app, a CLI run, a colleague's script) can tell what changed since it last
# looked by reading one small table.
WATCHED_TABLES = (
    "items", "rewrites", "rewrite_reviews", "rewrite_outcomes", "clips", "transcripts", "clip_screening",
    "ratings", "rating_queues", "speakers", "recordings", "runs", "responses", "assembled_inputs", "jobs",
)  # fmt: skip


def _change_triggers(tables: tuple[str, ...]) -> str:
    statements = []
    for table in tables:
        statements.append(f"INSERT INTO change_counters(name, version) VALUES ('{table}', 0);")
        for event in ("INSERT", "UPDATE", "DELETE"):
            statements.append(
                f"CREATE TRIGGER {table}_{event.lower()}_counted AFTER {event} ON {table} BEGIN "
                f"UPDATE change_counters SET version = version + 1 WHERE name = '{table}'; END;"
            )
    return "\n".join(statements)


# Jobs every process can see (the app lists CLI runs and can ask them to cancel; a job whose heartbeat stopped
# shows as interrupted), and per-table change counters that tell open screens what changed.
MIGRATION_5_JOBS = """
CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY,
    kind             TEXT NOT NULL,          -- 'evaluate', 'synthesize', 'rewrite', 'transcribe', 'assemble', ...
    label            TEXT NOT NULL,          -- what a person reads in the jobs list
    claim            TEXT,                   -- the work this job holds; at most one live job per claim
    project          TEXT NOT NULL,          -- the folder as the job's process saw it
    pid              INTEGER NOT NULL,
    host             TEXT NOT NULL,
    argv_json        TEXT,                   -- the command that started it (without secrets), to resume it
    cwd              TEXT,                   -- the folder it was started in (the command's paths are relative to it)
    started_at       TEXT NOT NULL,
    heartbeat_at     TEXT NOT NULL,          -- refreshed every second while the job lives
    finished_at      TEXT,
    done             INTEGER NOT NULL DEFAULT 0,
    total            INTEGER,
    message          TEXT,
    status           TEXT NOT NULL DEFAULT 'running'
                     CHECK (status IN ('running', 'finished', 'failed', 'cancelled', 'interrupted')),
    stop_reason      TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_running_claim ON jobs(claim) WHERE status = 'running';

CREATE TABLE change_counters (
    name    TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
""" + _change_triggers(WATCHED_TABLES)

# Units of work claimed by a running job (a synthesis recipe, an item to rewrite, a clip to transcribe), so
# two processes doing the same job share the units instead of both doing — and paying for — each one. A claim
# is released when its unit's result is committed; a dead job's claims are taken over.
MIGRATION_6_WORK_CLAIMS = """
CREATE TABLE work_claims (
    unit       TEXT PRIMARY KEY,          -- '<kind>:<unit key>'
    job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    claimed_at TEXT NOT NULL
);
CREATE INDEX work_claims_job ON work_claims(job_id);
"""

# Undo on the rating screen (Ctrl+Z) marks a rating undone instead of deleting it, so what a rater did stays on
# record; every report, export and resume point reads live ratings only (undone_at IS NULL).
MIGRATION_7_RATING_UNDO = """
ALTER TABLE ratings ADD COLUMN undone_at TEXT;
ALTER TABLE ratings ADD COLUMN undone_by TEXT;
CREATE INDEX ratings_annotator_live ON ratings(annotator, clip_id) WHERE undone_at IS NULL;
"""

# Annotation packs (core/qc/packs.py): a rating made offline in a pack carries a uuid, so merging the pack back
# twice adds it once. Local ratings leave it NULL (a UNIQUE index allows many NULLs).
MIGRATION_8_RATING_ORIGIN = """
ALTER TABLE ratings ADD COLUMN origin_uuid TEXT;
CREATE UNIQUE INDEX ratings_origin_uuid ON ratings(origin_uuid);
"""

# Recording real speakers (core/recording, BiasInEar Section 5.1). Speakers describe their gender in their own
# words (gender_self_described) and the gender study reads a normalised group (male / female / other /
# unspecified). The old `gender` column keeps its CHECK (male, female) and now means the voice gender a cloned
# voice presents (clips.speaker_gender has the same CHECK), NULL for the other groups. The CHECK is extended by
# new columns rather than by rebuilding the table: with foreign keys on during migrations, dropping the old
# speakers table would cascade-delete every consent and recording. Takes carry their prompt, take number and
# quality checks; a cloned voice remembers the take it was made from and the test sentence it spoke.
MIGRATION_9_RECORDING = """
ALTER TABLE speakers ADD COLUMN gender_self_described TEXT;
ALTER TABLE speakers ADD COLUMN gender_group TEXT NOT NULL DEFAULT 'unspecified'
    CHECK (gender_group IN ('male', 'female', 'other', 'unspecified'));
UPDATE speakers SET gender_group = gender, gender_self_described = gender WHERE gender IN ('male', 'female');

ALTER TABLE recordings ADD COLUMN prompt_key TEXT;     -- 'item:<id>:<part>' or 'line:<sha256 of the text, 16>'
ALTER TABLE recordings ADD COLUMN take INTEGER NOT NULL DEFAULT 1;
ALTER TABLE recordings ADD COLUMN passed INTEGER CHECK (passed IN (0, 1));   -- every quality check passed
ALTER TABLE recordings ADD COLUMN snr_db REAL;
ALTER TABLE recordings ADD COLUMN checks_json TEXT;    -- [{"name", "passed", "value", "reason"}, ...]
ALTER TABLE recordings ADD COLUMN device TEXT;
CREATE INDEX recordings_speaker ON recordings(speaker_id, prompt_key);
CREATE INDEX consents_speaker ON consents(speaker_id);

CREATE TABLE cloned_voices (
    id           INTEGER PRIMARY KEY,
    speaker_id   INTEGER NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
    recording_id INTEGER NOT NULL REFERENCES recordings(id) ON DELETE CASCADE,   -- the reference take
    backend      TEXT NOT NULL,
    model        TEXT,
    test_text    TEXT NOT NULL,
    test_sha256  TEXT,                  -- the test sentence as the cloned voice spoke it
    test_format  TEXT,
    created_at   TEXT NOT NULL
);
CREATE INDEX cloned_voices_speaker ON cloned_voices(speaker_id);
""" + _change_triggers(("consents", "cloned_voices"))

# Gender-neutralized voices (the gender paper's Section 5, core/audio/neutralize.py and the Kokoro backend). A
# neutralized clip keeps in speaker_gender the gender of the voice it was made from — the ground truth of the
# paper's Table 7, and what pairs male- and female-derived answers in its Table 4 — and says here how it was
# neutralized: 'embedding-average' (Kokoro: a male and a female speaker embedding averaged, the paper's method)
# or 'signal-approximation' (offline: pitch and formants shifted toward the ambiguous range, an approximation).
# NULL for every other clip. A column rather than a wider speaker_gender CHECK: rebuilding clips with foreign
# keys on would cascade-delete its transcripts and ratings.
MIGRATION_10_NEUTRALIZED_CLIPS = """
ALTER TABLE clips ADD COLUMN neutralization TEXT
    CHECK (neutralization IN ('embedding-average', 'signal-approximation'));
"""

# Provider batch jobs and batch files (core/evaluation/batches.py, issue 14). A batch job belongs to one run: its
# requests (one row per planned (item, condition), keyed by the run's request key = the line's custom_id) wait
# here until their results are collected into `responses` like an online run's. provider 'file' is an exported
# OpenAI-format request file (vLLM's run_batch), imported back with `spokenbench import-results`.
MIGRATION_11_BATCH_JOBS = """
CREATE TABLE batch_jobs (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    provider      TEXT NOT NULL CHECK (provider IN ('openai', 'gemini', 'file')),
    model         TEXT NOT NULL,      -- PROVIDER:MODEL as the run stores it
    api_model     TEXT NOT NULL,      -- the model name sent in each request (checked on import)
    endpoint      TEXT,               -- base URL without credentials
    part          INTEGER NOT NULL DEFAULT 1,   -- parts of one submission, split by the provider's size limits
    remote_id     TEXT,               -- the provider's batch id (OpenAI) or name (Gemini 'batches/...')
    input_file    TEXT,               -- the uploaded input file's id, or the written file's path (provider 'file')
    output_file   TEXT,
    error_file    TEXT,
    state         TEXT NOT NULL,      -- submitting, pending, running, finalizing, completed, failed, expired,
                                      -- cancelling, cancelled, collected, exported, imported
    remote_state  TEXT,               -- as the provider says it
    requests      INTEGER NOT NULL,   -- lines (unique request keys)
    answered      INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    bytes         INTEGER,
    cost_usd      REAL NOT NULL DEFAULT 0,
    price_json    TEXT,               -- the batch price used for costs (USD per 1M tokens)
    max_output_tokens INTEGER,
    error         TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    collected_at  TEXT
);
CREATE INDEX batch_jobs_run ON batch_jobs(run_id);

CREATE TABLE batch_requests (
    batch_id      INTEGER NOT NULL REFERENCES batch_jobs(id) ON DELETE CASCADE,
    item_id       INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    condition_key TEXT NOT NULL,
    option_order  TEXT NOT NULL,
    request_key   TEXT NOT NULL,      -- the response-cache key; the line's custom_id / key
    context_json  TEXT NOT NULL,      -- what parsing and costing need: presented letters, option texts, estimates
    status        TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'failed')),
    error         TEXT,
    PRIMARY KEY (batch_id, item_id, condition_key)
);
CREATE INDEX batch_requests_key ON batch_requests(request_key);
""" + _change_triggers(("batch_jobs",))

# Annotator quality (core/qc/controls.py, core/qc/reliability.py, issue 24). A rating remembers how long the
# rater took (NULL for ratings made before, or merged from a pack without it). A control clip is an ordinary
# clips row (so nothing that shows or packs clips can tell it apart) whose control status lives only here: what
# it is (a corruption of a project clip, or a copy of a clip raters agreed on or a coordinator marked gold), the
# answer expected of an attentive rater, and how it was made. Controls never enter screening, sampling, exports
# or Table 3. Gold clips are the coordinator's known-good picks for known-good controls.
MIGRATION_12_ANNOTATOR_QUALITY = """
ALTER TABLE ratings ADD COLUMN seconds REAL CHECK (seconds IS NULL OR (seconds >= 0 AND seconds <= 86400));

CREATE TABLE control_clips (
    clip_id         INTEGER PRIMARY KEY REFERENCES clips(id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('mismatch', 'truncated', 'noise', 'speed', 'agreed', 'gold')),
    expected        TEXT NOT NULL CHECK (expected IN ('correct', 'incorrect')),
    source_clip_id  INTEGER REFERENCES clips(id) ON DELETE SET NULL,   -- the clip whose text (and voice) it carries
    audio_clip_id   INTEGER REFERENCES clips(id) ON DELETE SET NULL,   -- whose audio it plays (another item's, for a mismatch)
    parameters_json TEXT NOT NULL,
    created_at      TEXT NOT NULL
);

CREATE TABLE gold_clips (
    clip_id    INTEGER PRIMARY KEY REFERENCES clips(id) ON DELETE CASCADE,
    marked_by  TEXT NOT NULL CHECK (length(trim(marked_by)) > 0),
    note       TEXT,
    marked_at  TEXT NOT NULL
);
""" + _change_triggers(("control_clips", "gold_clips"))

# clip_screening is written a whole screening at a time (tens of thousands of rows) and only by core/asr/store.py;
# its per-row counter triggers took 0.3 s of storing 44,800 scores, more than the rows themselves. Those writers
# bump its counter once per statement instead (changes.count_change), and a clip's deletion, which cascades to its
# score, is counted by a trigger on clips.
MIGRATION_13_SCREENING_COUNTED_PER_STATEMENT = """
DROP TRIGGER clip_screening_insert_counted;
DROP TRIGGER clip_screening_update_counted;
DROP TRIGGER clip_screening_delete_counted;
CREATE TRIGGER clips_delete_counts_screening BEFORE DELETE ON clips
WHEN EXISTS (SELECT 1 FROM clip_screening WHERE clip_id = OLD.id) BEGIN
UPDATE change_counters SET version = version + 1 WHERE name = 'clip_screening'; END;
"""

# An import is copied into the project in short transactions (core/store/items.py, issue 28), so a rating never
# waits for a whole import's copy. Its rows are hidden while it is copied: each of its imports rows has a
# pending_imports row until one last short transaction deletes it and makes the whole import visible at once.
# Every reader that lists items reads visible_items; a dead importer's hidden rows are removed by the next import
# or when the project is opened (owner: `owner_tag()` of the importing process, then '.import'). Items that carry
# an import id are counted once by the statement that stores or publishes them (changes.count_change), not by the
# per-row trigger: 20,000 counter updates cost ~20 ms of the copy and made open screens reload at every chunk.
MIGRATION_14_PENDING_IMPORTS = """
CREATE TABLE pending_imports (
    import_id  INTEGER PRIMARY KEY REFERENCES imports(id),
    owner      TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE VIEW visible_items AS
    SELECT * FROM items WHERE import_id IS NULL OR import_id NOT IN (SELECT import_id FROM pending_imports);
DROP TRIGGER items_insert_counted;
CREATE TRIGGER items_insert_counted AFTER INSERT ON items WHEN NEW.import_id IS NULL BEGIN
UPDATE change_counters SET version = version + 1 WHERE name = 'items'; END;
"""

# A provider batch part is tagged before the provider is asked to create it (core/evaluation/batches.py): a random
# part_tag sent with it (OpenAI metadata, Gemini display name), and the job submitting it. A submitter killed after
# the provider created the batch but before its id was stored leaves a 'submitting' row without remote_id: a collect
# (or the next submit) finds that batch again by its tag once submit_job is dead, instead of paying for it twice.
MIGRATION_15_BATCH_PART_TAGS = """
ALTER TABLE batch_jobs ADD COLUMN part_tag TEXT;
ALTER TABLE batch_jobs ADD COLUMN submit_job INTEGER;
"""

# Each transcript's edit counts against its clip's text, stored with the transcript (core/asr/store.py) so
# screening gathers them instead of normalizing and counting every text again: word errors and the reference's
# words, character errors and the reference's characters (which one a clip is binned by is a screening option).
# counts_version is the normalizer version they were made with (normalize.NORMALIZER_VERSION); NULL: not counted
# (older transcripts, or counts no longer true). Triggers forget them when their clip's text or language changes,
# or the transcript's text changes without new counts (a script's UPDATE), whoever changes it — cheaper than keeping each reference beside its counts, and no edit gets past it. Writing
# the counts is not a change screens show: the transcripts' update counter watches the other columns only.
MIGRATION_16_TRANSCRIPT_COUNTS = """
ALTER TABLE transcripts ADD COLUMN counts_version INTEGER;
ALTER TABLE transcripts ADD COLUMN word_errors INTEGER;
ALTER TABLE transcripts ADD COLUMN words INTEGER;
ALTER TABLE transcripts ADD COLUMN character_errors INTEGER;
ALTER TABLE transcripts ADD COLUMN characters INTEGER;
DROP TRIGGER transcripts_update_counted;
CREATE TRIGGER transcripts_update_counted AFTER UPDATE OF clip_id, asr, model, text, created_at ON transcripts BEGIN
UPDATE change_counters SET version = version + 1 WHERE name = 'transcripts'; END;
CREATE TRIGGER clips_text_forgets_transcript_counts AFTER UPDATE OF text, language ON clips
WHEN NEW.text IS NOT OLD.text OR NEW.language IS NOT OLD.language BEGIN
UPDATE transcripts SET counts_version = NULL WHERE clip_id = NEW.id AND counts_version IS NOT NULL; END;
CREATE TRIGGER transcripts_moved_forget_counts AFTER UPDATE OF clip_id ON transcripts
WHEN NEW.clip_id IS NOT OLD.clip_id BEGIN
UPDATE transcripts SET counts_version = NULL WHERE id = NEW.id; END;
CREATE TRIGGER transcripts_text_forgets_counts AFTER UPDATE OF text ON transcripts
WHEN NEW.text IS NOT OLD.text AND NEW.counts_version IS OLD.counts_version AND NEW.word_errors IS OLD.word_errors
AND NEW.words IS OLD.words AND NEW.character_errors IS OLD.character_errors AND NEW.characters IS OLD.characters
BEGIN UPDATE transcripts SET counts_version = NULL WHERE id = NEW.id; END;
"""

# Only a provider batch's pending requests are looked up by request key (`batches.batches_holding`: a request
# waiting in a provider's batch is not sent again). A batch file's rows never are, yet keeping them in that index
# (random hashes: a page touched per row) was half the CPU of recording a batch file's rows, on the path that
# writes the file (issue 28: 20,000 rows 0.22 s against 0.11 s). Rows written from now on say which they are;
# older ones stay indexed (the default), which only costs them the space.
MIGRATION_17_FILE_ROWS_UNINDEXED = """
ALTER TABLE batch_requests ADD COLUMN file_batch INTEGER NOT NULL DEFAULT 0 CHECK (file_batch IN (0, 1));
DROP INDEX batch_requests_key;
CREATE INDEX batch_requests_key ON batch_requests(request_key) WHERE file_batch = 0;
"""

# No query selects screening scores by WER interval (sampling reads every score, the bins are counted in Python), yet
# every screening rewrites all of them and kept that index of four values up to date: ~0.03 s of a 0.4 s screening
# of 44,800 clips (issue 28).
MIGRATION_18_SCREENING_BIN_UNINDEXED = """
DROP INDEX clip_screening_bin;
"""

MIGRATIONS: list[str] = [
    MIGRATION_1_FOUNDATION,
    MIGRATION_2_AUDIO,
    MIGRATION_3_EVALUATION,
    MIGRATION_4_QC,
    MIGRATION_5_JOBS,
    MIGRATION_6_WORK_CLAIMS,
    MIGRATION_7_RATING_UNDO,
    MIGRATION_8_RATING_ORIGIN,
    MIGRATION_9_RECORDING,
    MIGRATION_10_NEUTRALIZED_CLIPS,
    MIGRATION_11_BATCH_JOBS,
    MIGRATION_12_ANNOTATOR_QUALITY,
    MIGRATION_13_SCREENING_COUNTED_PER_STATEMENT,
    MIGRATION_14_PENDING_IMPORTS,
    MIGRATION_15_BATCH_PART_TAGS,
    MIGRATION_16_TRANSCRIPT_COUNTS,
    MIGRATION_17_FILE_ROWS_UNINDEXED,
    MIGRATION_18_SCREENING_BIN_UNINDEXED,
]
SCHEMA_VERSION = len(MIGRATIONS)
# `database.schema_digest` of the schema MIGRATIONS make: opening a project of this schema compares its schema with
# this instead of building the expected one. A new migration changes it (a test says to what).
CURRENT_SCHEMA_DIGEST = "493fe036adb3454c59ba607b0083ea3a6f0fbcf9f3b2f98702a189b587424d08"
