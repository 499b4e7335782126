"""What an evaluated model is given: one item under one condition (language, accent, voice, option order,
perturbations). The condition key is the same string in assembled inputs and in responses, so every answer
maps back to the exact audio and permutation it came from.

Option orders are described by two strings over the presented letters:
- `option_order`: the original option at each presented letter ("DCBA": letter A presents original option D);
- `label_sequence`: the presented letters in the order they are spoken.
Our reading of the BiasInEar order variants (Appendix C.2, D.4):
| order           | option_order | label_sequence | spoken                      |
| original        | ABCD         | ABCD           | A:optA  B:optB  C:optC  D:optD |
| reversed        | DCBA         | ABCD           | A:optD  B:optC  C:optB  D:optA |
| order-backward  | ABCD         | DCBA           | D:optD  C:optC  B:optB  A:optA (pairs read D→A) |
| token-backward  | DCBA         | DCBA           | D:optA  C:optB  B:optC  A:optD (labels D→A over contents A→D) |
Any explicit permutation (gold-position moves, cyclic and full permutations) is read in letter order."""

from __future__ import annotations

import functools
import itertools
import json
import random
from dataclasses import asdict, dataclass

from spokenbench.core.domain.items import LETTERS
from spokenbench.core.foundation.errors import SpokenBenchError

NAMED_ORDERS = ("original", "reversed", "order-backward", "token-backward")
# The accent of a voice that speaks a language in its own single accent (espeak-ng's Arabic, Hindi, Swahili …):
# a level like 'american', so `metrics --factors accent` and the Results page group its answers instead of
# finding the factor empty.
DEFAULT_ACCENT = "default"


@functools.lru_cache(maxsize=4096)  # a plan asks it twice per item and order: 100,000s of times for a few orders
def order_strings(order: str, option_count: int) -> tuple[str, str]:
    """(option_order, label_sequence) for a named order or an explicit permutation such as 'CABD'."""
    identity = LETTERS[:option_count]
    backward = identity[::-1]
    named = {
        "original": (identity, identity),
        "reversed": (backward, identity),
        "order-backward": (identity, backward),
        "token-backward": (backward, backward),
    }
    if order in named:
        return named[order]
    permutation = order.upper()
    if sorted(permutation) != list(identity):
        raise SpokenBenchError(
            f"order '{order}' is neither one of {', '.join(NAMED_ORDERS)} nor a permutation of {identity}"
        )
    return permutation, identity


def check_order(order: str) -> str:
    """Reject a misspelt order before any work; a permutation's length is checked per item later."""
    letters = order.upper()
    if order in NAMED_ORDERS or (letters.isalpha() and letters.isascii() and len(set(letters)) == len(letters) > 1):
        return order
    raise SpokenBenchError(
        f"order '{order}' is neither one of {', '.join(NAMED_ORDERS)} nor a permutation such as CABD"
    )


def cyclic_orders(option_count: int) -> list[str]:
    """The n rotations of the original order (Hearing the Order's cyclic permutations)."""
    identity = LETTERS[:option_count]
    return [identity[shift:] + identity[:shift] for shift in range(option_count)]


def full_orders(option_count: int) -> list[str]:
    """All n! permutations."""
    return ["".join(p) for p in itertools.permutations(LETTERS[:option_count])]


def gold_position_orders(answer: str, option_count: int, seed: int | str) -> list[str]:
    """One order per position with the gold option moved there and the others shuffled (seeded per item)."""
    identity = LETTERS[:option_count]
    others = [letter for letter in identity if letter != answer]
    orders = []
    for position in range(option_count):
        rng = random.Random(f"{seed}:{answer}:{position}")
        shuffled = others[:]
        rng.shuffle(shuffled)
        orders.append("".join(shuffled[:position] + [answer] + shuffled[position:]))
    return orders


@dataclass(frozen=True)
class Condition:
    """The factors of one presentation. `order` is a name from NAMED_ORDERS or an explicit permutation."""

    language: str
    accent: str | None = None
    voice: str | None = None
    gender: str | None = None
    order: str = "original"
    spoken_labels: bool = True
    speed: float = 1.0
    volume: float = 1.0
    snr_db: float | None = None
    voice_source: str = "direct"  # or "cloned"

    def key(self) -> str:
        """Canonical JSON of the factors: stable across runs, readable in exports."""
        return json.dumps(self.factors(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def factors(self) -> dict:
        factors = asdict(self)
        factors["spoken_labels"] = "yes" if self.spoken_labels else "no"
        factors["snr_db"] = "clean" if self.snr_db is None else self.snr_db
        return factors

    @classmethod
    def from_key(cls, key: str) -> Condition:
        factors = json.loads(key)
        factors["spoken_labels"] = factors.get("spoken_labels", "yes") == "yes"
        snr = factors.get("snr_db", "clean")
        factors["snr_db"] = None if snr == "clean" else float(snr)
        return cls(**factors)
