"""Calling paid remote APIs (openai, google-genai and OpenAI-compatible servers) safely and politely.

Shared by every part of the tool that talks to a model API (evaluation, TTS, ASR, rewriting):
- `classify_error` turns any SDK or transport exception into retryable / fatal / auth, with the server's
  wait hint (OpenAI's `retry-after-ms` / `retry-after` headers, Gemini's `google.rpc.RetryInfo.retryDelay`
  in the error body);
- `ProviderLimiter` holds one provider's concurrency, requests-per-minute and tokens-per-minute budgets
  and a shared cool-down after a 429, so one slow-down pauses every request to that provider;
- `call_with_retries` runs one async call through the limiter with exponential backoff and jitter.

The SDKs' own retries are switched off (openai `max_retries=0`; google-genai retries nothing by default)
so that retries happen here once, with the server's wait honoured. Secrets never appear in an error we
raise: every message passes through `redact`."""

from __future__ import annotations

import asyncio
import email.utils
import enum
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote_plus

from spokenbench.core.foundation.errors import SpokenBenchError

log = logging.getLogger("spokenbench.remote")
T = TypeVar("T")

# The ranges every remote-calling command and run setting shares (CLI option types and `prepare_evaluation` check
# them): beyond them every request would fail or the run would hammer the provider.
# One set of defaults for every remote call (rewrite, transcribe, evaluate; the CLI's options and the app's settings):
# 8 requests in flight and 6 attempts suit every provider we meet; 300 s lets a reasoning model (rewrite's
# gpt-oss-120b, a thinking audio model) or a long clip finish, while a hung connection is still retried.
DEFAULT_CONCURRENCY = 8
DEFAULT_ATTEMPTS = 6
DEFAULT_TIMEOUT_S = 300.0
MAX_CONCURRENCY = 256
MAX_ATTEMPTS = 20
MAX_TIMEOUT_S = 3600.0
MAX_SERVER_WAIT_S = 300.0  # a Retry-After beyond this is treated as "give up on this request for now"


class ErrorKind(enum.Enum):
    RETRYABLE = "retryable"  # 429, 408, 409, 5xx, timeouts, dropped connections, a garbled 200
    FATAL = "fatal"  # this request cannot succeed as sent (400, 404, 413, 422, ...); record it and move on
    AUTH = "auth"  # 401/403: every further request would fail too; stop the whole job


@dataclass(frozen=True)
class ClassifiedError:
    kind: ErrorKind
    message: str  # short, redacted, suitable for storing with the response
    status: int | None = None
    wait_s: float | None = None  # the server's own wait hint, when it gave one
    rate_limited: bool = False


class RemoteAuthError(SpokenBenchError):
    """The provider rejected the credentials; raised once, stops the job."""


class RemoteCallFailed(Exception):
    """A request failed for good (fatal error, or retries exhausted). Carries the classification."""

    def __init__(self, error: ClassifiedError, attempts: int):
        super().__init__(error.message)
        self.error = error
        self.attempts = attempts


# --------------------------------------------------------------------------------------------------
# Secrets


_KEY_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI-style
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"\bnvapi-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}"),
    re.compile(r"(?i)(key=)[A-Za-z0-9._\-]{8,}"),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove every given secret, and anything shaped like a well-known API key, from `text`."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.re.groups else "") + "[redacted]", text)
    return text


_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s\"'<>]*")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#@]*@")
REDACTED = "[redacted]"


# Query parameters known to carry no secret, kept as given; every other value is redacted: a secret under a name
# no list foresees (`?sessionid=`, `?s=`) must not be stored either.
_SAFE_PARAMS = frozenset({"api_version", "version", "model", "region", "alt", "format"})


def _secret_param(name: str) -> bool:
    name = name.lower().replace("-", "_")
    return name not in _SAFE_PARAMS


def _clean_url(url: str) -> tuple[str, list[str]]:
    """(the URL without credentials, the credentials it carried)."""
    found: list[str] = []
    head = _USERINFO.match(url)
    if head:
        userinfo = url[len(head.group(1)) : head.end() - 1]
        user, colon, password = userinfo.partition(":")
        found.extend(filter(None, [password if colon else user]))  # the password, or a token given as user name
        url = head.group(1) + url[head.end() :]
    base, mark, rest = url.partition("?")
    if not mark:
        return url, found
    query, hash_mark, fragment = rest.partition("#")
    pairs = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if equals and value and _secret_param(unquote_plus(name)):
            found.append(value)
            if unquote_plus(value) != value:
                found.append(unquote_plus(value))
            value = REDACTED
        pairs.append(f"{name}{equals}{value}")
    return f"{base}?{'&'.join(pairs)}{hash_mark}{fragment}", found


def strip_url_credentials(url: str | None) -> str | None:
    """Every URL in `url` without its credentials: `https://user:pass@host/v1?api_key=S&x=1` →
    `https://host/v1?api_key=[redacted]&x=[redacted]` (every query value but those of _SAFE_PARAMS). Base URLs are stored with runs (parameters, cache keys) and
    commands with jobs (also as `--base-url=URL`), credentials never; the rest of the URL is kept as it is."""
    if not url:
        return url
    return _URL.sub(lambda match: _clean_url(match.group(0))[0], url)


_LIBRARY_LOGGER_PREFIXES = ("httpx", "httpcore", "openai", "google_genai", "google.genai", "mistralai")


class _LibraryLogRedaction(logging.Filter):
    """Scrubs registered secrets from the records of the HTTP and SDK libraries' own loggers (httpx logs
    every request's full URL at INFO, query string included)."""

    def __init__(self):
        super().__init__("spokenbench-redaction")
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a malformed record is the library's business
                return True
            cleaned = redact(message, self.secrets)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return True


_library_redaction = _LibraryLogRedaction()


def hide_in_library_logs(secrets: Iterable[str]) -> None:
    """Keep `secrets` out of what httpx, httpcore and the SDKs log (for this process's lifetime). Call it after
    the SDK is imported: the filter goes on every library logger that exists by then."""
    _library_redaction.secrets.update(secret for secret in secrets if secret and len(secret) >= 4)
    if not _library_redaction.secrets:
        return
    names = [name for name in logging.root.manager.loggerDict if name.startswith(_LIBRARY_LOGGER_PREFIXES)]
    for name in {*names, *_LIBRARY_LOGGER_PREFIXES}:
        library_logger = logging.getLogger(name)
        if _library_redaction not in library_logger.filters:
            library_logger.addFilter(_library_redaction)


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials a URL carries (user-info password, secret-looking query values): for `redact`, so an
    error message quoting the URL does not leak them."""
    if not url:
        return ()
    return tuple(secret for match in _URL.finditer(url) for secret in _clean_url(match.group(0))[1])


# --------------------------------------------------------------------------------------------------
# Classification


def classify_error(error: BaseException, secrets: Iterable[str] = ()) -> ClassifiedError:
    """Classify an exception from openai, google-genai, httpx2 or the runtime. Unknown exceptions are fatal
    for the request (a bug or an unexpected reply must not be retried forever) but never stop a whole job."""
    secrets = tuple(secrets)

    def done(
        kind: ErrorKind, message: str, status: int | None = None, wait: float | None = None, rate_limited: bool = False
    ) -> ClassifiedError:
        return ClassifiedError(kind, redact(_shorten(message), secrets), status, wait, rate_limited)

    status = _status_code(error)
    if status is not None:
        wait = _wait_hint(error)
        detail = _error_detail(error)
        text = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
        if status in (401, 403):
            return done(ErrorKind.AUTH, text, status)
        if status == 429:
            return done(ErrorKind.RETRYABLE, text, status, wait, rate_limited=True)
        if status in (408, 409, 425) or status >= 500:
            return done(ErrorKind.RETRYABLE, text, status, wait)
        return done(ErrorKind.FATAL, text, status)
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)) or _is_named(error, ("Timeout",)):
        return done(ErrorKind.RETRYABLE, f"timed out ({type(error).__name__})")
    if _is_named(
        error,
        (
            "ConnectionError",
            "ConnectError",
            "NetworkError",
            "ReadError",
            "WriteError",
            "RemoteProtocolError",
            "ProtocolError",
            "CloseError",
            "ServerDisconnected",
        ),
    ) or isinstance(error, ConnectionError):
        return done(ErrorKind.RETRYABLE, f"connection failed ({type(error).__name__}: {error})")
    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)) or _is_named(
        error, ("APIResponseValidationError", "ValidationError", "DecodingError", "MalformedReply")
    ):
        # A 200 whose body is not the JSON the SDK expects: usually a proxy or an overloaded server.
        return done(ErrorKind.RETRYABLE, f"malformed reply ({type(error).__name__}: {error})")
    return done(ErrorKind.FATAL, f"{type(error).__name__}: {error}")


def _is_named(error: BaseException, fragments: tuple[str, ...]) -> bool:
    names = [cls.__name__ for cls in type(error).__mro__]
    return any(fragment in name for name in names for fragment in fragments)


def _status_code(error: BaseException) -> int | None:
    # openai.APIStatusError has .status_code; google.genai.errors.APIError has .code (an int, or a websocket code).
    for attribute in ("status_code", "code"):
        value = getattr(error, attribute, None)
        if isinstance(value, int) and 100 <= value <= 599 and _has_response_shape(error):
            return value
    return None


def _has_response_shape(error: BaseException) -> bool:
    return hasattr(error, "response") or hasattr(error, "details") or hasattr(error, "body")


def _error_detail(error: BaseException) -> str:
    message = getattr(error, "message", None)
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body) if isinstance(body.get("error", body), dict) else body
        message = inner.get("message") or message
    if not message:
        message = str(error)
    return str(message)


def _wait_hint(error: BaseException) -> float | None:
    """The server's requested wait in seconds: headers first (OpenAI-style), then Gemini's RetryInfo."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        wait = parse_retry_after(headers)
        if wait is not None:
            return wait
    details = getattr(error, "details", None)
    if details is None:
        details = getattr(error, "body", None)
    return retry_delay_from_body(details)


def parse_retry_after(headers: Any) -> float | None:
    """`retry-after-ms` (milliseconds), else `retry-after` (seconds or an HTTP date)."""
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000.0)
        value = headers.get("retry-after")
    except (AttributeError, ValueError, TypeError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay_from_body(body: Any) -> float | None:
    """Gemini puts the wait only in the body: error.details[] of type google.rpc.RetryInfo, retryDelay '53s'."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error", body)
    details = inner.get("details") if isinstance(inner, dict) else None
    if not isinstance(details, list):
        return None
    for entry in details:
        if isinstance(entry, dict) and str(entry.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = entry.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return max(0.0, float(delay[:-1]))
                except ValueError:
                    return None
            if isinstance(delay, dict):  # {"seconds": 53, "nanos": 0}
                return float(delay.get("seconds", 0)) + float(delay.get("nanos", 0)) / 1e9
    return None


def _shorten(text: str, limit: int = 500) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------------
# Limits


@dataclass
class RetryPolicy:
    max_attempts: int = DEFAULT_ATTEMPTS
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    jitter: float = 0.25  # ± fraction of the delay

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Delay before attempt `attempt + 1` (attempt counts from 1): exponential, capped, jittered."""
        delay = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        return max(0.0, delay * (1 + rng.uniform(-self.jitter, self.jitter)))


class _RateWindow:
    """A token bucket refilled continuously at `per_minute / 60` per second, holding at most one minute."""

    def __init__(self, per_minute: float | None):
        self.per_minute = per_minute
        self.level = float(per_minute or 0)
        self.stamp = time.monotonic()

    def delay_for(self, amount: float) -> float:
        if not self.per_minute:
            return 0.0
        now = time.monotonic()
        self.level = min(self.per_minute, self.level + (now - self.stamp) * self.per_minute / 60.0)
        self.stamp = now
        amount = min(amount, self.per_minute)  # a request bigger than the whole budget still goes, alone
        if self.level >= amount:
            self.level -= amount
            return 0.0
        missing = amount - self.level
        self.level -= amount  # borrow: later callers queue behind this one
        return missing * 60.0 / self.per_minute


@dataclass
class ProviderLimiter:
    """One provider's limits, shared by all requests to it in this process."""

    name: str
    concurrency: int = DEFAULT_CONCURRENCY
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    _semaphore: asyncio.Semaphore | None = field(default=None, repr=False)
    _requests: _RateWindow | None = field(default=None, repr=False)
    _tokens: _RateWindow | None = field(default=None, repr=False)
    _cooldown_until: float = 0.0
    _lock: asyncio.Lock | None = field(default=None, repr=False)

    def __post_init__(self):
        self._requests = _RateWindow(self.requests_per_minute)
        self._tokens = _RateWindow(self.tokens_per_minute)

    def _ensure_loop_objects(self) -> None:
        # Created lazily so a limiter can be built outside the event loop that uses it.
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(max(1, self.concurrency))
            self._lock = asyncio.Lock()

    def cool_down(self, seconds: float) -> None:
        """Pause every request to this provider for `seconds` (after a 429)."""
        self._cooldown_until = max(self._cooldown_until, time.monotonic() + seconds)

    async def acquire(self, tokens: float = 0.0) -> None:
        self._ensure_loop_objects()
        await self._semaphore.acquire()
        try:
            async with self._lock:
                wait = max(self._requests.delay_for(1), self._tokens.delay_for(tokens) if tokens else 0.0)
            wait = max(wait, self._cooldown_until - time.monotonic())
            if wait > 0:
                await asyncio.sleep(wait)
            while (remaining := self._cooldown_until - time.monotonic()) > 0:  # a 429 arrived meanwhile
                await asyncio.sleep(remaining)
        except BaseException:
            self._semaphore.release()
            raise

    def release(self) -> None:
        self._semaphore.release()


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    limiter: ProviderLimiter,
    policy: RetryPolicy | None = None,
    *,
    tokens: float = 0.0,
    secrets: Iterable[str] = (),
    rng: random.Random | None = None,
    on_retry: Callable[[int, ClassifiedError, float], None] | None = None,
) -> tuple[T, int]:
    """Run `call` under `limiter`, retrying retryable failures. Returns (result, attempts).
    Raises RemoteAuthError on an authentication failure and RemoteCallFailed when the request fails for good.
    Cancellation (asyncio.CancelledError) passes straight through, also during a backoff sleep."""
    policy = policy or RetryPolicy()
    secrets = tuple(secrets)
    attempt = 0
    while True:
        attempt += 1
        await limiter.acquire(tokens)
        try:
            result = await call()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - every failure is classified below
            classified = classify_error(error, secrets)
        else:
            return result, attempt
        finally:
            limiter.release()
        if classified.kind is ErrorKind.AUTH:
            raise RemoteAuthError(
                f"{limiter.name} rejected the API key ({classified.message}); check the key and try again"
            ) from None
        if classified.kind is ErrorKind.FATAL or attempt >= policy.max_attempts:
            raise RemoteCallFailed(classified, attempt)
        if classified.wait_s is not None and classified.wait_s > MAX_SERVER_WAIT_S:
            raise RemoteCallFailed(classified, attempt)
        if rng is None:  # made on the first retry: seeding one from the OS costs ~15-40 µs, paid per call before
            rng = random.Random()
        delay = policy.backoff(attempt, rng)
        if classified.wait_s is not None:
            delay = max(delay, classified.wait_s)
        if classified.rate_limited:
            limiter.cool_down(delay)
        log.info("%s: attempt %d failed (%s); retrying in %.1f s", limiter.name, attempt, classified.message, delay)
        if on_retry is not None:
            on_retry(attempt, classified, delay)
        await asyncio.sleep(delay)
