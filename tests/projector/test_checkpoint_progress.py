"""How far the checkpoints are folded, and who waits for it: FoldProgress. No I/O."""

from __future__ import annotations

import threading

from oncelog.projector.checkpoints import FoldProgress


def test_a_read_waits_only_for_partitions_folded_here() -> None:
    progress = FoldProgress()
    progress.hold({0}, {0: 5})
    assert progress.wait({0: 5}, 0) == {}
    assert progress.wait({0: 7}, 0) == {0: 2}  # timed out: two records still to fold
    assert progress.wait({1: 3}, 0) == {}  # folded elsewhere: not this process's to wait for
    assert progress.wait({1: 3}, 0, mine_only=False) == {1: 3}  # routed here as its owner


def test_a_partition_the_projector_holds_is_waited_for_before_the_folder_follows() -> None:
    progress = FoldProgress()
    held = [1]
    progress.follow(lambda: held)
    assert progress.wait({1: 3}, 0) == {1: 3}
    progress.hold({1}, {1: 3})  # the folder caught up with the assignment, at offset 3
    assert progress.wait({1: 3}, 0) == {}


def test_a_waiting_read_wakes_when_a_commit_gets_there() -> None:
    progress = FoldProgress()
    progress.hold({0}, {})
    answers: list[dict[int, int]] = []
    waiter = threading.Thread(target=lambda: answers.append(progress.wait({0: 10}, 60)))
    waiter.start()
    progress.advanced({0: 4})
    progress.advanced({0: 10})
    waiter.join(timeout=60)
    assert answers == [{}]


def test_positions_of_partitions_held_elsewhere_are_ignored_and_never_go_back() -> None:
    progress = FoldProgress()
    progress.hold({0}, {0: 8})
    progress.advanced({0: 6, 2: 100})
    assert progress.wait({0: 8}, 0) == {}
    assert progress.wait({2: 1}, 0, mine_only=False) == {2: 1}


def test_a_partition_is_folded_here_once_the_projector_holds_it_and_the_folder_follows() -> None:
    progress = FoldProgress()
    assigned = [1, 3]
    progress.follow(lambda: assigned)
    assert progress.await_held([1, 3], 0) == {1, 3}  # the folder has not followed yet
    progress.hold({1, 3}, {})
    assert progress.await_held([1, 3], 0) == set()
    assigned.remove(3)  # revoked: the folder still holds it for a moment
    assert progress.await_held([1, 3], 0) == {3}
    assert progress.await_held([], 0) == set()


def test_a_member_waiting_to_fold_its_partitions_wakes_when_the_folder_follows() -> None:
    progress = FoldProgress()
    progress.follow(lambda: [2])
    answers: list[frozenset[int]] = []
    waiter = threading.Thread(target=lambda: answers.append(progress.await_held([2], 60)))
    waiter.start()
    progress.hold({2}, {})
    waiter.join(timeout=60)
    assert answers == [frozenset()]
