"""Idle handshake-era sessions: resident memory per session, 10,000 of them live in one process, and the
memory given back once they have expired, all at once or a few at a time.

    .venv/bin/python bench/session_memory.py                      # all of it (~9 min)
    .venv/bin/python bench/session_memory.py --real ''            # in process only: wiremcp, official, fastmcp (~1 min)
    .venv/bin/python bench/session_memory.py --servers '' --real gradual --pythonmalloc malloc
    .venv/bin/python bench/session_memory.py --servers wiremcp --real '' --sessions 20000 --cap 30000

Each framework runs in a fresh process of its own (``--child``), which serves its HTTP app in process,
without sockets: a minimal ASGI driver calls the app with one ``http`` scope per request (the body in one
``http.request`` message; ``http.disconnect`` only once the answer is complete), after running the app's
lifespan as uvicorn would. Apps, all with the ``word_count`` tool of the other benchmarks:

* ``wiremcp``: ``wiremcp.transports.http_app.MCPHttpApp(examples.word_count.server, max_sessions=<cap>)`` (default
  options, in-memory session store);
* ``official`` (``mcp==2.3.0``): ``MCPServer.streamable_http_app(json_response=True, stateless_http=False,
  max_sessions=<cap>)`` (``bench.official_server``: stateful sessions, JSON answers);
* ``fastmcp`` (``fastmcp==4.1.6``, run by the python of its own venv, ``bench/peers.py``):
  ``FastMCP.http_app(json_response=True, stateless_http=False)`` (``bench.fastmcp_server``), its session
  manager's ``max_sessions`` raised to the cap once the lifespan has made it.

A session is opened the way a client opens one: POST ``initialize`` (2025-11-25) without a session, keep the
``Mcp-Session-Id``, POST ``notifications/initialized`` (202), then nothing: it stays idle. Sessions are opened
one after the other. In each process, on an event loop whose clock can be moved forward (``ShiftedLoop``):

1. lifespan startup; ``--warmup`` sessions opened first (kept), and one ``tools/call`` on the last of them, so
   that lazily built caches and the tool's worker threads exist;
2. ``gc.collect()``, resident memory read (``/proc/self/statm``): **before**; ``--sessions`` sessions opened
   (RSS read every 1,000); ``gc.collect()``, RSS read again: **peak**; KiB per session = the growth / sessions;
3. the sessions are counted in the framework's own session table, and ``--check`` of them (the first, the last,
   evenly spread between) each answer a ``tools/call`` of ``word_count`` with the expected result: they are
   live and usable, not merely allocated;
4. idle expiry through each framework's own mechanism: the loop's clock is moved past the framework's idle
   timeout (+ 60 s), so that the timers waiting for it fire at once. wiremcp: the ``SessionManager``'s reaper
   (a task sleeping on the loop's clock) wakes and runs ``expire_idle``, the manager's injectable clock being
   the loop's; the SDK and FastMCP: each session's idle ``CancelScope`` (``session_idle_timeout``, default
   1,800 s) reaches its deadline, the session's task ends and the manager discards it. Once the table is empty
   and the sessions' tasks have ended, 10 more turns of the loop, then RSS: **expired**, as the framework
   leaves it; then ``gc.collect()`` here and RSS once more (what a full collection would add);
5. ``tracemalloc`` started, ``--traced`` more sessions opened, ``gc.collect()``: traced Python allocations per
   session (what the interpreter's allocators were asked for, without allocator slack or fragmentation).

What the client keeps while the sessions are live is made before them (``load``): a small object made among
them and kept after they ended (a session id, an int, a tuple) would hold the allocator arena it landed in,
and count as memory the server did not give back.

Then wiremcp alone as a real server (``--real``, one pattern per process, ``burst`` and ``gradual``):
``uvicorn app:asgi`` serving ``examples.word_count:server`` (``WIREMCP_SESSION_IDLE_SECONDS=--idle``, 20 s: the
reaper sweeps every 5 s; JSON answers), a client in this process on one keep-alive connection, RSS read from
outside (``/proc/<pid>/statm``), the sweeps and releases counted in the server's log (``expired N idle
sessions``, ``gave back the memory of ended sessions``). ``--warmup`` sessions are opened, one ``tools/call``
made, and all left to expire; then two rounds, each: RSS **before** (the first round's is the baseline of both),
sessions opened as the pattern says (``CHECKED`` of them spread over the round answer a ``tools/call`` as they
are opened), RSS read every 0.25 s and every 250 sessions (the largest: **peak**), every session left to expire
(found in the log), 3 s of quiet, RSS **after expiry**, and the checked sessions each answer 404.

* ``burst``: ``--real-sessions`` (5,000) sessions opened one after the other as fast as they are answered (about
  2 s): they end together, in one or two sweeps;
* ``gradual``: sessions arrive at ``--real-sessions / --idle`` a second (250) for ``--idle`` seconds, so that
  about that many are live when the first expire, then at a rate falling linearly to none over ``--fall``
  seconds (80): 15,000 sessions opened over 100 s, the live count rising to its top and then falling over
  about 20 sweeps, each ending a few hundred to 1,250 while new ones still arrive, as a real server's sessions
  end when its traffic falls (no sweep ends both 1,024 sessions and as many as it leaves).

``--pythonmalloc malloc`` runs those servers with ``PYTHONMALLOC=malloc`` (every object from the C library's
``malloc``, whose free pages ``malloc_trim`` returns one by one) instead of CPython's own allocator.

Nothing here asserts on the numbers. The parent process imports no framework.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from array import array
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SERVERS = ("wiremcp", "official", "fastmcp")
PROTOCOL_VERSION = "2025-11-25"
TEXT = "the quick brown fox jumps over the lazy dog"
EXPECTED = {"words": 9, "chars": 43}
TARGET_KIB = 4.0
"""Issue 7: an idle handshake-era session costs at most 4 KiB of resident memory."""
RETURN_RATIO = 1.10
"""Defect 9: once every session has expired, the process is back within 10 % of its RSS before them."""

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                   Awaitable[None]]


def rss_bytes() -> int:
    """Resident set size of this process (``/proc/self/statm``: resident pages).

    Read with ``os.read``: each text-mode ``open()`` leaves a small block allocated (67 bytes, CPython 3.11),
    which, made while the sessions are live, would hold the allocator arena it landed in after they ended."""
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 256).split()[1]) * PAGE_SIZE
    finally:
        os.close(fd)


class ShiftedLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock can be moved forward: ``time()`` is the monotonic clock plus a shift.

    Moving it makes every timer due before the new time fire at the loop's next turn, as if that much time had
    passed with no request: how the frameworks' own idle expiry is reached here without waiting half an hour.
    asyncio (sleeps, ``call_later``) and anyio (cancel-scope deadlines) both read this clock."""

    def __init__(self) -> None:
        super().__init__()
        self._shift = array("d", [0.0])  # stored unboxed: no float object is made when it moves (see ``load``)

    def advance(self, seconds: float) -> None:
        self._shift[0] += seconds

    def time(self) -> float:
        return super().time() + self._shift[0]


# -- a minimal ASGI driver -------------------------------------------------------------------------
class Lifespan:
    """Runs an app's lifespan protocol in a task, as uvicorn does (startup before requests, shutdown after)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.events: asyncio.Queue[Message] = asyncio.Queue()
        self.state: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None

    async def _send(self, message: Message) -> None:
        await self.events.put(message)

    async def _expect(self, wanted: str) -> None:
        assert self.task is not None
        getter = asyncio.ensure_future(self.events.get())
        await asyncio.wait({getter, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if not getter.done():
            getter.cancel()
            raise RuntimeError(f"the lifespan ended before {wanted}: {self.task.exception()!r}")
        message = getter.result()
        if message["type"] != wanted:
            raise RuntimeError(f"lifespan: expected {wanted}, got {message!r}")

    async def start(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        async def run() -> None:
            await self.app(scope, self.inbox.get, self._send)

        self.task = asyncio.create_task(run())
        await self.inbox.put({"type": "lifespan.startup"})
        await self._expect("lifespan.startup.complete")

    async def stop(self) -> None:
        await self.inbox.put({"type": "lifespan.shutdown"})
        await self._expect("lifespan.shutdown.complete")
        assert self.task is not None
        await self.task


async def post(app: ASGIApp, state: dict[str, Any], message: dict[str, Any],
               session: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """One POST to /mcp, answered in full; returns status, headers (lower-case names) and body."""
    body = json.dumps(message).encode()
    headers = [(b"host", b"127.0.0.1:8000"), (b"accept", b"application/json, text/event-stream"),
               (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"mcp-protocol-version", PROTOCOL_VERSION.encode())]
    if session is not None:
        headers.append((b"mcp-session-id", session.encode()))
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "root_path": "",
             "query_string": b"", "headers": headers, "client": ("127.0.0.1", 50000),
             "server": ("127.0.0.1", 8000), "state": dict(state)}
    complete = asyncio.Event()
    sent = False
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await complete.wait()  # a client that stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(event: Message) -> None:
        if event["type"] == "http.response.start":
            start.update(event)
        elif event["type"] == "http.response.body":
            chunks.append(event.get("body", b""))
            if not event.get("more_body", False):
                complete.set()

    await app(scope, receive, send)
    complete.set()
    got = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in start.get("headers", [])}
    return int(start.get("status", 0)), got, b"".join(chunks)


def answer_of(headers: dict[str, str], body: bytes) -> Any:
    """The JSON-RPC message of a JSON or SSE answer."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        for line in body.decode().splitlines():
            if line.startswith("data:") and '"result"' in line:
                return json.loads(line[5:])
        return None
    return json.loads(body) if body else None


# -- the frameworks (imported only in their child process) ------------------------------------------
class Subject:
    """One framework's app and a way to count its live sessions."""

    app: ASGIApp

    def after_startup(self) -> None:
        pass

    async def live(self) -> int:
        raise NotImplementedError

    async def remaining(self) -> int:
        """Sessions not ended yet, while an expiry may be under way."""
        return await self.live()

    def idle_timeout(self) -> float:
        """Seconds after which the framework ends an idle session."""
        raise NotImplementedError

    @staticmethod
    def _manager_count(manager: Any) -> int:
        return len(manager._server_instances)

    @staticmethod
    def _manager_timeout(manager: Any) -> float:
        timeout = manager.session_idle_timeout
        if not isinstance(timeout, int | float):
            raise RuntimeError(f"the session manager has no idle timeout ({timeout!r})")
        return float(timeout)


class Wiremcp(Subject):
    def __init__(self, cap: int) -> None:
        from examples.word_count import server
        from wiremcp.transports.http_app import MCPHttpApp

        self.http_app = MCPHttpApp(server, max_sessions=cap)
        self.app = self.http_app
        # The manager's injectable clock (``SessionManager(clock=...)``; the app makes its manager itself, so it
        # is set here) is the loop's: the reaper sleeps on the loop's clock and compares the sessions' last
        # activity with the manager's, so that moving the loop's clock moves both.
        self.http_app.manager._clock = asyncio.get_running_loop().time

    async def live(self) -> int:
        live, stored = len(self.http_app.manager.live), await self.http_app.manager.store.count()
        if live != stored:
            raise RuntimeError(f"{live} live sessions in the manager, {stored} in the store")
        return live

    async def remaining(self) -> int:
        return max(len(self.http_app.manager.live), await self.http_app.manager.store.count())

    def idle_timeout(self) -> float:
        return self.http_app.manager.idle_timeout


class Official(Subject):
    def __init__(self, cap: int) -> None:
        from bench.official_server import build

        self.server = build()
        self.app = self.server.streamable_http_app(json_response=True, stateless_http=False, max_sessions=cap)

    async def live(self) -> int:
        return self._manager_count(self.server.session_manager)

    def idle_timeout(self) -> float:
        return self._manager_timeout(self.server.session_manager)


class FastMCP(Subject):
    def __init__(self, cap: int) -> None:
        from bench.fastmcp_server import build

        self.cap = cap
        self.app = build().http_app(path="/mcp", json_response=True, stateless_http=False)
        self.manager: Any = None

    def after_startup(self) -> None:
        # The session manager is made by the lifespan (one per lifespan cycle), held by the /mcp route's endpoint.
        for route in getattr(self.app, "routes", []):
            manager = getattr(getattr(route, "endpoint", None), "session_manager", None)
            if manager is not None:
                self.manager = manager
        if self.manager is None:
            raise RuntimeError("no session manager found on FastMCP's /mcp route")
        self.manager.max_sessions = self.cap

    async def live(self) -> int:
        return self._manager_count(self.manager)

    def idle_timeout(self) -> float:
        return self._manager_timeout(self.manager)


SUBJECTS: dict[str, Callable[[int], Subject]] = {"wiremcp": Wiremcp, "official": Official, "fastmcp": FastMCP}


async def open_session(app: ASGIApp, state: dict[str, Any], n: int) -> str:
    status, headers, body = await post(app, state, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": f"bench-{n}", "version": "1.0.0"}}})
    session = headers.get("mcp-session-id")
    answer = answer_of(headers, body)
    if status != 200 or session is None or not isinstance(answer, dict) or "result" not in answer:
        raise RuntimeError(f"session {n}: initialize answered HTTP {status}: {body[:300]!r}")
    status, _, body = await post(app, state, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    if status != 202:
        raise RuntimeError(f"session {n}: notifications/initialized answered HTTP {status}: {body[:300]!r}")
    return session


async def call_word_count(app: ASGIApp, state: dict[str, Any], session: str) -> None:
    status, headers, body = await post(app, state, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "word_count", "arguments": {"text": TEXT}}}, session)
    answer = answer_of(headers, body)
    result = answer.get("result") if isinstance(answer, dict) else None
    if status != 200 or not isinstance(result, dict) or result.get("structuredContent") != EXPECTED:
        raise RuntimeError(f"tools/call on session {session}: HTTP {status}: {body[:300]!r}")


SWEEP_SECONDS = 60.0
"""Added to the idle timeout when the clock is moved: wiremcp's reaper sweeps every min(timeout / 4, 30 s)."""
EXPIRY_LIMIT = 300.0
"""Seconds (real time) the sessions may take to end once their timeout has passed."""
SETTLE_TURNS = 10
"""Turns of the event loop (10 ms apart) after the last session ended, before RSS is read."""

# Slots of the numbers kept while the sessions are live (see ``load``).
SECONDS, LIVE, PEAK, EXPIRY, EXPIRED, COLLECTED = range(6)


async def load(app: ASGIApp, state: dict[str, Any], first: int, sessions: int, picks: set[int],
               sample: list[str], curve: array[int], marks: array[float], rss0: int) -> None:
    """Open ``sessions`` sessions; keep the ids of ``picks`` in ``sample`` and the RSS growth every 1,000 in
    ``curve``, the seconds it took in ``marks``. Everything it keeps goes into storage made before the sessions:
    a small object made while they are live (an id, an int, a tuple) and kept after they ended would hold the
    whole allocator arena (1 MiB) it landed in, among theirs, and count as memory the server did not give back."""
    t0 = time.perf_counter()
    kept = 0
    for n in range(sessions):
        sid = await open_session(app, state, first + n)
        if n in picks:
            sample[kept] = sid
            kept += 1
        if (n + 1) % 1000 == 0:
            curve[(n + 1) // 1000] = rss_bytes() - rss0
    marks[SECONDS] = time.perf_counter() - t0


async def child(name: str, sessions: int, warmup: int, traced: int, check: int, cap: int,
                top: int = 8) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    if not isinstance(loop, ShiftedLoop):
        raise RuntimeError("the child runs on a ShiftedLoop")
    subject = SUBJECTS[name](cap)
    app, lifespan = subject.app, Lifespan(subject.app)
    await lifespan.start()
    subject.after_startup()
    state = lifespan.state
    for n in range(warmup):
        sid = await open_session(app, state, n)
    if warmup:
        await call_word_count(app, state, sid)  # what the first call sets up (worker threads) exists from here on
    # Only the ids checked afterwards are kept (the first, the last, evenly spread between): a list of all of
    # them would be this client's memory, counted as the server's.
    picks = {round(i * (sessions - 1) / max(check - 1, 1)) for i in range(min(check, sessions))}
    sample = [""] * len(picks)
    curve = array("q", bytes(8 * (sessions // 1000 + 1)))
    marks = array("d", bytes(8 * 6))
    gc.collect()
    rss0 = rss_bytes()
    tasks0 = len(asyncio.all_tasks())
    await load(app, state, warmup, sessions, picks, sample, curve, marks, rss0)
    gc.collect()
    marks[PEAK] = rss_bytes()
    marks[LIVE] = await subject.live()
    for sid in sample:
        await call_word_count(app, state, sid)
    checked = len(sample)
    sample.clear()
    sid = ""
    # Idle expiry through each framework's own mechanism: the loop's clock moves past the idle timeout. Done
    # once the sessions are out of the framework's table and their tasks (the SDK: one per session) have ended.
    marks[EXPIRY] = time.perf_counter()
    loop.advance(subject.idle_timeout() + SWEEP_SECONDS)
    while await subject.remaining() or len(asyncio.all_tasks()) > tasks0:
        if time.perf_counter() - marks[EXPIRY] > EXPIRY_LIMIT:
            raise RuntimeError(f"{await subject.remaining()} sessions and {len(asyncio.all_tasks()) - tasks0} "
                               f"tasks left {EXPIRY_LIMIT:g} s after the idle timeout")
        await asyncio.sleep(0.01)
    marks[EXPIRY] = time.perf_counter() - marks[EXPIRY]
    for _ in range(SETTLE_TURNS):  # what the ended tasks queued (the SDK: a done-callback each) runs first
        await asyncio.sleep(0.01)
    marks[EXPIRED] = rss_bytes()  # as the framework left it: no collection but its own
    gc.collect()
    marks[COLLECTED] = rss_bytes()
    left = await subject.live()
    # traced Python allocations per session, opened now (the tables have room, or grow, as on a fresh start)
    tracemalloc.start()
    gc.collect()
    traced0 = tracemalloc.get_traced_memory()[0]
    for n in range(traced):
        await open_session(app, state, warmup + sessions + n)
    gc.collect()
    traced1 = tracemalloc.get_traced_memory()[0]
    sites = tracemalloc.take_snapshot().statistics("lineno")[:top]
    tracemalloc.stop()
    live_after = await subject.live()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    await lifespan.stop()
    rss1 = int(marks[PEAK])
    return {"server": name, "sessions": sessions, "warmup": warmup, "traced": traced, "live": int(marks[LIVE]),
            "live_after_expiry": left, "live_after_traced": live_after, "checked": checked,
            "idle_timeout": subject.idle_timeout(), "expiry_seconds": marks[EXPIRY],
            "rss_before": rss0, "rss_peak": rss1, "rss_expired": int(marks[EXPIRED]),
            "rss_expired_collected": int(marks[COLLECTED]),
            "kib_per_session": (rss1 - rss0) / sessions / 1024 if sessions else 0.0,
            "traced_kib_per_session": (traced1 - traced0) / traced / 1024 if traced else 0.0,
            "seconds": marks[SECONDS], "peak_rss_kib": peak_kib,
            "curve": [(1000 * i, curve[i]) for i in range(len(curve))], "python": sys.version.split()[0],
            "sites": [(_site(stat.traceback[0].filename, stat.traceback[0].lineno), stat.size / max(traced, 1),
                       stat.count / max(traced, 1)) for stat in sites]}


def _site(filename: str, lineno: int) -> str:
    """``site-packages/mcp/server/x.py:12`` -> ``mcp/server/x.py:12``; the repo's files relative to it."""
    filename = re.sub(r"^.*/lib/python3\.\d+/(site-packages/)?", "", filename).removeprefix(f"{ROOT}/")
    return f"{filename}:{lineno}"


# -- a real server: sessions ending in bulk, and a few at a time ---------------------------------------------
PATTERNS = ("burst", "gradual")
REAL_SERVER = "examples.word_count:server"
EXPIRED_LINE = re.compile(rb"expired (\d+) idle sessions")
"""The line ``SessionManager.expire_idle`` logs (INFO) for each sweep that ended sessions."""
RELEASE_LINE = re.compile(rb"gave back the memory of ")
"""The line ``SessionManager`` logs (INFO) each time it gives their memory back."""
SAMPLE_EVERY = 0.25
"""Seconds between two RSS readings of the server while a round runs (the peak is the largest)."""
SETTLE_SECONDS = 3.0
"""After the last session of a round ended: the server is left alone this long before RSS is read."""
CHECKED = 20
"""Sessions of each round that answer a ``tools/call`` while live, and 404 once they have expired."""


class RealServer:
    """``uvicorn app:asgi`` serving ``examples.word_count:server`` in a process of its own, with a short idle
    timeout; the client (this process) reads its RSS from ``/proc/<pid>/statm`` and its sweeps from its log."""

    def __init__(self, idle: float, cap: int, log: Path, allocator: str = "") -> None:
        from deploy.processes import free_port

        self.port = free_port()
        self.log = log
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WIREMCP_", "PYTHON"))}
        env.update({"PYTHONPATH": str(ROOT), "WIREMCP_SERVER": REAL_SERVER, "WIREMCP_LOG_LEVEL": "INFO",
                    "WIREMCP_SESSION_IDLE_SECONDS": f"{idle:g}", "WIREMCP_MAX_SESSIONS": str(cap),
                    "WIREMCP_JSON_RESPONSE": "true"})
        if allocator:
            env["PYTHONMALLOC"] = allocator
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "app:asgi", "--host", "127.0.0.1", "--port", str(self.port),
                 "--log-level", "warning", "--no-access-log", "--lifespan", "on",
                 "--timeout-keep-alive", "3600"],  # one connection for the whole run, idle pauses included
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def __enter__(self) -> RealServer:
        from deploy.processes import accepting, wait_ready

        if not wait_ready(self.process, lambda: accepting("127.0.0.1", self.port), "the server"):
            raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.output()[-3000:]}")
        return self

    def __exit__(self, *exc: object) -> None:
        from deploy.processes import stop_process

        self.connection.close()
        stop_process(self.process, 10.0)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def rss(self) -> int:
        with open(f"/proc/{self.process.pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE_SIZE

    def sweeps(self) -> list[int]:
        """How many sessions each sweep that ended some ended, in order, so far."""
        return [int(m.group(1)) for m in EXPIRED_LINE.finditer(self.log.read_bytes())]

    def releases(self) -> int:
        """How many times the server gave the memory of ended sessions back, so far."""
        return len(RELEASE_LINE.findall(self.log.read_bytes()))

    def post(self, message: dict[str, Any], session: str | None = None) -> tuple[int, str | None, bytes]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
                   "mcp-protocol-version": PROTOCOL_VERSION}
        if session is not None:
            headers["mcp-session-id"] = session
        self.connection.request("POST", "/mcp", json.dumps(message), headers)
        response = self.connection.getresponse()
        return response.status, response.getheader("mcp-session-id"), response.read()

    def open_session(self, n: int) -> str:
        status, session, body = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": f"bench-{n}", "version": "1.0.0"}}})
        if status != 200 or session is None or b'"result"' not in body:
            raise RuntimeError(f"session {n}: initialize answered HTTP {status}: {body[:300]!r}")
        status, _, body = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        if status != 202:
            raise RuntimeError(f"session {n}: notifications/initialized answered HTTP {status}: {body[:300]!r}")
        return session

    def call_word_count(self, session: str) -> None:
        status, _, body = self.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "word_count", "arguments": {"text": TEXT}}}, session)
        answer = json.loads(body) if status == 200 else None
        if not isinstance(answer, dict) or answer.get("result", {}).get("structuredContent") != EXPECTED:
            raise RuntimeError(f"tools/call on session {session}: HTTP {status}: {body[:300]!r}")

    def gone(self, session: str) -> None:
        status, _, body = self.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
        if status != 404:
            raise RuntimeError(f"session {session} answered HTTP {status} after it expired: {body[:300]!r}")


def arrivals(pattern: str, sessions: int, idle: float, fall: float) -> tuple[int, Callable[[float], float]]:
    """How many sessions a round of ``pattern`` opens, and how many it has opened ``t`` seconds in.

    burst: ``sessions``, all at once (as fast as they are answered). gradual: at a steady rate of
    ``sessions / idle`` a second for ``idle`` seconds, so that ``sessions`` are live when the first ones
    expire, then at a rate falling linearly to 0 over ``fall`` seconds: the live count falls a little at each
    sweep while sessions still arrive, and reaches 0 ``idle`` seconds after the last arrival."""
    if pattern == "burst":
        return sessions, lambda t: float(sessions)
    rate = sessions / idle
    total = round(sessions + rate * fall / 2)

    def opened(t: float) -> float:
        if t <= idle:
            return rate * t
        s = min(t - idle, fall)
        return sessions + rate * (s - s * s / (2 * fall))
    return total, opened


def real_round(server: RealServer, pattern: str, args: argparse.Namespace, first: int) -> dict[str, Any]:
    """One round: sessions opened as ``pattern`` says, all left to expire; RSS before, at most, and after."""
    total, opened_by = arrivals(pattern, args.real_sessions, args.idle, args.fall)
    picks = {round(i * (total - 1) / max(CHECKED - 1, 1)) for i in range(min(CHECKED, total))}
    sweeps0, releases0 = len(server.sweeps()), server.releases()
    rss0 = server.rss()
    peak, live_most, opened, expired = rss0, 0, 0, 0
    sample: list[str] = []
    started = time.monotonic()
    last_read = started
    while opened < total:
        due = min(total, int(opened_by(time.monotonic() - started)))
        while opened < due:
            sid = server.open_session(first + opened)
            if opened in picks:
                server.call_word_count(sid)  # live and usable, not merely allocated
                sample.append(sid)
            opened += 1
            if opened % 250 == 0:
                peak = max(peak, server.rss())
        now = time.monotonic()
        if now - last_read >= SAMPLE_EVERY:
            last_read = now
            peak = max(peak, server.rss())
            expired = sum(server.sweeps()[sweeps0:])
            live_most = max(live_most, opened - expired)
        time.sleep(0.005)  # paces the arrivals (the schedule is the clock's), not a wait for the server
    opening = time.monotonic() - started
    peak = max(peak, server.rss())
    deadline = time.monotonic() + args.idle * 2 + 30
    while (expired := sum(server.sweeps()[sweeps0:])) < total:
        live_most = max(live_most, opened - expired)
        peak = max(peak, server.rss())
        if time.monotonic() > deadline or server.process.poll() is not None:
            raise RuntimeError(f"{pattern}: {total - expired} of {total} sessions had not expired "
                               f"{args.idle * 2 + 30:g} s after the last one opened:\n{server.output()[-2000:]}")
        time.sleep(SAMPLE_EVERY)
    time.sleep(SETTLE_SECONDS)  # the server idles: what it holds now is what it keeps
    after = server.rss()
    for sid in sample:
        server.gone(sid)
    ended = server.sweeps()[sweeps0:]
    return {"sessions": total, "live_most": live_most, "opening_seconds": opening, "sweeps": len(ended),
            "most_in_one_sweep": max(ended), "releases": server.releases() - releases0,
            "rss_before": rss0, "rss_peak": peak, "rss_after": after, "checked": len(sample)}


def real_run(pattern: str, args: argparse.Namespace, logdir: Path) -> dict[str, Any]:
    """A fresh server; ``--warmup`` sessions opened and a ``tools/call`` made, left to expire; then two rounds."""
    with RealServer(args.idle, args.cap, logdir / f"{pattern}.log", args.pythonmalloc) as server:
        sid = ""
        for n in range(args.warmup):
            sid = server.open_session(n)
        if sid:
            server.call_word_count(sid)
        deadline = time.monotonic() + args.idle * 2 + 30
        while sum(server.sweeps()) < args.warmup:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the warm-up sessions had not expired:\n{server.output()[-2000:]}")
            time.sleep(SAMPLE_EVERY)
        time.sleep(SETTLE_SECONDS)
        rounds = [real_round(server, pattern, args, args.warmup)]
        rounds.append(real_round(server, pattern, args, args.warmup + rounds[0]["sessions"]))
        if "Traceback" in server.output():
            raise RuntimeError(f"the server logged a traceback:\n{server.output()[-3000:]}")
    return {"pattern": pattern, "idle_timeout": args.idle, "pythonmalloc": args.pythonmalloc, "rounds": rounds}


# -- the parent ------------------------------------------------------------------------------------
def run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    python = sys.executable
    if name == "fastmcp":
        from bench.peers import describe, fastmcp_python

        python = str(fastmcp_python())
        print(f"fastmcp: {describe(Path(python))}", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIREMCP_", "PYTHON"))}
    env.update({"PYTHONPATH": str(ROOT), "WIREMCP_LOG_LEVEL": "WARNING", "FASTMCP_CHECK_FOR_UPDATES": "off",
                "FASTMCP_SHOW_SERVER_BANNER": "false", "FASTMCP_LOG_LEVEL": "WARNING"})
    argv = [python, str(Path(__file__).resolve()), "--child", name, "--sessions", str(args.sessions),
            "--warmup", str(args.warmup), "--traced", str(args.traced), "--check", str(args.check),
            "--cap", str(args.cap)]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{name} exited with {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(line[len("RESULT "):])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--servers", default=",".join(SERVERS),
                        help="in process, comma-separated (default: %(default)s; '' for none)")
    parser.add_argument("--sessions", type=int, default=10_000, help="idle sessions measured (default: 10000)")
    parser.add_argument("--warmup", type=int, default=200, help="sessions opened (and kept) before measuring")
    parser.add_argument("--traced", type=int, default=1_000, help="more sessions opened under tracemalloc")
    parser.add_argument("--check", type=int, default=100, help="measured sessions that then answer a tools/call")
    parser.add_argument("--cap", type=int, default=20_000, help="the apps' session limit (default: 20000)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per framework")
    parser.add_argument("--real", default=",".join(PATTERNS),
                        help="wiremcp under uvicorn, comma-separated (default: %(default)s; '' for none)")
    parser.add_argument("--real-sessions", type=int, default=5_000,
                        help="sessions live at the top of each round of --real (default: 5000)")
    parser.add_argument("--idle", type=float, default=20.0,
                        help="--real: the server's WIREMCP_SESSION_IDLE_SECONDS (default: 20)")
    parser.add_argument("--fall", type=float, default=80.0,
                        help="--real gradual: seconds over which arrivals fall to none (default: 80)")
    parser.add_argument("--pythonmalloc", default="", choices=("", "pymalloc", "malloc"),
                        help="--real: the servers' PYTHONMALLOC (default: unset, CPython's pymalloc)")
    parser.add_argument("--logdir", type=Path, help="--real: keep the servers' logs here (default: a temporary directory)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--child", choices=SERVERS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        with asyncio.Runner(loop_factory=ShiftedLoop) as runner:
            result = runner.run(child(args.child, args.sessions, args.warmup, args.traced, args.check, args.cap))
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    if unknown := [n for n in names if n not in SERVERS]:
        parser.error(f"unknown server: {', '.join(unknown)}")
    patterns = [n.strip() for n in args.real.split(",") if n.strip()]
    if unknown := [n for n in patterns if n not in PATTERNS]:
        parser.error(f"unknown --real pattern: {', '.join(unknown)}")
    if args.warmup + args.sessions + args.traced > args.cap:
        parser.error("--cap must hold --warmup + --sessions + --traced sessions")
    if args.warmup + args.real_sessions > args.cap:
        parser.error("--cap must hold --warmup + --real-sessions sessions")
    results = in_process(names, args)
    if results is None:
        return 1
    real: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="session-memory-") as scratch:
        logdir = args.logdir or Path(scratch)
        logdir.mkdir(parents=True, exist_ok=True)
        for pattern in patterns:
            total, _ = arrivals(pattern, args.real_sessions, args.idle, args.fall)
            allocator = f", PYTHONMALLOC={args.pythonmalloc}" if args.pythonmalloc else ""
            print(f"wiremcp under uvicorn, {pattern}: {args.warmup} warm-up sessions, then 2 rounds of {total:,} "
                  f"sessions (idle timeout {args.idle:g} s{allocator}) ...", flush=True)
            try:
                real.append(real_run(pattern, args, logdir))
            except (RuntimeError, TimeoutError, OSError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
    if real:
        report_real(real)
    if args.json is not None:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "results": results, "real": real},
                                        indent=2))
    return 0


def in_process(names: list[str], args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The in-process runs of ``names`` and their report; None if one failed."""
    results: list[dict[str, Any]] = []
    if not names:
        return results
    for name in names:
        print(f"{name}: opening {args.warmup} + {args.sessions:,} + {args.traced:,} idle sessions ...", flush=True)
        try:
            results.append(run_child(name, args))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return None
        r = results[-1]
        print("  RSS growth every 1,000 sessions (KiB): " + ", ".join(f"{b // 1024:,}" for _, b in r["curve"][1:]),
              flush=True)
        print(f"  all {r['live']:,} ended {r['expiry_seconds']:.1f} s after the clock passed their idle timeout "
              f"({r['idle_timeout']:g} s): RSS {r['rss_expired'] / 2**20:.1f} MiB, "
              f"{r['rss_expired_collected'] / 2**20:.1f} MiB after a gc.collect() here", flush=True)
        print("  traced allocations per session, by line (bytes, blocks): " + "; ".join(
            f"{site} {size:.0f} B/{count:.1f}" for site, size, count in r["sites"]), flush=True)
    print()
    print(f"{'server':<9} {'sessions live':>13} {'checked':>7} {'RSS before MiB':>14} {'RSS peak MiB':>12} "
          f"{'RSS expired MiB':>15} {'expired/before':>14} {'+ gc.collect()':>14} {'KiB/session RSS':>15} "
          f"{'KiB/session traced':>18} {'sessions/s':>10}")
    for r in results:
        print(f"{r['server']:<9} {r['live']:>13,} {r['checked']:>7} {r['rss_before'] / 2**20:>14.1f} "
              f"{r['rss_peak'] / 2**20:>12.1f} {r['rss_expired'] / 2**20:>15.1f} "
              f"{r['rss_expired'] / r['rss_before']:>14.3f} {r['rss_expired_collected'] / 2**20:>14.1f} "
              f"{r['kib_per_session']:>15.2f} {r['traced_kib_per_session']:>18.2f} {r['sessions'] / r['seconds']:>10,.0f}")
    by_name = {r["server"]: r for r in results}
    if "wiremcp" in by_name:
        ours = by_name["wiremcp"]
        for ref in ("official", "fastmcp"):
            if ref in by_name and by_name[ref]["kib_per_session"] > 0:
                print(f"wiremcp / {ref}: {ours['kib_per_session'] / by_name[ref]['kib_per_session']:.3f} "
                      "of the resident memory per idle session")
        verdict = "met" if ours["kib_per_session"] <= TARGET_KIB else "NOT MET"
        print(f"issue 7 target: idle session <= {TARGET_KIB:g} KiB resident: wiremcp {ours['kib_per_session']:.2f} "
              f"KiB: {verdict}")
        held = ours["live"] >= ours["sessions"] and ours["checked"] > 0
        print(f"issue 7 target: 10,000 live sessions in one process: wiremcp held {ours['live']:,} "
              f"({ours['checked']} of them checked with a tools/call): {'met' if held and ours['live'] >= 10_000 else 'NOT MET'}")
        ratio = ours["rss_expired"] / ours["rss_before"]
        print(f"defect 9 target: RSS after expiry within {RETURN_RATIO - 1:.0%} of before: wiremcp {ratio:.3f} of "
              f"before: {'met' if ratio <= RETURN_RATIO and ours['live_after_expiry'] == 0 else 'NOT MET'}")
    print()
    return results


def report_real(real: list[dict[str, Any]]) -> None:
    """The table of the runs under uvicorn (each round's RSS against the RSS before the first), and item 8's
    target: the gradual run's RSS after expiry within 10 % of before."""
    print(f"{'wiremcp under uvicorn':<19} {'sessions':>8} {'live at most':>12} {'opened over s':>13} "
          f"{'sweeps':>6} {'most in one':>11} {'releases':>8} {'RSS before MiB':>14} {'peak MiB':>8} "
          f"{'after expiry MiB':>16} {'after/before':>12}")
    for run in real:
        before = run["rounds"][0]["rss_before"]
        for n, r in enumerate(run["rounds"], 1):
            print(f"{run['pattern'] + f', round {n}':<19} {r['sessions']:>8,} {r['live_most']:>12,} "
                  f"{r['opening_seconds']:>13.1f} {r['sweeps']:>6} {r['most_in_one_sweep']:>11,} {r['releases']:>8} "
                  f"{r['rss_before'] / 2**20:>14.1f} {r['rss_peak'] / 2**20:>8.1f} {r['rss_after'] / 2**20:>16.1f} "
                  f"{r['rss_after'] / before:>12.3f}")
    for run in real:
        if run["pattern"] == "gradual":
            before, first, second = run["rounds"][0]["rss_before"], run["rounds"][0], run["rounds"][1]
            ratio = first["rss_after"] / before
            print(f"item 8 target: sessions ending a few at a time, RSS after expiry within {RETURN_RATIO - 1:.0%} "
                  f"of before: {ratio:.3f} of before ({second['rss_after'] / before:.3f} after a second round): "
                  f"{'met' if ratio <= RETURN_RATIO else 'NOT MET'}")


if __name__ == "__main__":
    sys.exit(main())
