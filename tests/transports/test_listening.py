"""``wiremcp.transports.listening``: a listening socket stops taking new connections while those the kernel
queued stay to be accepted, and takes them again once released (for another holder of the same socket), on
real sockets (Linux: where the socket filter exists)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import pytest

from wiremcp.transports.listening import refuse_new_connections

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the socket filter is Linux's")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock


def test_a_queued_connection_is_still_accepted_and_a_new_one_is_not_taken(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)) as early:
        early.sendall(b"POST")
        refusing = refuse_new_connections(listener)
        assert refusing is not None
        assert refusing.queued == 1
        with socket.socket() as late:
            late.settimeout(0.3)  # its handshake is never answered (the bound of a wait that must not end)
            with pytest.raises(TimeoutError):
                late.connect(("127.0.0.1", port))
        assert refusing.queued == 1  # the early one still waits, not reset

        accepted, _ = listener.accept()
        with accepted:
            assert accepted.recv(4) == b"POST"
        assert refusing.queued == 0
        refusing.release()


def test_released_the_socket_takes_connections_again_for_another_holder(listener: socket.socket) -> None:
    """uvicorn ``--fd`` and ``--workers`` share a listening socket: the process leaving gives it back whole."""
    refusing = refuse_new_connections(listener)
    assert refusing is not None
    refusing.release()
    with socket.create_connection(("127.0.0.1", listener.getsockname()[1]), timeout=2.0):
        accepted, _ = listener.accept()
        accepted.close()


def test_a_socket_that_is_not_a_tcp_one_is_left_alone() -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        refusing = refuse_new_connections(unix)
        assert refusing is None or refusing.queued == 0
        if refusing is not None:
            refusing.release()
