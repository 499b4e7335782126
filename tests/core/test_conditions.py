import pytest

from spokenbench.core.domain.conditions import (
    Condition,
    cyclic_orders,
    full_orders,
    gold_position_orders,
    order_strings,
)
from spokenbench.core.foundation.errors import SpokenBenchError


def test_named_orders_follow_our_documented_reading():
    assert order_strings("original", 4) == ("ABCD", "ABCD")
    assert order_strings("reversed", 4) == ("DCBA", "ABCD")  # position A presents option D
    assert order_strings("order-backward", 4) == ("ABCD", "DCBA")
    assert order_strings("token-backward", 4) == ("DCBA", "DCBA")
    assert order_strings("cabd", 4) == ("CABD", "ABCD")
    with pytest.raises(SpokenBenchError, match="permutation of ABCD"):
        order_strings("AABC", 4)


def test_permutation_strategies():
    assert cyclic_orders(4) == ["ABCD", "BCDA", "CDAB", "DABC"]
    assert len(full_orders(4)) == 24 and len(set(full_orders(4))) == 24
    orders = gold_position_orders("C", 4, seed="item-7")
    assert [order.index("C") for order in orders] == [0, 1, 2, 3]
    assert all(sorted(o) == list("ABCD") for o in orders)
    assert orders == gold_position_orders("C", 4, seed="item-7")  # seeded


def test_condition_key_round_trips_and_is_canonical():
    condition = Condition("en", "british", "Orus", "male", "reversed", speed=1.25, snr_db=10.0)
    assert Condition.from_key(condition.key()) == condition
    assert condition.key() == Condition(**{**condition.__dict__}).key()
    assert '"snr_db":"clean"' in Condition("ko").key()
