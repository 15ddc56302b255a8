"""The audit of a forked run (issue 29): a re-run of an external effect across branches is a
double; an adopted or inherited completion, or another request, is not."""

from __future__ import annotations

from pathlib import Path

from oncelog.projector.store import Store
from oncelog.query.queries import channel_timeline, suspected_duplicates
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed

PARENT, CHILD, SIBLING = "run-a", "run-a~1", "run-a~2"


def _ran(op: Op, token: str, t: int, amount: int = 4200) -> list[tuple[object, int]]:
    params = {"order_id": "4471", "amount_cents": amount}
    return [(op.claim(token, params=params), t), (op.complete(token, {"ch": token}), t + 1)]


def test_a_rerun_in_another_branch_is_a_double_naming_the_branch_first_done(
    tmp_path: Path,
) -> None:
    charge = {c: Op(c, "charge#1") for c in (PARENT, CHILD, SIBLING)}
    records = [
        *_ran(charge[PARENT], "A", 1_000),
        # The forks: each child inherits something of the parent's (the family's record).
        (Op(CHILD, "cp-1").inherit(from_channel=PARENT), 2_000),
        (Op(SIBLING, "cp-1").inherit(from_channel=PARENT), 2_001),
        *_ran(charge[CHILD], "B", 3_000),  # per_branch, or a fork without adoption
        *_ran(charge[SIBLING], "C", 4_000, amount=5000),  # another amount: its own charge
    ]
    with Store(tmp_path / "f.duckdb") as store:
        feed(store, 0, records)  # type: ignore[arg-type]
        doubles = [d for d in suspected_duplicates(store.cursor()) if d.kind == "cross_branch"]
        timeline = channel_timeline(store.cursor(), CHILD)
    (double,) = doubles
    assert (double.channel_id, double.key_name, double.other_channel_id) == (
        CHILD,
        "charge#1",
        PARENT,
    )
    assert (double.stale_worker_id, double.stale_epoch) == ("w1", 1)
    inherit = timeline[0]
    assert (inherit.kind, inherit.outcome, inherit.from_channel, inherit.adopted) == (
        "inherit",
        "inherited",
        PARENT,
        False,
    )
    assert timeline[1].from_channel is None


def test_an_adopted_completion_is_no_double(tmp_path: Path) -> None:
    records = [
        *_ran(Op(PARENT, "charge#1"), "A", 1_000),
        (Op(CHILD, "charge#1").inherit({"ch": "A"}, from_channel=PARENT, adopted=True), 2_000),
        (Op(CHILD, "charge#1").claim("B"), 2_001),  # replayed
    ]
    with Store(tmp_path / "f.duckdb") as store:
        feed(store, 0, records)  # type: ignore[arg-type]
        assert [d.kind for d in suspected_duplicates(store.cursor())] == []
        outcomes = [e.outcome for e in channel_timeline(store.cursor(), CHILD)]
    assert outcomes == ["inherited", "replayed"]
