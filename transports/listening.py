"""Closing a listening socket without resetting the connections the kernel has already taken for it.

A client's connection is established (its ``connect`` returns, its request goes out) as soon as the kernel
completes the handshake, before the server accepts it. Closing a listening socket resets every connection
still waiting in its accept queue: a balancer that had just written a POST on one answers its client 502,
and, rightly, does not send the POST again. So a replica leaving stops the kernel from taking new connections
first (Linux: a socket filter that drops every new handshake; the balancer's connect is then refused once the
socket is closed, which it may safely try on another replica), lets the server accept what is queued, and
only then closes the socket. Elsewhere the filter is not available, and the socket closes as it did before.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import socket
import struct
import sys
from typing import Any

log = logging.getLogger("wiremcp.drain")

_SO_ATTACH_FILTER = 26  # Linux
_SO_DETACH_FILTER = 27
_DROP_EVERYTHING = struct.pack("HBBI", 0x06, 0, 0, 0)
"""Classic BPF, one instruction: ``ret #0`` (keep none of the packet: drop it)."""
_TCP_INFO_SIZE = 104
_QUEUED_AT = 8 + 4 * 4
"""Where ``tcpi_unacked`` is in ``struct tcp_info``: for a listening socket, its accept queue's length."""


def _own(sock: Any) -> socket.socket | None:
    """A socket object of our own on the same listening socket (asyncio and uvloop hand out wrappers)."""
    try:
        return socket.fromfd(sock.fileno(), socket.AF_INET, socket.SOCK_STREAM)
    except (OSError, ValueError, AttributeError):
        return None


class Refusing:
    """A listening socket taking no new connection (``refuse_new_connections``), through a handle of our own
    on it. The socket may be shared (uvicorn ``--fd``, ``--workers``, socket activation): once this process
    has closed its own, ``release`` lets the socket take connections again for whoever else holds it."""

    __slots__ = ("_own",)

    def __init__(self, own: socket.socket) -> None:
        self._own = own

    @property
    def queued(self) -> int:
        """How many connections wait in the socket's accept queue (0 where unknown)."""
        try:
            info = self._own.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
        except (OSError, AttributeError):
            return 0
        return int(struct.unpack_from("I", info, _QUEUED_AT)[0]) if len(info) >= _QUEUED_AT + 4 else 0

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self._own.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
        self._own.close()


def refuse_new_connections(sock: Any) -> Refusing | None:
    """Have the kernel take no new connection for the listening socket ``sock`` (the handshakes of those
    already queued are complete: they stay to be accepted); None where it cannot be done (not Linux, or
    not a TCP socket)."""
    if not sys.platform.startswith("linux"):
        return None
    own = _own(sock)
    if own is None:
        return None
    program = ctypes.create_string_buffer(_DROP_EVERYTHING)
    fprog = struct.pack("HP", 1, ctypes.addressof(program))  # struct sock_fprog; the kernel copies it
    try:
        own.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
    except OSError as exc:
        log.debug("could not stop new connections on the listening socket: %s", exc)
        own.close()
        return None
    return Refusing(own)
