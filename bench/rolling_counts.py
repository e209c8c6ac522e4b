"""The counting of the rolling load (``bench/rolling_load.py``) and what it comes to: ``KindStats`` per kind of
operation, ``Ledger`` of the event ids one client has seen, ``Tally`` of every count its clients share, ``Op``
under way; and ``Report``, the counts at the end with their verdict (``Judged``, which ``bench/soak.py``'s
result shares).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass

SAMPLES = 40
"""How many failures (and late notifications) the report quotes in full."""


class Judged:
    """Something judged by its problems: it passed when there are none; its verdict says ``PASS`` and what it
    did (``summary``), or ``FAIL`` and every problem."""

    def problems(self) -> list[str]:
        """Everything that makes the run a failure, one phrase each."""
        raise NotImplementedError

    def summary(self) -> str:
        """What a run that passed did, in one phrase (after ``PASS: ``)."""
        raise NotImplementedError

    @property
    def passed(self) -> bool:
        return not self.problems()

    @property
    def verdict(self) -> str:
        problems = self.problems()
        if problems:
            return "FAIL: " + "; ".join(problems)
        return "PASS: " + self.summary()


@dataclass
class KindStats:
    """The operations of one kind (``handshake/slow``, ``stateless/task``, ``touch``...)."""

    sent: int = 0
    ok: int = 0
    retried: int = 0
    """Of ``ok``: those that needed a retry (503 with Retry-After, or a retryable error) first."""
    failed: int = 0
    missing: int = 0
    """Of ``failed``: no answer ever came."""
    duplicated: int = 0
    """Answers that came more than once."""


@dataclass
class Report(Judged):
    """What the load saw, and its verdict."""

    seconds: float
    http_requests: int
    kinds: dict[str, KindStats]
    failures: dict[str, int]
    """``kind: reason`` -> count."""
    failure_samples: list[str]
    retries: dict[str, int]
    """``kind: reason`` -> how many times a request was sent again."""
    events_lost: int
    events_duplicated: int
    progress_lost: int
    progress_duplicated: int
    notifications_sent: int
    """Handshake era: touches acknowledged."""
    notifications_received: int
    notifications_lost: int
    notifications_duplicated: int
    notifications_ambiguous: int
    """Touches whose request failed: the server may or may not have sent their notification."""
    notes: list[str]
    """Late notifications, progress out of order: what the counts do not say."""
    clients: list[str]
    """One line per client: its touches, notifications and stream reopenings."""
    histories: dict[str, list[str]]
    """The stream history of each client something went wrong for."""
    stateless_sent: int
    stateless_sent_while_listening: int
    stateless_received: int
    listen_reopened: int
    listen_endings: dict[str, int]
    get_reconnects: int
    get_endings: dict[str, int]
    post_resumptions: int
    tasks_created: int
    tasks_completed: int
    unexpected_messages: int

    @property
    def failed(self) -> int:
        return sum(k.failed for k in self.kinds.values())

    @property
    def retried(self) -> int:
        return sum(k.retried for k in self.kinds.values())

    @property
    def missing_answers(self) -> int:
        return sum(k.missing for k in self.kinds.values())

    @property
    def duplicated_answers(self) -> int:
        return sum(k.duplicated for k in self.kinds.values())

    @property
    def tasks_unfinished(self) -> int:
        return self.tasks_created - self.tasks_completed

    @property
    def stateless_missed(self) -> int:
        return max(0, self.stateless_sent - self.stateless_received)

    @property
    def requests_per_second(self) -> float:
        return self.http_requests / self.seconds if self.seconds > 0 else 0.0

    def problems(self) -> list[str]:
        """Everything that makes the run a failure, one phrase each."""
        out = []
        if self.failed:
            top = ", ".join(f"{reason} x{n}" for reason, n in sorted(self.failures.items(), key=lambda i: -i[1])[:4])
            out.append(f"{self.failed} failed requests ({top})")
        for count, what in ((self.missing_answers, "missing answers"), (self.duplicated_answers, "duplicated answers"),
                            (self.events_lost, "lost events"), (self.events_duplicated, "duplicated events"),
                            (self.progress_lost, "lost progress notifications"),
                            (self.progress_duplicated, "duplicated progress notifications"),
                            (self.notifications_lost, "lost resource notifications"),
                            (self.notifications_duplicated, "duplicated resource notifications"),
                            (self.tasks_unfinished, "unfinished tasks")):
            if count:
                out.append(f"{count} {what}")
        return out

    def summary(self) -> str:
        return (f"{self.http_requests} requests in {self.seconds:.0f}s, 0 failed ({self.retried} retried), "
                f"0 lost or duplicated events, {self.notifications_received}/{self.notifications_sent} notifications, "
                f"{self.tasks_completed}/{self.tasks_created} tasks")

    def render(self) -> str:
        lines = [f"{self.seconds:.1f}s, {self.http_requests} HTTP requests ({self.requests_per_second:.1f}/s)",
                 f"{'kind':<22}{'sent':>7}{'ok':>7}{'retried':>9}{'failed':>8}{'missing':>9}{'dup':>5}"]
        for kind, k in sorted(self.kinds.items()):
            lines.append(f"{kind:<22}{k.sent:>7}{k.ok:>7}{k.retried:>9}{k.failed:>8}{k.missing:>9}{k.duplicated:>5}")
        lines.append(f"events: lost {self.events_lost}, duplicated {self.events_duplicated}; progress: lost "
                     f"{self.progress_lost}, duplicated {self.progress_duplicated}")
        lines.append(f"resource notifications (handshake era): {self.notifications_sent} sent, "
                     f"{self.notifications_received} received, {self.notifications_lost} lost, "
                     f"{self.notifications_duplicated} duplicated, {self.notifications_ambiguous} touches failed")
        lines.append(f"resource notifications (stateless era, reported only): {self.stateless_sent} sent "
                     f"({self.stateless_sent_while_listening} while listening), {self.stateless_received} received, "
                     f"{self.stateless_missed} missed")
        lines.append(f"tasks: {self.tasks_created} created, {self.tasks_completed} completed, "
                     f"{self.tasks_unfinished} not finished")
        lines.append(f"streams: GET reconnected {self.get_reconnects}x {dict(self.get_endings)}; POST streams resumed "
                     f"{self.post_resumptions}x; listen reopened {self.listen_reopened}x {dict(self.listen_endings)}")
        if self.retries:
            lines.append("retried: " + ", ".join(f"{r} x{n}" for r, n in sorted(self.retries.items())))
        if self.failures:
            lines.append("failures: " + ", ".join(f"{r} x{n}" for r, n in sorted(self.failures.items())))
            lines.extend(f"  {sample}" for sample in self.failure_samples)
        lines.append("clients: " + "; ".join(self.clients))
        if self.notes:
            lines.append("notes:")
            lines.extend(f"  {note}" for note in self.notes)
        for name, history in self.histories.items():
            lines.append(f"history of {name}:")
            lines.extend(f"  {entry}" for entry in history)
        if self.unexpected_messages:
            lines.append(f"unexpected messages: {self.unexpected_messages}")
        return "\n".join(lines)


class Ledger:
    """The event ids one client has seen, per stream: a repeated one is a duplicate, a skipped number a loss."""

    def __init__(self) -> None:
        self.seqs: dict[str, set[int]] = {}
        self.duplicated = 0

    def record(self, event_id: str) -> bool:
        """False for an id seen before (counted as a duplicate)."""
        stream, _, seq = event_id.rpartition("_")
        if not stream or not seq.isdigit():
            return True  # not an id of ours to number
        seen = self.seqs.setdefault(stream, set())
        if int(seq) in seen:
            self.duplicated += 1
            return False
        seen.add(int(seq))
        return True

    def lost(self) -> int:
        """Numbers skipped between the first and the last event seen of each stream."""
        return sum(max(s) - min(s) + 1 - len(s) for s in self.seqs.values() if s)


class Tally:
    """Every count of one load, shared by its clients."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        """The origin of every ``t=`` in the notes (the clients start connecting)."""
        self.running_since = self.started
        """When the load proper began (every client connected): what requests per second are over."""
        self.kinds: dict[str, KindStats] = {}
        self.failures: Counter[str] = Counter()
        self.samples: list[str] = []
        self.retries: Counter[str] = Counter()
        self.http_requests = 0
        self.progress_lost = 0
        self.progress_duplicated = 0
        self.post_resumptions = 0
        self.get_endings: Counter[str] = Counter()
        self.listen_endings: Counter[str] = Counter()
        self.tasks_created = 0
        self.tasks_completed = 0
        self.unexpected = 0
        self.ops_done = 0
        self.running: Counter[str] = Counter()
        """Operations under way now, by kind."""
        self.notes: list[str] = []
        self.changed = asyncio.Condition()
        """Notified at every notification received and every operation done."""

    def kind(self, kind: str) -> KindStats:
        return self.kinds.setdefault(kind, KindStats())

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def fail(self, kind: str, reason: str, detail: str = "", who: str = "") -> None:
        self.failures[f"{kind}: {reason}"] += 1
        if len(self.samples) < SAMPLES:
            self.samples.append(f"t={self.elapsed():6.1f}s {who} {kind}: {reason} {detail[:200]}".rstrip())

    def note(self, text: str) -> None:
        """Something the report should quote (a late notification, progress out of order)."""
        if len(self.notes) < SAMPLES:
            self.notes.append(f"t={self.elapsed():6.1f}s {text}")

    async def poke(self) -> None:
        async with self.changed:
            self.changed.notify_all()


@dataclass
class Op:
    """One operation under way: its kind, whether it needed a retry, and who runs it."""

    kind: str
    who: str
    retried: bool = False

