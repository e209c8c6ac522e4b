"""Connecting to Redis (or Valkey) on any topology (``target``): one client per purpose, publishing and
running scripts together as the topology allows, and errors translated to ``StoreUnavailable`` so that
the transports answer 503 instead of crashing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, cast

import redis.asyncio as redis
from redis.asyncio.cluster import ClusterNode, PipelineCommand, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import AskError, MovedError, NoScriptError, RedisClusterException, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from wiremcp.transports.redis.target import RedisTarget, parse_target
from wiremcp.unavailable import StoreUnavailable

Redis = redis.Redis | RedisCluster
"""A command client: to one server (or to the primary Sentinel names), or to a Redis Cluster."""

MAX_NODE_CONNECTIONS = 2**16
"""A cluster client's connections to one node, at most. redis-py's asyncio cluster client fails a command
rather than wait when its bound is reached (100 by default), so the bound is set past what a replica's
concurrency reaches, as one server's pool is unbounded."""

CLUSTER_RETRIES = 3
"""Attempts a cluster client makes once more after a node fails (a failover, a slot moved), after
reading the slots again: short, so that a request fails with 503 rather than waiting long."""


def connect(target: RedisTarget | str, *, timeout: float, blocking: bool = False) -> Redis:
    """A client that fails fast: one short connect, one command timeout, no retries behind the caller's
    back on one server (the caller answers 503 and the next request tries again); a few quick ones in a
    cluster, which reads its slots again in between. ``blocking``: for pub/sub, which waits for messages
    indefinitely (one server and Sentinel: a cluster's subscriber opens its own connections)."""
    target = parse_target(target) if isinstance(target, str) else target
    read_timeout = None if blocking else timeout
    if target.topology == "cluster":
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in target.nodes], username=target.username,
            password=target.password, ssl=target.tls, socket_connect_timeout=timeout, socket_timeout=read_timeout,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), CLUSTER_RETRIES), client_name="wiremcp",
            max_connections=MAX_NODE_CONNECTIONS, **_no_maintenance_notifications())
    if target.topology == "sentinel":
        # Any: older redis releases leave Sentinel's __init__ untyped, newer ones type it
        sentinel: Sentinel = cast(Any, Sentinel)(list(target.nodes), sentinel_kwargs={
            "socket_connect_timeout": timeout, "socket_timeout": timeout, "ssl": target.tls})
        master: redis.Redis = sentinel.master_for(
            target.service, db=target.db, username=target.username, password=target.password, ssl=target.tls,
            socket_connect_timeout=timeout, socket_timeout=read_timeout, retry=Retry(NoBackoff(), 0),
            health_check_interval=0 if blocking else 30, client_name="wiremcp")
        return master
    return redis.Redis.from_url(
        target.url, socket_connect_timeout=timeout, socket_timeout=read_timeout,
        retry=Retry(NoBackoff(), 0), health_check_interval=0 if blocking else 30,
        client_name="wiremcp", **_no_maintenance_notifications())


async def prepare(client: Redis) -> None:
    """Before a cluster client is used by concurrent requests: read the cluster's slots once. (redis-py
    reads them on first use, and concurrent first uses may fail while it does.)"""
    if isinstance(client, RedisCluster):
        await client.initialize()


async def publish(client: Redis, channel: str, message: bytes) -> None:
    """Publish on a channel as ``Subscriber`` listens to it: a shard channel in a cluster."""
    if isinstance(client, RedisCluster):
        await client.spublish(channel, message)
    else:
        await client.publish(channel, message)


def publish_command(client: Redis) -> str:
    """The command a script publishes with (its channel in the script's slot)."""
    return "SPUBLISH" if isinstance(client, RedisCluster) else "PUBLISH"


_NOT_RUN = object()
"""A call of ``run_scripts`` not sent yet."""


async def run_scripts(client: Redis, calls: list[tuple[AsyncScript, list[str], list[Any]]]) -> list[Any]:
    """Run scripts together: in one pipeline (one round trip) on one server; concurrently in a cluster,
    which runs no script in a pipeline (each goes to the node of its slot). A script Redis does not hold
    (flushed by a restart) is loaded and that call alone sent again."""
    if isinstance(client, RedisCluster):
        return list(await asyncio.gather(*(script(keys=keys, args=args) for script, keys, args in calls)))
    results: list[Any] = [_NOT_RUN] * len(calls)
    for attempt in range(2):
        todo = [n for n, result in enumerate(results) if result is _NOT_RUN or isinstance(result, NoScriptError)]
        if not todo:
            break
        if attempt:
            for script in {id(calls[n][0]): calls[n][0] for n in todo}.values():
                await client.script_load(script.script)
        async with client.pipeline(transaction=False) as pipe:
            for n in todo:
                script, keys, args = calls[n]
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            for n, result in zip(todo, await pipe.execute(raise_on_error=False), strict=True):
                results[n] = result
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


async def run_script_on_one_connection(client: Redis, script: AsyncScript, calls: list[tuple[list[str], list[Any]]],
                                       *, wait: tuple[int, int] | None = None) -> tuple[list[Any], int]:
    """Run ``script`` once per call, in order, on one connection to the primary holding the calls' keys (they
    share one slot), then, with ``wait`` (replicas, timeout in ms), ``WAIT`` on that same connection: WAIT
    counts the replicas that have every write its own connection made, so it must follow the writes on
    theirs. One round trip. A script the server does not hold (a replica just promoted) is loaded and the
    calls sent again. Returns the scripts' results and the replicas WAIT counted (0 without ``wait``).

    In a cluster the calls go to the node the client's slot map names, without redirections: a slot that
    moved (a failover) fails the batch, and a keyed read through the client then brings the map up to date
    (redis-py's own handling of ``MOVED`` and lost nodes) for the next attempt."""
    if not calls:
        return [], 0
    slot_key = calls[0][0][0]
    for attempt in range(2):
        commands = [PipelineCommand(n, "EVALSHA", script.sha, len(keys), *keys, *args)
                    for n, (keys, args) in enumerate(calls)]
        if wait is not None:
            commands.append(PipelineCommand(len(calls), "WAIT", *wait))
        if isinstance(client, RedisCluster):
            await _run_on_node(client, slot_key, commands)
        else:
            async with client.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command.args)
                for command, result in zip(commands, await pipe.execute(raise_on_error=False), strict=True):
                    command.result = result
        results: list[Any] = [command.result for command in commands]
        if attempt == 0 and any(isinstance(result, NoScriptError) for result in results):
            if isinstance(client, RedisCluster):
                await _node_of(client, slot_key).execute_command("SCRIPT", "LOAD", script.script)
            else:
                await client.script_load(script.script)
            continue
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results[:len(calls)], int(results[-1]) if wait is not None else 0
    raise NoScriptError("the script was loaded and is still unknown")  # pragma: no cover - a flush in between


async def _run_on_node(client: RedisCluster, slot_key: str, commands: list[PipelineCommand]) -> None:
    """``commands`` on one connection to the node the slot map names for ``slot_key``, their results (or
    errors) set on them. A lost node or a moved slot: the map is brought up to date, and the error raised."""
    try:
        await _node_of(client, slot_key).execute_pipeline(commands)
        moved = next((c.result for c in commands if isinstance(c.result, MovedError | AskError)), None)
        if moved is not None:
            raise moved
    except (RedisConnectionError, RedisTimeoutError, OSError, MovedError, AskError, RedisClusterException):
        with contextlib.suppress(RedisError, RedisClusterException, OSError):
            await client.exists(slot_key)
        raise


def _node_of(client: RedisCluster, key: str) -> ClusterNode:
    """The primary the client's slot map names for ``key``."""
    node = client.get_node_from_key(key)
    if node is None:  # pragma: no cover - only asked for a replica can it be None
        raise RedisClusterException(f"no node serves the slot of {key!r}")
    return node


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
    except (RedisError, RedisClusterException) as exc:
        raise StoreUnavailable(f"{what}: Redis failed ({exc})") from exc
