"""``make faults``' last JSON line carries every drill's history verdict (no I/O)."""

from __future__ import annotations

from typing import Any

from drills.faults.__main__ import _failed, histories

_OK = {"operations_checked": 40, "unknown": 2, "linearizable": True}


def _line(**override: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "fuzz_decoder": {"cases": 10}, "fuzz_projector": {"linearizability": _OK},
        "projector_kills": {"linearizability": _OK}, "broker_restart": {"linearizability": _OK},
        "failover": {"linearizability": _OK}, "broker_disk_full": {"linearizability": _OK},
        "network": {"single_broker": {"linearizability": _OK},
                    "cluster": {"linearizability": _OK}},
    }  # fmt: skip
    return {**out, **override}


def test_every_drill_that_records_calls_is_summed_up() -> None:
    found = histories(_line())
    drills = {"fuzz_projector", "projector_kills", "broker_restart", "failover",
              "network_single_broker", "network_cluster", "broker_disk_full"}  # fmt: skip
    assert set(found) == drills
    assert all(v == _OK for v in found.values())


def test_a_drill_without_a_recorded_history_is_not_linearizable() -> None:
    found = histories(_line(broker_restart={"linearizability": None}))
    assert found["broker_restart"] == {"operations_checked": 0, "unknown": 0,
                                       "linearizable": False}  # fmt: skip


def test_drills_that_did_not_run_are_left_out() -> None:
    line = _line()
    for skipped in ("broker_restart", "failover", "network", "broker_disk_full"):
        del line[skipped]  # --skip-broker
    assert set(histories(line)) == {"fuzz_projector", "projector_kills"}


def test_a_drill_that_says_it_failed_fails_the_run() -> None:
    line = {**_line(), "retention": {"ok": True}, "clock": {"ok": False}}
    line["linearizability"] = histories(line)
    assert [name for name, figures in line.items() if _failed(figures)] == ["clock"]


def test_a_history_that_is_not_linearizable_fails_the_run() -> None:
    line = _line(broker_restart={"linearizability": None})
    line["linearizability"] = histories(line)
    assert [name for name, figures in line.items() if _failed(figures)] == ["linearizability"]
