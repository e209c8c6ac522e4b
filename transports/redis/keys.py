"""Every key and channel name, under one prefix, laid out so that they work in a Redis Cluster as well as
on one server.

In a cluster, a script may only touch keys of one hash slot, and a key's slot is that of the part of its
name between the first ``{`` and the next ``}`` (its hash tag). So:

- every key of one session (its state, its event streams, their numbers, its GET stream's holder) and its
  wake-up channel carry the session id as their tag: a session's scripts stay on one slot, and the
  sessions spread over the whole cluster;
- the index of live sessions (behind ``WIREMCP_MAX_SESSIONS``) is split into ``session_shards`` sorted
  sets, each its own tag; a session is in the shard its id hashes to;
- what goes to every replica goes over ``broadcast_shards`` channels, each its own tag; a message about a
  session or a task goes over the channel its id hashes to, so that messages about one thing keep their
  order;
- keys that stand alone (a task, a principal's task index, a replica's lease, a rate-limit bucket) need no
  tag: no script touches two of them.

One server and Sentinel use one shard of each (the cap is then exact, see ``RedisSessionStore``); a
cluster uses ``CLUSTER_SHARDS``.
"""

from __future__ import annotations

import hashlib
import zlib

CLUSTER_SHARDS = 16
"""Shards of the session index and broadcast channels in a Redis Cluster: enough to spread over the
primaries of most clusters, few enough that counting sessions reads them all in one round."""


def _shard(text: str, shards: int) -> int:
    return zlib.crc32(text.encode()) % shards if shards > 1 else 0


class Keys:
    __slots__ = ("broadcast_shards", "prefix", "session_shards")

    def __init__(self, prefix: str, *, session_shards: int = 1, broadcast_shards: int = 1) -> None:
        if session_shards < 1 or broadcast_shards < 1:
            raise ValueError("Keys: shards must be at least 1")
        self.prefix = prefix
        self.session_shards = session_shards
        self.broadcast_shards = broadcast_shards

    # -- one session's keys: one hash slot -----------------------------------------------------------
    def session(self, sid: str) -> str:
        return f"{self.prefix}:{{{sid}}}:s"

    def events(self, sid: str, stream: str) -> str:
        return f"{self.prefix}:{{{sid}}}:ev:{stream}"

    def streams(self, sid: str) -> str:
        """Set: the names of a session's streams (to drop them with the session)."""
        return f"{self.prefix}:{{{sid}}}:evs"

    def counters(self, sid: str) -> str:
        """Hash: stream name -> its newest event number."""
        return f"{self.prefix}:{{{sid}}}:evn"

    def get_stream(self, sid: str) -> str:
        """Who holds a session's GET stream (one at a time, across replicas)."""
        return f"{self.prefix}:{{{sid}}}:get"

    def wake(self, sid: str) -> str:
        """Pub/sub: a wake-up with every event appended to one of the session's streams, for whoever follows
        them (in the session's slot: the append script publishes it)."""
        return f"{self.prefix}:{{{sid}}}:w"

    # -- the session index: sharded ----------------------------------------------------------------
    def sessions(self, sid: str) -> str:
        """Sorted set: session id -> expiry (ms since the epoch, Redis time), for the shard ``sid`` is in."""
        return self.session_index(_shard(sid, self.session_shards))

    def session_index(self, shard: int) -> str:
        return f"{self.prefix}:sessions:{{{shard}}}"

    @property
    def session_indexes(self) -> list[str]:
        return [self.session_index(shard) for shard in range(self.session_shards)]

    def listening(self, sid: str) -> str:
        """Set: the sessions that opened a GET stream (``StreamHolds.listening``), the shard ``sid`` is in."""
        return self.listening_index(_shard(sid, self.session_shards))

    def listening_index(self, shard: int) -> str:
        return f"{self.prefix}:listening:{{{shard}}}"

    @property
    def listening_indexes(self) -> list[str]:
        return [self.listening_index(shard) for shard in range(self.session_shards)]

    # -- what goes to every replica: sharded channels ----------------------------------------------------
    def broadcast(self, subject: str) -> str:
        """Pub/sub: the channel to every replica for messages about ``subject`` (a session or task id)."""
        return self.broadcast_channel(_shard(subject, self.broadcast_shards))

    def broadcast_channel(self, shard: int) -> str:
        return f"{self.prefix}:all:{{{shard}}}"

    @property
    def broadcasts(self) -> tuple[str, ...]:
        """Every broadcast channel: each replica listens to all of them."""
        return tuple(self.broadcast_channel(shard) for shard in range(self.broadcast_shards))

    def inbox(self, replica: str) -> str:
        """Pub/sub: messages for one replica (a client's response to a request it sent)."""
        return f"{self.prefix}:to:{{{replica}}}"

    # -- keys that stand alone ---------------------------------------------------------------------
    def alive(self, replica: str) -> str:
        return f"{self.prefix}:alive:{replica}"

    def task(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def tasks_of(self, principal: str | None) -> str:
        """Sorted set: a principal's task ids -> their creation times (its ``tasks/list``). The principal
        is hashed (any length, any characters); None (no identified requestor) has its own set."""
        owner = "-" if principal is None else hashlib.sha256(principal.encode()).hexdigest()[:32]
        return f"{self.prefix}:tasks:{owner}"

    @property
    def request_state_key(self) -> str:
        """The ``requestState`` sealing key the replicas agree on when none is configured."""
        return f"{self.prefix}:request-state-key"
