"""What serves a server definition (``Runtime``): the dispatcher, the task runner and the ``tasks/*``
methods, the bus that carries change events to ``subscriptions/listen``, the sealer of ``requestState``,
the observers of every request, the buckets of rate limits, the requests being answered (for the shutdown
sequence, ``wiremcp.shutdown``), and the handshake-era sessions being served (for ``list_changed`` and
``resources/updated``).

The definition (``MCPServer``: tools, resources, prompts, completions, identity) knows nothing of these; it
tells its runtime when a list changes or a resource is updated. Everything a runtime is served with comes in
through its constructor: the ``Backend`` (``wiremcp.backend``: the stores, the bus, the link between
replicas; the composition root passes the Redis one when ``WIREMCP_REDIS_URL`` is set), the sealer and the
task settings. Until one is made for it, a server has a runtime with the in-memory defaults
(``server.runtime``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from wiremcp.backend import Backend
from wiremcp.dispatcher import Dispatcher
from wiremcp.lifespan import Lifespans
from wiremcp.observer import RequestObserver, joined, listed
from wiremcp.replica_link import ClusterEvents
from wiremcp.request_state import RequestStateSealer
from wiremcp.shutdown import RequestsInFlight
from wiremcp.task_methods import TaskMethods
from wiremcp.task_runner import TaskRunner, TaskSettings
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.server import MCPServer
    from wiremcp.session import ServerSession


class Runtime:
    """Serves ``server``; made before it serves, it becomes ``server.runtime``."""

    def __init__(self, server: MCPServer, *, backend: Backend | None = None,
                 request_states: RequestStateSealer | None = None, tasks: TaskSettings | None = None) -> None:
        self.server = server
        if backend is not None and not isinstance(backend, Backend):
            raise TypeError(f"Runtime backend must be a wiremcp.Backend (Backend.in_memory(), or it with the parts "
                            f"you replace: dataclasses.replace), got {type(backend).__name__}")
        self.backend = backend or Backend.in_memory()
        """Where the state shared between replicas lives: sessions, events, tasks, the bus (change events for
        ``subscriptions/listen``), rate limits' buckets, the link between replicas (``wiremcp.backend``)."""
        self.request_states = request_states or RequestStateSealer()
        """Seals ``requestState``; replicas that share the keys can finish each other's exchanges."""
        self.observer: RequestObserver | None = None
        """Sees every request (metrics, tracing); see ``observe``."""
        self.requests = RequestsInFlight()
        """The requests being answered now, whatever their transport: the shutdown waits for them, then cuts
        off those still running."""
        self.dispatcher = Dispatcher(self)
        self.lifespans = Lifespans(server)
        """The lifespans of the server and of those mounted in it, held by each way of serving it."""
        self._task_settings = tasks
        self._task_runner: TaskRunner | None = None
        self._task_methods: TaskMethods | None = None
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        self.change_writers: list[Callable[[JSONObject], None]] = []
        """Called with each change published here (``changed``), from any thread: a transport whose sessions
        are shared writes it into the streams of those that listen (``SessionManager``)."""
        self._skill_watch: asyncio.Task[None] | None = None
        server.served_by(self)

    # -- tasks --------------------------------------------------------------------------------------
    @property
    def has_task_runner(self) -> bool:
        return self._task_runner is not None

    @property
    def task_runner(self) -> TaskRunner:
        """Runs task-augmented tool calls (both eras), made when first needed."""
        if self._task_runner is None:
            backend = self.backend
            runner = self._task_runner = TaskRunner(backend.bus, backend.tasks, settings=self._task_settings,
                                                    link=backend.link)
            if backend.link is not None:
                backend.link.listen(TaskEvents(runner))
        return self._task_runner

    @property
    def task_methods(self) -> TaskMethods:
        """Answers the ``tasks/*`` requests of both eras for ``task_runner``."""
        if self._task_methods is None:
            self._task_methods = TaskMethods(self.task_runner)
        return self._task_methods

    # -- observers ----------------------------------------------------------------------------------
    def observe(self, observer: RequestObserver) -> None:
        """Have ``observer`` see every request from now on (after those already observing)."""
        if observer not in listed(self.observer):
            self.observer = joined((*listed(self.observer), observer))

    def unobserve(self, observer: RequestObserver) -> None:
        self.observer = joined(tuple(o for o in listed(self.observer) if o is not observer))

    @property
    def observers(self) -> tuple[RequestObserver, ...]:
        return listed(self.observer)

    # -- the sessions being served, and what the definition tells them ---------------------------------
    def attach(self, session: ServerSession) -> None:
        self._sessions.add(session)
        self.watch_skills()

    def watch_skills(self) -> None:
        """Look at the skill folders for changes from now on, on this loop (once a client can hear of one:
        a session attached, a ``subscriptions/listen`` open). Skills from memory need no watching."""
        if self._skill_watch is not None and not self._skill_watch.done():
            return
        skills = self.server.skill_set
        if skills.refresh_seconds is None:
            return
        try:
            self._skill_watch = asyncio.get_running_loop().create_task(skills.watch(), name="wiremcp skill folders")
        except RuntimeError:  # no loop running: nothing could hear a change yet
            self._skill_watch = None

    def detach(self, session: ServerSession) -> None:
        self._sessions.discard(session)

    def compact_sessions(self) -> None:
        """Rebuild the set of attached sessions at the size it needs now: a set keeps the table of its
        largest size after items leave it (for after many sessions ended at once). In place: a new set, made
        among the memory just freed, would hold the arena it landed in for as long as the server lives."""
        left = list(self._sessions)
        self._sessions.clear()
        self._sessions.update(left)

    def changed(self, message: JSONObject) -> None:
        """The definition changed (a list, a resource): tell the sessions that want it and the bus."""
        if message.get("method", "").endswith("/list_changed"):
            self.dispatcher.forget_lists()
        for session in list(self._sessions):
            if session.state.wants(message):
                session.post(message)
        for write in self.change_writers:
            write(message)
        self.backend.bus.publish(message)


class TaskEvents(ClusterEvents):
    """The task runner's side of the link between replicas: tasks cancelled or answered on another replica,
    run here."""

    __slots__ = ("_runner",)

    def __init__(self, runner: TaskRunner) -> None:
        self._runner = runner

    def task_cancelled(self, task_id: str) -> None:
        self._runner.cancel_local(task_id)

    def task_input_arrived(self, task_id: str) -> None:
        self._runner.inputs.wake_soon(task_id)
