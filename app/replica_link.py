"""The link between replicas sharing a store, as the transports use it: ``ReplicaLink``, what they ask of
it (routing, leases, following a session's streams), and ``ClusterEvents``, what it tells its listeners.

What a store cannot carry crosses replicas over the link: a client's response to a server-to-client
request reaches the replica whose handler waits for it, cancellations, deleted and changed sessions,
cancelled and answered tasks and the subscription bus's change events reach every replica, and an append
to a session's stream wakes whoever follows it. ``wiremcp.transports.redis.replica_link.RedisReplicaLink`` is the link
over Redis pub/sub; only the composition root names it.

A listener subclasses ``ClusterEvents``, overrides the events it cares for (the others do nothing) and
registers once with ``ReplicaLink.listen``: the ``SessionManager`` (responses, cancellations, deleted and
changed sessions, reconnections, change events for the GET streams it holds), the task runner's side
(cancelled and answered tasks) and the shared subscription bus (change events).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager

from wiremcp.types import JSONObject, RequestId


class ClusterEvents:
    """What one replica hears from the others (and, for some events, from itself); each a no-op here.

    Called on the event loop, one message at a time: a listener must not block; work that waits is
    spawned."""

    __slots__ = ()

    def response_arrived(self, session_id: str, raw: bytes) -> None:
        """A client's response (``raw`` JSON-RPC) to a request this replica sent, posted to another replica."""

    def request_cancelled(self, session_id: str, params: JSONObject) -> None:
        """``notifications/cancelled`` (its ``params``) posted to any replica: whoever runs the request stops it."""

    def session_deleted(self, session_id: str) -> None:
        """Another replica ended the session (never sent back to the replica that ended it)."""

    def session_changed(self, session_id: str) -> None:
        """Another replica saved the session's state: copies held here are stale."""

    def reconnected(self) -> None:
        """The link (re)subscribed to the others' messages: any sent meanwhile were lost."""

    def task_cancelled(self, task_id: str) -> None:
        """A task was cancelled on any replica: the one running it stops it."""

    def task_input_arrived(self, task_id: str) -> None:
        """The client answered a task's input requests on any replica: the one running it reads the answers."""

    def bus_event(self, event: JSONObject) -> None:
        """A change event published on any replica's subscription bus (this one's included)."""


class ReplicaLink(ABC):
    """This replica's link to the others, as the transports use it."""

    replica: str
    """This process life's name among the replicas (``wiremcp.replicas.life_name``)."""
    lease: float
    """Seconds a replica's lease lasts unrenewed (a replica gone longer is taken for stopped)."""

    @property
    @abstractmethod
    def connected(self) -> bool:
        """Receiving the other replicas' messages right now."""

    @abstractmethod
    def listen(self, listener: ClusterEvents) -> None:
        """Deliver the events from other replicas to ``listener`` too, from now on (once per listener)."""

    # -- lifecycle -------------------------------------------------------------------------------
    @abstractmethod
    async def start(self) -> None:
        """Before serving: take this replica's lease and subscribe to the others' messages."""

    @abstractmethod
    def ensure_started(self) -> None:
        """Start lazily (an app mounted without its lifespan)."""

    @abstractmethod
    async def close(self) -> None:
        """After serving: give up the lease and the connections."""

    # -- replicas and the requests they sent --------------------------------------------------------
    @abstractmethod
    async def alive(self, replica: str) -> bool:
        """Whether the replica (a life's name) holds its lease."""

    @abstractmethod
    def request_ids(self) -> Callable[[], RequestId]:
        """Ids for server-to-client requests that tell which replica waits for the answer."""

    @abstractmethod
    def owner_of(self, request_id: RequestId) -> str | None:
        """The replica that sent a server-to-client request with this id (None: not one of ours)."""

    @abstractmethod
    async def forward_response(self, replica: str, sid: str, raw: bytes) -> None:
        """Hand a client's response to the replica that sent the request (``response_arrived`` there)."""

    @abstractmethod
    async def broadcast_cancel(self, sid: str, params: JSONObject) -> None:
        """``request_cancelled`` on every replica."""

    @abstractmethod
    async def broadcast_delete(self, sid: str) -> None:
        """``session_deleted`` on every other replica."""

    @abstractmethod
    async def broadcast_task_cancel(self, task_id: str) -> None:
        """``task_cancelled`` on every replica (the one running the task stops it)."""

    @abstractmethod
    async def broadcast_task_input(self, task_id: str) -> None:
        """``task_input_arrived`` on every replica (the one running the task wakes its handler)."""

    # -- shared streams ------------------------------------------------------------------------------
    @abstractmethod
    def watch(self, sid: str, event: asyncio.Event | None = None) -> AbstractContextManager[asyncio.Event]:
        """An event (``event``, or a new one) set whenever something is appended to one of the session's
        streams, on any replica, while the context lasts."""
