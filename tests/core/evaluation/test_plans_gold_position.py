"""The gold-position plan (Hearing the Order) asks each input once: when an item's gold-at-p order is the
identity, `wanted_orders` keeps the original order only, the response is keyed by the original condition,
and the metrics reuse that answer in the gold-at-p setting (issue 13, item 1)."""

import pandas as pd
from eval_support import add_assembled, add_items

from spokenbench.core.domain.conditions import Condition, gold_position_orders, order_strings
from spokenbench.core.domain.items import LETTERS
from spokenbench.core.evaluation.plans import PlanOptions, build_plan, wanted_orders
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import presentations

SEED = 9  # item q0 (gold B): its gold-at-B order comes out as ABCD, the original order; q1's does not
OPTIONS = PlanOptions(mode="text", orders=("original",), permutations="gold-position", seed=SEED)


def test_the_seed_makes_q0s_gold_at_b_order_the_identity():
    assert gold_position_orders("B", 4, f"{SEED}:q0")[1] == "ABCD"
    assert "ABCD" not in gold_position_orders("B", 4, f"{SEED}:q1")


def test_wanted_orders_drops_the_identity_duplicate(project):
    add_items(project, 2)
    plan = build_plan(project.conn, OPTIONS)
    q0 = next(item for item in plan.items.values() if item.source_id == "q0")
    orders = wanted_orders(q0, OPTIONS)
    assert orders[0] == "original" and "ABCD" not in orders and len(orders) == 4  # not 5
    assert len({order_strings(o, 4) for o in orders}) == 4


def plan_table(plan) -> pd.DataFrame:
    """The responses table the plan's requests would give, every answer right (presented letter of the gold)."""
    rows = []
    for request in plan.requests:
        item = plan.items[request.item_id]
        rows.append(
            {
                "question_id": item.source_id,
                "model": "m",
                "answer": item.answer,
                "prediction": LETTERS[request.option_order.index(item.answer)],
                "option_order": request.option_order,
                "order": request.condition.order,
            }
        )
    return pd.DataFrame(rows)


def test_the_plan_asks_each_input_once_and_every_question_is_at_every_position(project):
    add_items(project, 2)
    plan = build_plan(project.conn, OPTIONS)
    assert len(plan.requests) == 4 + 5  # q0: original + 3 moved orders; q1: original + 4 moved orders
    inputs = [(r.item_id, r.option_order, r.label_sequence, r.condition.spoken_labels) for r in plan.requests]
    assert len(set(inputs)) == len(inputs)  # no input asked twice
    keys = [(r.item_id, r.condition_key) for r in plan.requests]
    assert len(set(keys)) == len(keys)  # responses are keyed by (item, condition): one per request
    [identity] = [r for r in plan.requests if plan.items[r.item_id].source_id == "q0" and r.option_order == "ABCD"]
    assert identity.condition.order == "original"  # keyed by the original condition
    # the metrics put each question once at each gold position: q0's original answer is its gold-at-B answer
    data = prepare_mcq(plan_table(plan), ["order"])
    shown = presentations(data)
    for position in range(4):
        rows = shown.gold_setting & (data.gold_position == position)
        assert sorted(data.questions[q] for q in data.question[rows]) == ["q0", "q1"], position
    assert [data.questions[q] for q in data.question[shown.reused_original]] == ["q0"]


def test_assembled_audio_is_matched_once_per_presentation(project):
    # audio mode: the inputs assembled for the original order and q0's three other gold-position orders; the
    # identity gold-at-B order finds the original input, asked once
    [item_id] = add_items(project, 1)
    for order in ["original", *[o for o in gold_position_orders("B", 4, f"{SEED}:q0") if o != "ABCD"]]:
        add_assembled(project, item_id, Condition(language="en", accent="american", voice="Zephyr", order=order))
    plan = build_plan(
        project.conn, PlanOptions(mode="audio", orders=("original",), permutations="gold-position", seed=SEED)
    )
    assert len(plan.requests) == 4
    assert len({r.input_id for r in plan.requests}) == 4
    assert sorted(r.option_order.index("B") for r in plan.requests) == [0, 1, 2, 3]
