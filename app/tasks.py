"""Task storage: the state of long-running tool calls that clients poll (MCP "tasks").

One ``TaskRecord`` holds everything both protocol eras need: the 2025-11-25 experimental ``Task`` and
the 2026-07-28 extension's ``DetailedTask`` are two views of it (``to_2025_11_25``, ``to_2026_07_28``).
A ``TaskStore`` keeps records per owner (a principal sees only its own tasks), changes their status by
compare-and-set, and forgets them when their TTL (counted from creation) has elapsed.
``InMemoryTaskStore`` serves a single process; ``wiremcp.transports.redis.tasks`` serves replicas.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import json
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, cast, get_args

from wiremcp.errors import InvalidParams
from wiremcp.types import JSONObject

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
STATUSES: frozenset[str] = frozenset(get_args(TaskStatus))
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""Final states: no transition leaves them."""
UPDATABLE = frozenset({"status_message", "poll_interval_ms", "result", "error", "input_requests",
                       "input_responses", "owner_replica"})
"""The fields a ``transition`` may set besides the status."""


def new_task_id() -> str:
    """A fresh task id: 256 random bits, URL-safe (ids are bearer-like, so they must be unguessable)."""
    return secrets.token_urlsafe(32)


def iso_timestamp(epoch: float) -> str:
    """Epoch seconds as an ISO 8601 UTC timestamp with milliseconds, e.g. ``2025-11-25T10:30:00.000Z``."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DuplicateTask(Exception):
    """``create`` was given the id of a task that already exists."""


@dataclasses.dataclass(slots=True)
class TaskRecord:
    """A task as stored. Times are epoch seconds; ``ttl_ms`` counts from ``created_at`` (None: no limit
    asked for; a store may still apply its own)."""

    task_id: str
    principal: str | None
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: float = 0.0
    last_updated_at: float = 0.0
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None
    input_requests: JSONObject = dataclasses.field(default_factory=dict)
    """The requests the task waits on the client to answer, by key (2026-07-28: ``inputRequests``)."""
    input_responses: JSONObject = dataclasses.field(default_factory=dict)
    """Answers the client gave (``tasks/update``) and the handler has not necessarily read yet, by key."""
    cancel_requested: bool = False
    owner_replica: str | None = None
    tool: str | None = None
    """The tool whose call the task runs: reading the task needs the tool's scopes (``wiremcp.access``)."""

    @classmethod
    def new(cls, principal: str | None, *, ttl_ms: int | None = None, poll_interval_ms: int | None = None,
            status_message: str | None = None, owner_replica: str | None = None, tool: str | None = None,
            now: float | None = None) -> TaskRecord:
        """A fresh ``working`` task with a new id, created ``now`` (default: the current time)."""
        at = time.time() if now is None else now
        return cls(task_id=new_task_id(), principal=principal, status_message=status_message,
                   created_at=at, last_updated_at=at, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms,
                   owner_replica=owner_replica, tool=tool)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expires_at(self) -> float | None:
        """When the task may be discarded (epoch seconds), None if it has no TTL."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def to_dict(self) -> JSONObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> TaskRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def wire_timestamps(self) -> tuple[str, str]:
        """``createdAt`` and ``lastUpdatedAt`` as the wire wants them (ISO 8601, UTC)."""
        return iso_timestamp(self.created_at), iso_timestamp(self.last_updated_at)

    def _task(self, ttl: str, poll: str) -> JSONObject:
        created, updated = self.wire_timestamps()
        task: JSONObject = {"taskId": self.task_id, "status": self.status}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        task.update({"createdAt": created, "lastUpdatedAt": updated, ttl: self.ttl_ms})
        if self.poll_interval_ms is not None:
            task[poll] = self.poll_interval_ms
        return task

    def to_2025_11_25(self) -> JSONObject:
        """The 2025-11-25 ``Task``."""
        return self._task("ttl", "pollInterval")

    def to_2026_07_28_task(self) -> JSONObject:
        """The 2026-07-28 extension's bare ``Task`` (what ``CreateTaskResult`` carries)."""
        return self._task("ttlMs", "pollIntervalMs")

    def to_2026_07_28(self) -> JSONObject:
        """The 2026-07-28 extension's ``DetailedTask``: the ``Task`` (``ttlMs``, ``pollIntervalMs``) plus
        the payload of its status: ``inputRequests``, ``result`` or ``error``."""
        task = self._task("ttlMs", "pollIntervalMs")
        if self.status == "input_required":
            task["inputRequests"] = self.input_requests
        elif self.status == "completed" and self.result is not None:
            task["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            task["error"] = self.error
        return task


def encode_cursor(record: TaskRecord) -> str:
    """The cursor of the page after ``record``: listings are ordered by (created_at, task_id)."""
    raw = json.dumps([record.created_at, record.task_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object) -> tuple[float, str]:
    if not isinstance(cursor, str) or len(cursor) > 200:
        raise InvalidParams("Invalid cursor")
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidParams("Invalid cursor") from None
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], int | float)
            or isinstance(value[0], bool) or not isinstance(value[1], str)):
        raise InvalidParams("Invalid cursor")
    return float(value[0]), value[1]


def validate_transition(to_status: str, fields: dict[str, Any]) -> None:
    """Reject an unknown status (``ValueError``) or a field a transition may not set (``TypeError``)."""
    if to_status not in STATUSES:
        raise ValueError(f"unknown task status {to_status!r}")
    unknown = set(fields) - UPDATABLE
    if unknown:
        raise TypeError(f"a transition cannot set {sorted(unknown)}")


def updated(record: TaskRecord, to_status: str, fields: dict[str, Any], now: float) -> TaskRecord:
    """A copy of ``record`` moved to ``to_status`` (validated) with ``fields`` set, updated ``now``."""
    validate_transition(to_status, fields)
    return dataclasses.replace(record, status=cast(TaskStatus, to_status), last_updated_at=now, **fields)


def may_transition(record: TaskRecord, expect: Collection[str]) -> bool:
    return not record.terminal and record.status in expect


def with_input_request(record: TaskRecord, key: str, request: JSONObject, now: float) -> TaskRecord | None:
    """``record`` waiting on one more request to the client (``input_required``); None if it has ended."""
    if record.terminal:
        return None
    return dataclasses.replace(record, status="input_required", last_updated_at=now,
                               input_requests={**record.input_requests, key: request},
                               status_message=f"Waiting for the client's answer to {request.get('method')}")


def with_answers(record: TaskRecord, responses: JSONObject, now: float) -> tuple[TaskRecord | None, tuple[str, ...]]:
    """``record`` with the answers to its outstanding requests taken in (others are ignored, as the spec
    asks: unknown, already answered or superseded keys), back to ``working`` once none is outstanding.
    None (nothing to write) when no answer applies; and the keys taken."""
    taken = tuple(key for key in responses if key in record.input_requests)
    if record.terminal or not taken:
        return None, ()
    waiting = {k: v for k, v in record.input_requests.items() if k not in taken}
    fields: dict[str, Any] = {
        "input_requests": waiting,
        "input_responses": {**record.input_responses, **{key: responses[key] for key in taken}},
        "last_updated_at": now,
    }
    if not waiting and record.status == "input_required":
        fields.update(status="working", status_message=None)
    return dataclasses.replace(record, **fields), taken


class TaskStore(ABC):
    """Where tasks live. Every method taking a ``principal`` acts only on that principal's tasks: another
    principal's task looks exactly like one that does not exist."""

    @abstractmethod
    async def create(self, record: TaskRecord) -> None:
        """Store a new task, durably before returning (``get`` resolves it at once, on any replica).
        Raises ``DuplicateTask`` if the id exists."""

    @abstractmethod
    async def get(self, task_id: str, principal: str | None) -> TaskRecord | None:
        """The task, or None if it is unknown, expired or someone else's."""

    @abstractmethod
    async def list(self, principal: str | None, cursor: str | None = None,
                   limit: int = 50) -> tuple[Sequence[TaskRecord], str | None]:
        """One page of the principal's live tasks, oldest first, and the next page's cursor (None: the
        last page). A malformed cursor raises ``InvalidParams``."""

    @abstractmethod
    async def transition(self, task_id: str, to_status: str, *, expect: Collection[str],
                         **fields: Any) -> TaskRecord | None:
        """Atomically move the task to ``to_status`` (setting ``fields``) if its current status is in
        ``expect``; the updated record, or None if the task is unknown or its status is not allowed.
        Terminal statuses are final: a transition out of one always fails."""

    @abstractmethod
    async def request_cancel(self, task_id: str, principal: str | None) -> TaskRecord | None:
        """Flag the principal's task for (cooperative) cancellation unless it is already terminal; the
        task as it now is, or None if unknown. The runner sees ``cancel_requested`` and ends it."""

    @abstractmethod
    async def add_input_request(self, task_id: str, key: str, request: JSONObject) -> TaskRecord | None:
        """Atomically add a request the task waits on the client to answer; the task becomes
        ``input_required``. The updated record, or None if the task is unknown or has ended."""

    @abstractmethod
    async def answer_inputs(self, task_id: str, principal: str | None,
                            responses: JSONObject) -> tuple[TaskRecord, tuple[str, ...]] | None:
        """Atomically take the principal's answers to the task's outstanding requests (see
        ``with_answers``); the record as it now is and the keys taken, or None if the task is unknown."""

    async def delete_expired(self) -> int:
        """Drop the tasks whose TTL has elapsed; how many. Stores that expire tasks by themselves: 0."""
        return 0


class InMemoryTaskStore(TaskStore):
    """Tasks of one process. ``clock`` (epoch seconds) decides expiry and update times: tests inject one.
    No method awaits between reading and writing, so each is atomic on the event loop."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._tasks: dict[str, TaskRecord] = {}

    def _live(self, task_id: str) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is None:
            return None
        expires = record.expires_at()
        if expires is not None and self._clock() >= expires:
            del self._tasks[task_id]
            return None
        return record

    async def create(self, record: TaskRecord) -> None:
        if self._live(record.task_id) is not None:
            raise DuplicateTask(record.task_id)
        self._tasks[record.task_id] = copy.deepcopy(record)

    async def get(self, task_id: str, principal: str | None) -> TaskRecord | None:
        record = self._live(task_id)
        if record is None or record.principal != principal:
            return None
        return copy.deepcopy(record)

    async def list(self, principal: str | None, cursor: str | None = None,
                   limit: int = 50) -> tuple[Sequence[TaskRecord], str | None]:
        if limit < 1:
            raise ValueError("limit must be positive")
        after = None if cursor is None else decode_cursor(cursor)
        await self.delete_expired()
        mine = sorted((r for r in self._tasks.values() if r.principal == principal),
                      key=lambda r: (r.created_at, r.task_id))
        if after is not None:
            mine = [r for r in mine if (r.created_at, r.task_id) > after]
        chosen = [copy.deepcopy(r) for r in mine[:limit]]
        return chosen, (encode_cursor(chosen[-1]) if len(mine) > limit else None)

    async def transition(self, task_id: str, to_status: str, *, expect: Collection[str],
                         **fields: Any) -> TaskRecord | None:
        validate_transition(to_status, fields)
        record = self._live(task_id)
        if record is None or not may_transition(record, expect):
            return None
        new = updated(record, to_status, copy.deepcopy(fields), self._clock())
        self._tasks[task_id] = new
        return copy.deepcopy(new)

    async def request_cancel(self, task_id: str, principal: str | None) -> TaskRecord | None:
        record = self._live(task_id)
        if record is None or record.principal != principal:
            return None
        if not record.terminal:
            record.cancel_requested = True
        return copy.deepcopy(record)

    async def add_input_request(self, task_id: str, key: str, request: JSONObject) -> TaskRecord | None:
        record = self._live(task_id)
        new = None if record is None else with_input_request(record, key, copy.deepcopy(request), self._clock())
        if new is None:
            return None
        self._tasks[task_id] = new
        return copy.deepcopy(new)

    async def answer_inputs(self, task_id: str, principal: str | None,
                            responses: JSONObject) -> tuple[TaskRecord, tuple[str, ...]] | None:
        record = self._live(task_id)
        if record is None or record.principal != principal:
            return None
        new, taken = with_answers(record, copy.deepcopy(responses), self._clock())
        if new is not None:
            self._tasks[task_id] = record = new
        return copy.deepcopy(record), taken

    async def delete_expired(self) -> int:
        expired = [tid for tid in list(self._tasks) if self._live(tid) is None]
        return len(expired)
