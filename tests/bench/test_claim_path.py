"""Pure logic of ``bench/bench_claim_path.py``: a claim's stamps split into its stages."""

from bench.bench_claim_path import STAGES, split


def _stamps(*calls: tuple[int, ...]) -> dict[str, list[object]]:
    return {
        "send": [c[1] for c in calls],
        "read": [(c[5], c[6]) for c in calls],
        "loop": [c[7] for c in calls],
        "task": [c[8] for c in calls],
    }


def test_each_stage_is_the_time_between_its_two_stamps() -> None:
    # began, sent, batch entry, fold end, published, read, read end, loop, task, ended (ns)
    one = (0, 10_000, 30_000, 40_000, 45_000, 75_000, 76_000, 80_000, 83_000, 90_000)
    two = tuple(t + 1_000_000 for t in one)
    batches = [(one[2], one[3], one[4], 1), (two[2], two[3], two[4], 1)]
    stages = split([(one[0], one[9]), (two[0], two[9])], _stamps(one, two), batches)
    expected = [10.0, 20.0, 10.0, 5.0, 30.0, 1.0, 4.0, 3.0, 7.0]
    assert [stages[name] for name in STAGES] == [[v, v] for v in expected]
    assert stages["total"] == [90.0, 90.0]


def test_the_batch_is_the_first_to_start_after_the_send() -> None:
    call = (0, 10_000, 30_000, 40_000, 45_000, 75_000, 76_000, 80_000, 83_000, 90_000)
    earlier = (5_000, 6_000, 7_000, 1)  # a batch of other records, before this send
    stages = split([(call[0], call[9])], _stamps(call), [earlier, (call[2], call[3], call[4], 1)])
    assert stages["to_projector"] == [20.0]


def test_a_call_missing_a_stamp_is_left_out() -> None:
    call = (0, 10_000, 30_000, 40_000, 45_000, 75_000, 76_000, 80_000, 83_000, 90_000)
    stamps = _stamps(call)
    stamps["loop"] = []  # answered without the hand-off being seen
    assert split([(call[0], call[9])], stamps, [(call[2], call[3], call[4], 1)]) == {}
