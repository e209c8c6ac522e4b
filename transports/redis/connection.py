"""Connecting to Redis (or Valkey): one client per purpose, key and channel names, and errors translated
to ``StoreUnavailable`` so that the transports answer 503 instead of crashing."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from wiremcp.unavailable import StoreUnavailable

Redis = redis.Redis


def connect(url: str, *, timeout: float, blocking: bool = False) -> Redis:
    """A client that fails fast: one short connect, one command timeout, no retries behind the caller's
    back (the caller answers 503 and the next request tries again). ``blocking``: for pub/sub, which
    waits for messages indefinitely."""
    return redis.Redis.from_url(
        url, socket_connect_timeout=timeout, socket_timeout=None if blocking else timeout,
        retry=Retry(NoBackoff(), 0), health_check_interval=0 if blocking else 30,
        client_name="wiremcp", **_no_maintenance_notifications())


def _no_maintenance_notifications() -> dict[str, Any]:
    """redis-py >= 7 enables "maintenance notifications" by default ("auto"), and with them on, its pool
    skips the check that finds a pooled connection closed by the server: after a Redis restart, every
    idle pooled connection would fail one command (one 503 each) instead of reconnecting. Turned off,
    the pool reconnects them before use. (Older redis-py has no such setting and always checks.)"""
    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:  # pragma: no cover - redis-py < 7
        return {}
    return {"maint_notifications_config": MaintNotificationsConfig(enabled=False)}


@contextlib.contextmanager
def reachable(what: str) -> Iterator[None]:
    """Translate the errors of an unreachable or failing Redis into ``StoreUnavailable``."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise StoreUnavailable(f"{what}: Redis is unreachable ({exc})") from exc
    except RedisError as exc:
        raise StoreUnavailable(f"{what}: Redis failed ({exc})") from exc


class Keys:
    """Every key and channel name, under one prefix."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def session(self, sid: str) -> str:
        return f"{self.prefix}:s:{sid}"

    @property
    def sessions(self) -> str:
        """Sorted set: session id -> expiry (ms since the epoch, Redis time); counts live sessions."""
        return f"{self.prefix}:sessions"

    def events(self, sid: str, stream: str) -> str:
        return f"{self.prefix}:ev:{sid}:{stream}"

    def streams(self, sid: str) -> str:
        """Set: the names of a session's streams (to drop them with the session)."""
        return f"{self.prefix}:evs:{sid}"

    def counters(self, sid: str) -> str:
        """Hash: stream name -> its newest event number."""
        return f"{self.prefix}:evn:{sid}"

    def alive(self, replica: str) -> str:
        return f"{self.prefix}:alive:{replica}"

    def get_stream(self, sid: str) -> str:
        """Who holds a session's GET stream (one at a time, across replicas)."""
        return f"{self.prefix}:get:{sid}"

    def task(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def tasks_of(self, principal: str | None) -> str:
        """Sorted set: a principal's task ids -> their creation times (its ``tasks/list``). The principal
        is hashed (any length, any characters); None (no identified requestor) has its own set."""
        owner = "-" if principal is None else hashlib.sha256(principal.encode()).hexdigest()[:32]
        return f"{self.prefix}:tasks:{owner}"

    @property
    def broadcast(self) -> str:
        """Pub/sub: every replica listens (wake-ups, bus events, cancellations, deleted sessions)."""
        return f"{self.prefix}:all"

    def inbox(self, replica: str) -> str:
        """Pub/sub: messages for one replica (a client's response to a request it sent)."""
        return f"{self.prefix}:to:{replica}"
