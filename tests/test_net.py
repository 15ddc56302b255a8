"""The one free-port helper the broker, the projector processes, drills and tests share."""

from __future__ import annotations

import socket

from oncelog.net import free_port


def test_free_port_can_be_bound_on_loopback() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # nothing holds it after the helper returned
