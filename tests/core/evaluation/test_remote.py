"""core.jobs.remote: error classification of the real SDKs' exceptions (raised by talking to the stub), waits,
retries and limits."""

import asyncio
import random
import time

import pytest
from model_stub import Scripted

from spokenbench.core.jobs.remote import (
    ErrorKind,
    ProviderLimiter,
    RemoteAuthError,
    RemoteCallFailed,
    RetryPolicy,
    call_with_retries,
    classify_error,
    parse_retry_after,
    redact,
    retry_delay_from_body,
    strip_url_credentials,
    url_secrets,
)

KEY = "sk-remote-test-0123456789abcdef"


def _openai_error(stub, scripted, timeout=5.0):
    from openai import AsyncOpenAI

    stub.script(scripted)

    async def call():
        client = AsyncOpenAI(api_key=KEY, base_url=stub.openai_url, max_retries=0, timeout=timeout)
        try:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        except Exception as error:  # noqa: BLE001
            return error
        finally:
            await client.close()

    return asyncio.run(call())


def _gemini_error(stub, scripted, timeout_ms=5000):
    from google import genai
    from google.genai import types

    stub.script(scripted)

    async def call():
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=stub.gemini_url, timeout=timeout_ms))
        try:
            await client.aio.models.generate_content(model="gemini-2.5-flash", contents="hi")
        except Exception as error:  # noqa: BLE001
            return error
        finally:
            await client.aio.aclose()

    return asyncio.run(call())


@pytest.mark.parametrize(
    "scripted, kind, status, wait",
    [
        (Scripted("429", retry_after=7), ErrorKind.RETRYABLE, 429, 7.0),
        (Scripted("500"), ErrorKind.RETRYABLE, 500, None),
        (Scripted("401"), ErrorKind.AUTH, 401, None),
        (Scripted("400"), ErrorKind.FATAL, 400, None),
        (Scripted("malformed"), ErrorKind.RETRYABLE, None, None),
    ],
)
def test_openai_errors(stub, scripted, kind, status, wait):
    classified = classify_error(_openai_error(stub, scripted), secrets=[KEY])
    assert (classified.kind, classified.status, classified.wait_s) == (kind, status, wait)
    assert KEY not in classified.message
    assert classified.rate_limited == (status == 429)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scripted, kind, status, wait",
    [
        (Scripted("429", retry_after=53), ErrorKind.RETRYABLE, 429, 53.0),
        (Scripted("500"), ErrorKind.RETRYABLE, 500, None),
        (Scripted("401"), ErrorKind.AUTH, 401, None),
        (Scripted("400"), ErrorKind.FATAL, 400, None),
        (Scripted("malformed"), ErrorKind.RETRYABLE, None, None),
    ],
)
def test_gemini_errors(stub, scripted, kind, status, wait):
    classified = classify_error(_gemini_error(stub, scripted), secrets=[KEY])
    assert (classified.kind, classified.status, classified.wait_s) == (kind, status, wait)
    assert KEY not in classified.message


def test_timeouts_are_retryable(stub):
    assert classify_error(_openai_error(stub, Scripted("timeout", hang_s=1.0), timeout=0.2)).kind is ErrorKind.RETRYABLE
    assert (
        classify_error(_gemini_error(stub, Scripted("timeout", hang_s=1.0), timeout_ms=200)).kind is ErrorKind.RETRYABLE
    )


def test_connection_refused_is_retryable():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    from openai import AsyncOpenAI

    async def call():
        client = AsyncOpenAI(api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=2)
        try:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        except Exception as error:  # noqa: BLE001
            return error
        finally:
            await client.close()

    assert classify_error(asyncio.run(call())).kind is ErrorKind.RETRYABLE


def test_wait_hints():
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None
    body = {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "53s"}]}}
    assert retry_delay_from_body(body) == 53.0
    assert retry_delay_from_body({"error": {"details": []}}) is None


def test_redaction():
    assert redact(f"bad key {KEY} here", [KEY]) == "bad key [redacted] here"
    assert "AIza" not in redact("key AIzaSyA1234567890abcdefghijklmnop")
    assert "secret-token-123" not in redact("Authorization: Bearer secret-token-123")
    assert strip_url_credentials("https://user:pw@host/v1") == "https://host/v1"


@pytest.mark.parametrize(
    "url, stored",
    [
        ("https://h/v1?sessionid=S3SS10N", "https://h/v1?sessionid=[redacted]"),
        (
            "https://h/v1?s=abc&u=me&api-version=2024-10-21",
            "https://h/v1?s=[redacted]&u=[redacted]&api-version=2024-10-21",
        ),
        ("https://h/v1?Model=m&region=eu&format=json", "https://h/v1?Model=m&region=eu&format=json"),
    ],
)
def test_every_query_value_is_redacted_unless_its_name_is_known_safe(url, stored):
    """Issue 23: a secret under a name no list foresees (`?sessionid=`) was stored; only known-safe names stay."""
    assert strip_url_credentials(url) == stored
    assert "S3SS10N" not in strip_url_credentials(f"--base-url={url}")


@pytest.mark.parametrize(
    "url, stored, secrets",
    [
        ("https://user:pw@host/v1", "https://host/v1", ("pw",)),
        ("https://tok123@host/v1", "https://host/v1", ("tok123",)),
        (
            "http://h:1/v1?api_key=S3CR3T&model=m#top",
            "http://h:1/v1?api_key=[redacted]&model=m#top",
            ("S3CR3T",),
        ),
        (
            "https://h/v1?key=k1&token=t1&access_token=a1&sig=s1&Signature=s2&password=p1&client_secret=c1&apikey=x1",
            "https://h/v1?key=[redacted]&token=[redacted]&access_token=[redacted]&sig=[redacted]&Signature=[redacted]"
            "&password=[redacted]&client_secret=[redacted]&apikey=[redacted]",
            ("k1", "t1", "a1", "s1", "s2", "p1", "c1", "x1"),
        ),
        (
            "https://h/v1?X-Amz-Signature=a%2Bb&region=eu",
            "https://h/v1?X-Amz-Signature=[redacted]&region=eu",
            ("a%2Bb", "a+b"),
        ),
        # inside a command-line argument, as the jobs table stores a command
        ("--base-url=https://h/v1?token=T0K", "--base-url=https://h/v1?token=[redacted]", ("T0K",)),
        ("https://h/v1?model=m&sig=", "https://h/v1?model=m&sig=", ()),  # nothing to hide, nothing changed
        ("not a url?key=1", "not a url?key=1", ()),  # only URLs are touched
    ],
)
def test_urls_are_stored_without_credentials(url, stored, secrets):
    """A token in a base URL's query string would otherwise be stored verbatim with the run and the job."""
    assert strip_url_credentials(url) == stored
    assert url_secrets(url) == secrets
    assert strip_url_credentials(stored) == stored  # idempotent: a stored URL is cleaned again unchanged


class _Flaky:
    def __init__(self, failures):
        self.failures, self.calls = list(failures), 0

    async def __call__(self):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def test_call_with_retries_backs_off_and_honours_the_wait():
    class Status(Exception):
        def __init__(self, code, wait=None):
            self.status_code, self.response = (
                code,
                type("R", (), {"headers": {"retry-after": str(wait)} if wait else {}})(),
            )

    flaky = _Flaky([Status(429, 0.2), Status(503)])
    limiter = ProviderLimiter("p", concurrency=2)
    started = time.monotonic()
    result, attempts = asyncio.run(
        call_with_retries(flaky, limiter, RetryPolicy(base_delay_s=0.01), rng=random.Random(1))
    )
    assert (result, attempts, flaky.calls) == ("ok", 3, 3) and time.monotonic() - started >= 0.2
    with pytest.raises(RemoteCallFailed) as failed:
        asyncio.run(
            call_with_retries(_Flaky([Status(500)] * 5), limiter, RetryPolicy(max_attempts=3, base_delay_s=0.001))
        )
    assert failed.value.attempts == 3
    with pytest.raises(RemoteAuthError):
        asyncio.run(call_with_retries(_Flaky([Status(401)]), limiter))
    fatal = _Flaky([Status(400)])
    with pytest.raises(RemoteCallFailed):
        asyncio.run(call_with_retries(fatal, limiter))
    assert fatal.calls == 1


def test_backoff_is_exponential_capped_and_jittered():
    policy = RetryPolicy(base_delay_s=1, max_delay_s=8, jitter=0.25)
    rng = random.Random(0)
    delays = [policy.backoff(n, rng) for n in range(1, 7)]
    assert 0.75 <= delays[0] <= 1.25 and 1.5 <= delays[1] <= 2.5 and all(d <= 10 for d in delays[3:])


def test_requests_per_minute_limit_spaces_requests():
    limiter = ProviderLimiter("p", concurrency=10, requests_per_minute=600)  # 10 per second, one minute of burst

    async def go():
        limiter._requests.level = 0  # start empty: every request waits for its share
        started = time.monotonic()
        for _ in range(4):
            await limiter.acquire()
            limiter.release()
        return time.monotonic() - started

    assert 0.3 <= asyncio.run(go()) < 1.0


def test_cool_down_after_429_pauses_the_provider():
    limiter = ProviderLimiter("p", concurrency=4)

    async def go():
        limiter.cool_down(0.3)
        started = time.monotonic()
        await limiter.acquire()
        limiter.release()
        return time.monotonic() - started

    assert asyncio.run(go()) >= 0.28


def test_concurrency_limit():
    limiter = ProviderLimiter("p", concurrency=3)
    active, peak = 0, 0

    async def one():
        nonlocal active, peak
        await limiter.acquire()
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        limiter.release()

    async def go():
        await asyncio.gather(*(one() for _ in range(20)))

    asyncio.run(go())
    assert peak == 3
