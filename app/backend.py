"""Where the replicas serving one server keep what they share: ``Backend``, one bundle of the shared-state
interfaces, and its in-memory implementation (``Backend.in_memory``, the default).

A backend is seven stores and, when more than one process serves, the link between them:

=================  ==================================  ==============================================
field              interface                           what it keeps
=================  ==================================  ==============================================
``sessions``       ``wiremcp.session_store``           handshake-era session state
``events``         ``wiremcp.event_store``             the events of each session's streams (resumption)
``tasks``          ``wiremcp.tasks``                   tasks and their results
``bus``            ``wiremcp.subscriptions``           change events for ``subscriptions/listen``
``rate_limits``    ``wiremcp.rate_limits``             the buckets of ``RateLimit`` middleware
``stream_holds``   ``wiremcp.stream_holds``            which stream holds each session's GET
``grants``         ``wiremcp.grant_store``             what the OAuth server grants (clients, codes...)
``link``           ``wiremcp.replica_link``            what crosses replicas (None: one process)
=================  ==================================  ==============================================

A server is served with one through ``Runtime(server, backend=...)``; the HTTP app reads it from there.
The in-memory backend is one process's; ``wiremcp.transports.redis.backend.RedisBackend`` shares every
store between replicas over Redis (one server, Sentinel or Redis Cluster). Another backend (Postgres, a
Valkey-specific one) implements the seven interfaces and the link, and passes the same contract tests
(``tests/contract``).
"""

from __future__ import annotations

from dataclasses import dataclass

from wiremcp.event_store import EventStore, InMemoryEventStore, StoredEvent
from wiremcp.grant_store import GrantStore, InMemoryGrantStore
from wiremcp.rate_limits import InMemoryRateLimits, RateLimitStore, Taken
from wiremcp.replica_link import ClusterEvents, ReplicaLink
from wiremcp.session_store import SERVER, Asker, InMemorySessionStore, SessionStore, serves
from wiremcp.state import SessionState
from wiremcp.stream_holds import InMemoryStreamHolds, StreamHolds
from wiremcp.subscriptions import InMemorySubscriptionBus, Subscription, SubscriptionBus
from wiremcp.tasks import DuplicateTask, InMemoryTaskStore, TaskRecord, TaskStore

__all__ = [
    "SERVER", "Asker", "Backend", "ClusterEvents", "DuplicateTask", "EventStore", "GrantStore", "RateLimitStore",
    "ReplicaLink",
    "SessionState", "SessionStore", "StoredEvent", "StreamHolds", "Subscription", "SubscriptionBus", "Taken", "TaskRecord",
    "TaskStore", "serves",
]
"""What a backend implements and what it handles: the interfaces, and the values that cross them."""


@dataclass(slots=True, kw_only=True)
class Backend:
    """The shared state of the processes serving one server, one store per kind of state, each an interface
    documented method by method: ``Backend.in_memory()`` for one process, ``RedisBackend`` for replicas, or
    stores of one's own (``dataclasses.replace(Backend.in_memory(), sessions=...)``)."""

    sessions: SessionStore
    """Handshake-era sessions: their state, their owner, the cap on how many live."""
    events: EventStore
    """The events of each session's streams, numbered, so that a client resumes a stream with
    ``Last-Event-ID``."""
    tasks: TaskStore
    """Tasks, their status and their results, readable by any replica."""
    bus: SubscriptionBus
    """Change events (list changes, resource updates, task changes) for ``subscriptions/listen`` streams."""
    rate_limits: RateLimitStore
    """The token buckets of ``RateLimit`` middleware, so that a caller has one limit across replicas."""
    stream_holds: StreamHolds
    """Which stream holds each session's GET stream (one per session, across replicas)."""
    grants: GrantStore
    """What the OAuth server grants and remembers (registered clients, pending logins, codes, consents,
    refresh token families, upstream tokens, signing keys), so that a login started on one replica
    completes on another."""
    link: ReplicaLink | None = None
    """The link to the other replicas; None: this process is the only one."""

    def __post_init__(self) -> None:
        # A part of the wrong kind fails here, where it was given, not at the first request that uses it.
        parts = (("sessions", SessionStore), ("events", EventStore), ("tasks", TaskStore), ("bus", SubscriptionBus),
                 ("rate_limits", RateLimitStore), ("stream_holds", StreamHolds), ("grants", GrantStore))
        for name, interface in parts:
            _check_part(name, getattr(self, name), interface)
        if self.link is not None:
            _check_part("link", self.link, ReplicaLink)

    @classmethod
    def in_memory(cls, *, max_events: int = 100_000, max_event_bytes: int = 64 << 20,
                  max_event_age: float = 600.0) -> Backend:
        """One process's stores, with no link. ``max_events``, ``max_event_bytes``, ``max_event_age``: how
        many events, how many bytes of them and for how many seconds the event store keeps them (the oldest
        go first)."""
        return cls(sessions=InMemorySessionStore(),
                   events=InMemoryEventStore(max_events=max_events, max_bytes=max_event_bytes,
                                             max_age=max_event_age),
                   tasks=InMemoryTaskStore(), bus=InMemorySubscriptionBus(), rate_limits=InMemoryRateLimits(),
                   stream_holds=InMemoryStreamHolds(), grants=InMemoryGrantStore())

    @property
    def shared(self) -> bool:
        """Other processes serve the same sessions: a link, and an event store they all read."""
        return self.link is not None and self.events.shared

    async def start(self) -> None:
        """Before serving: join the other replicas (take this one's lease, hear their messages)."""
        if self.link is not None:
            await self.link.start()

    def ensure_started(self) -> None:
        """Start lazily (an app mounted without its lifespan)."""
        if self.link is not None:
            self.link.ensure_started()

    async def close(self) -> None:
        """After serving: stop the event store's background work, then leave the other replicas."""
        await self.events.close()
        if self.link is not None:
            await self.link.close()


def _check_part(name: str, part: object, interface: type) -> None:
    if not isinstance(part, interface):
        given = f"the class {part.__name__} itself" if isinstance(part, type) else type(part).__name__
        raise TypeError(f"Backend {name} must be a {interface.__name__} instance, got {given}")
