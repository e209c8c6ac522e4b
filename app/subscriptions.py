"""Change notifications for the stateless era: the ``SubscriptionBus`` and the ``subscriptions/listen`` filter.

The server publishes every change (a list changed, a resource was updated) on its bus;
each open ``subscriptions/listen`` request holds a subscription and forwards the events
its client opted in to. The in-memory bus serves one process; a shared one (Redis)
fans events out across replicas behind the same interface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Any

from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.subscriptions")

QUEUE = 256

# Opt-in flag of a listen request -> the notification it selects.
FLAGS = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
FLAG_CAPABILITY = {"toolsListChanged": "tools", "promptsListChanged": "prompts", "resourcesListChanged": "resources"}


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Subscription:
    """One listener's view of the bus: an async iterator of events, ended by ``close`` or the bus."""

    def __init__(self, bus: InMemorySubscriptionBus) -> None:
        self._bus = bus
        self._queue: asyncio.Queue[JSONObject | None] = asyncio.Queue(QUEUE)
        self._loop = asyncio.get_running_loop()

    def deliver(self, event: JSONObject | None) -> None:
        if _running_loop() is not self._loop:  # published off the loop, e.g. by a sync tool on a worker thread
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening any more
                self._loop.call_soon_threadsafe(self.deliver, event)
            return
        if self._queue.full():
            # A listener that does not keep up loses the oldest change: list_changed events are
            # idempotent hints (the client re-lists), so the newest ones are the ones worth keeping.
            with contextlib.suppress(asyncio.QueueEmpty):
                self._queue.get_nowait()
            log.warning("a subscriptions/listen stream is not keeping up; dropped its oldest event")
        self._queue.put_nowait(event)

    def __aiter__(self) -> AsyncIterator[JSONObject]:
        return self._events()

    async def _events(self) -> AsyncIterator[JSONObject]:
        while (event := await self._queue.get()) is not None:
            yield event

    def close(self) -> None:
        self._bus.unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SubscriptionBus(ABC):
    """Where the server's change events go, and where listeners pick them up."""

    @abstractmethod
    def publish(self, event: JSONObject) -> None:
        """Send one event (a notification message) to every listener; never blocks."""

    @abstractmethod
    def subscribe(self) -> Subscription: ...

    @abstractmethod
    def end_all(self) -> None:
        """End every current subscription (the listen requests answer and close); new ones may follow."""


class InMemorySubscriptionBus(SubscriptionBus):
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    def publish(self, event: JSONObject) -> None:
        for subscription in list(self._subscriptions):
            subscription.deliver(event)

    def subscribe(self) -> Subscription:
        subscription = Subscription(self)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def end_all(self) -> None:
        for subscription in list(self._subscriptions):
            subscription.deliver(None)
        self._subscriptions.clear()

    @property
    def listeners(self) -> int:
        return len(self._subscriptions)


class Filter:
    """What one listen request asked for, less what this server cannot deliver."""

    def __init__(self, requested: Any, capabilities: JSONObject, task_ids: list[str] | None = None, *,
                 readable: Callable[[str], bool] = lambda uri: True) -> None:
        requested = requested if isinstance(requested, dict) else {}
        self.honoured: JSONObject = {}
        self._methods: set[str] = set()
        for flag, method in FLAGS.items():
            capability = capabilities.get(FLAG_CAPABILITY[flag])
            if requested.get(flag) is True and isinstance(capability, dict) and capability.get("listChanged"):
                self.honoured[flag] = True
                self._methods.add(method)
        uris = requested.get("resourceSubscriptions")
        resources = capabilities.get("resources")
        self._uris: set[str] = set()
        if isinstance(uris, list) and isinstance(resources, dict) and resources.get("subscribe"):
            # Only what the caller may read: the acknowledgement is the subset the server honours.
            self._uris = {u for u in uris if isinstance(u, str) and readable(u)}
            self.honoured["resourceSubscriptions"] = sorted(self._uris)
        self._task_ids = set(task_ids or ())
        if task_ids is not None and "taskIds" in requested:
            self.honoured["taskIds"] = list(task_ids)  # the tasks extension: the caller's own tasks

    def wants(self, event: JSONObject) -> bool:
        method = event.get("method")
        if method == "notifications/resources/updated":
            params = event.get("params")
            return isinstance(params, dict) and params.get("uri") in self._uris
        if method == "notifications/tasks":
            params = event.get("params")
            return isinstance(params, dict) and params.get("taskId") in self._task_ids
        return method in self._methods
