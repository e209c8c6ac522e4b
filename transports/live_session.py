"""A session as served by this process (``LiveSession``): its protocol runner beside the live parts the
state does not hold (requests in flight, open SSE streams, followers of shared streams), and the names of
its streams.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable

from wiremcp.event_store import EventStore
from wiremcp.replica_link import ReplicaLink
from wiremcp.server import MCPServer
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.transports.channels import EventChannel, SharedChannel
from wiremcp.transports.shared_streams import STANDALONE_STREAM, Follower

DEFAULT_VERSION = "2025-03-26"
"""What a handshake-era client that sends no ``MCP-Protocol-Version`` header speaks."""


def new_stream_id() -> str:
    """A stream name unique within its session on every replica (it prefixes the stream's event ids)."""
    return "p" + secrets.token_hex(6)


class LiveSession:
    """A session as served by this process: the protocol runner plus its SSE streams."""

    __slots__ = ("_clock", "channels", "followers", "last_seen", "renewed", "session", "standalone",
                 "streams_open", "tasks")

    def __init__(self, server: MCPServer, state: SessionState, events: EventStore | None,
                 link: ReplicaLink | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        assert state.id is not None
        if link is not None and events is not None and events.shared:
            # Any replica may write the GET stream; server-wide notifications are written there by the
            # replica that published them (``SessionManager.change_published``), not through this copy.
            self.standalone: EventChannel = SharedChannel(state.id, STANDALONE_STREAM, events)
            self.session = ServerSession(server, state, request_ids=link.request_ids(), clock=clock)
        else:
            self.standalone = EventChannel(state.id, STANDALONE_STREAM, events)
            self.session = ServerSession(server, state, post=self.standalone.emit_later, clock=clock)
        self.channels: dict[str, EventChannel] = {}
        self.followers: set[Follower] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.streams_open = 0
        self._clock = clock
        self.last_seen = clock()
        """When a request last arrived, or a stream of the session last closed (requests: ``idle_since``)."""
        self.renewed = self.last_seen
        """When this process last renewed the session's expiry in a self-expiring store."""
        """When the shared store last confirmed this copy (``SessionManager.get``)."""

    @property
    def id(self) -> str:
        sid = self.session.state.id
        assert sid is not None
        return sid

    @property
    def version(self) -> str:
        """The protocol version the session speaks: the one ``initialize`` negotiated (before that answer,
        what a client that sends no ``MCP-Protocol-Version`` header speaks)."""
        return self.session.state.protocol_version or DEFAULT_VERSION

    @property
    def busy(self) -> bool:
        return bool(self.tasks) or self.streams_open > 0 or self.session.inflight > 0

    @property
    def idle_since(self) -> float:
        """Where the idle clock starts: the last request's arrival or the end of the last work, whichever
        is later (a call longer than the idle timeout is not followed by an expiry)."""
        return max(self.last_seen, self.session.settled_at)

    def spawn(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def stream_opened(self) -> None:
        self.streams_open += 1

    def stream_closed(self) -> None:
        self.streams_open -= 1
        self.last_seen = self._clock()

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for channel in self.channels.values():
            channel.close(final=True)
        self.standalone.close(final=True)
        self.close_followers()
        self.session.close()

    def close_followers(self) -> None:
        for follower in list(self.followers):
            follower.stop()

    def close_streams(self) -> None:
        """End every open stream early but resumably (the client reconnects, maybe to another replica)."""
        for channel in self.channels.values():
            channel.close()
        self.standalone.close()
        self.close_followers()
