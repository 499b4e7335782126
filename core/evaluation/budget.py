"""What requests cost, and the budget guard that keeps a run under its cap.

Before a request is sent its worst case is reserved: 1.5 × the estimated input plus the maximum output
tokens. A request whose reservation would push spent + reserved above the cap is not sent; the run stops
(`StopLoop("budget")`) instead of crossing it. The guarantee holds while the provider bills no more than
1.5 × our input estimate. Costs come from the usage each reply reports and the preset's (or the user's) price."""

from __future__ import annotations

import asyncio

from spokenbench.core.evaluation.adapters import ModelAdapter, ModelReply, ModelRequest
from spokenbench.core.evaluation.presets import Price
from spokenbench.core.jobs.loop import StopLoop

INPUT_RESERVE_FACTOR = 1.5
BUDGET_STOP = "budget"  # the StopLoop reason, the run's stop_reason, and the CLI's exit code 3
_SETTLE_POLL_S = 0.02


def worst_case_cost(price: Price | None, adapter: ModelAdapter, request: ModelRequest, max_output_tokens: int) -> float:
    """What the budget reserves before sending: the most this request can plausibly cost."""
    if price is None:
        return 0.0
    seconds = sum(a.seconds for a in request.audio)
    return worst_case_cost_of(
        price, adapter.estimate_tokens_of(request.system, request.user, seconds), max_output_tokens, seconds
    )


def worst_case_cost_of(price: Price, estimate: tuple[int, int], max_output_tokens: int, audio_seconds: float) -> float:
    """worst_case_cost of a request with this token estimate (ModelAdapter.estimate_tokens) and audio."""
    text_est, audio_est = estimate
    return price.cost(
        int(text_est * INPUT_RESERVE_FACTOR), int(audio_est * INPUT_RESERVE_FACTOR), max_output_tokens, audio_seconds
    )


def input_cost(price: Price | None, adapter: ModelAdapter, request: ModelRequest) -> float:
    """The estimated input alone, without any output: the least a request costs (for plans)."""
    if price is None:
        return 0.0
    seconds = sum(a.seconds for a in request.audio)
    return input_cost_of(price, adapter.estimate_tokens_of(request.system, request.user, seconds), seconds)


def input_cost_of(price: Price, estimate: tuple[int, int], audio_seconds: float) -> float:
    """input_cost of a request with this token estimate and audio."""
    return price.cost(*estimate, 0, audio_seconds)


def reply_cost(
    price: Price | None, adapter: ModelAdapter, request: ModelRequest, reply: ModelReply, max_output_tokens: int
) -> float:
    """The cost of a reply from the usage it reports; what it leaves out is estimated (output: the maximum)."""
    if price is None:
        return 0.0
    text_est, audio_est = adapter.estimate_tokens(request)
    audio_tokens = (
        reply.audio_tokens if reply.audio_tokens is not None else (audio_est if reply.input_tokens is None else 0)
    )
    input_tokens = reply.input_tokens if reply.input_tokens is not None else text_est + audio_est
    text_tokens = max(0, input_tokens - (reply.audio_tokens or 0))
    if reply.audio_tokens is None and reply.input_tokens is None:
        text_tokens = text_est
    output_tokens = reply.output_tokens if reply.output_tokens is not None else max_output_tokens
    return price.cost(text_tokens, audio_tokens, output_tokens, sum(a.seconds for a in request.audio))


class Budget:
    """Spent and reserved money of one run (across its sessions: `spent` starts at what earlier ones paid).
    Used from the event loop only."""

    def __init__(self, limit: float | None, spent: float):
        self.limit, self.spent, self.reserved = limit, spent, 0.0

    async def reserve(self, amount: float) -> float:
        """Reserve `amount` before sending; waits while in-flight requests may still free reservations, and
        raises StopLoop('budget') when even an idle run could not afford it."""
        if self.limit is None:
            return 0.0
        while True:
            if self.spent + self.reserved + amount <= self.limit + 1e-12:
                self.reserved += amount
                return amount
            if self.reserved <= 1e-12:
                raise StopLoop(BUDGET_STOP)
            await asyncio.sleep(_SETTLE_POLL_S)

    def settle(self, reservation: float, actual: float) -> None:
        """Replace a reservation by what the request really cost (0 when it was not answered)."""
        self.reserved = max(0.0, self.reserved - reservation)
        self.spent += actual
