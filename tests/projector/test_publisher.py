"""A dead letter's headers say where it came from and why, with the message cut short."""

from __future__ import annotations

from oncelog.projector.publisher import dead_letter_headers
from oncelog.projector.store import DeadLetter


def test_a_dead_letter_names_its_source_and_its_error() -> None:
    dead = DeadLetter("t.requests", 2, 41, 1_000, "codec_error", "not Avro", 7)
    assert dead_letter_headers(dead) == [
        ("source_topic", b"t.requests"),
        ("source_partition", b"2"),
        ("source_offset", b"41"),
        ("error_code", b"codec_error"),
        ("error", b"not Avro"),
    ]


def test_a_long_error_message_is_cut_at_4096_bytes() -> None:
    dead = DeadLetter("t.requests", 0, 0, 0, "codec_error", "é" * 3000, 1)  # 6000 bytes
    error = dict(dead_letter_headers(dead))["error"]
    assert error == ("é" * 3000).encode()[:4096]
    assert len(error) == 4096
