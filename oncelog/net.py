"""Loopback networking the broker, the projector processes, the drills and the tests share."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port free on loopback right now (the OS picks it; another process may take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
