"""Hostile input: the decoder only rejects with typed errors; the projector dead-letters it all."""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.faults.fuzz import fuzz_decoder, fuzz_projector
from drills.faults.hostile import KINDS
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics


def test_decoder_fuzz_rejects_with_typed_errors_only() -> None:
    report = fuzz_decoder(2_000, seed=7)
    assert report.crashes == []
    assert set(report.by_kind) == set(KINDS)
    assert report.rejected == report.bad_sent  # foreign tokens decode and validate fine


@pytest.mark.kafka
def test_projector_dead_letters_every_bad_record_and_never_stalls(
    settings: Settings, tmp_path: Path
) -> None:
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    report = fuzz_projector(settings, 2_000, seed=11, timeout_s=120, history_dir=tmp_path)
    assert report.crashes == []
    # Honest calls among the hostile records: answered, and their history linearizable.
    assert report.honest_calls > 0
    assert report.history is not None
    assert report.history.linearizable
    assert report.history.operations >= 2 * report.honest_calls
    assert report.stalls == 0
    assert report.bad_sent > 1_500
    assert report.dead_lettered == report.bad_sent
