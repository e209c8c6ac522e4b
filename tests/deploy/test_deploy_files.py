"""Static checks of the deployment files: the Dockerfile (and .dockerignore), deploy/compose*.yaml with
deploy/nginx.conf, and deploy/kubernetes/. Docker and a cluster are not needed: the files are parsed (PyYAML),
validated against their schemas (the compose specification's, with check-jsonschema; Kubernetes', with
kubernetes-validate) and held against each other, against pyproject.toml and against the settings the server
reads. What compose, nginx or Kubernetes would do with them is not observed here: the tests check the
configuration values that make them do it. The probe commands alone are run, against a stand-in server.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import re
import shlex
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.http import refusing_port
from wiremcp.shutdown import CUT_OFF_BOUND, STEP_BOUND
from wiremcp.transports.drain import QUIET_MARGIN
from wiremcp.transports.serving.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
SETTINGS = {f"WIREMCP_{field.name.upper()}" for field in dataclasses.fields(Settings)}


# -- the Dockerfile ---------------------------------------------------------------------------------------------
def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order; comments dropped, continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if line.strip().startswith("#") or (not line.strip() and not pending):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        instruction, _, arguments = pending.strip().partition(" ")
        out.append((instruction.upper(), arguments.strip()))
        pending = ""
    assert not pending, "a continuation line at the end of the Dockerfile"
    return out


@dataclasses.dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[tuple[str, str]]

    def all(self, instruction: str) -> list[str]:
        return [arguments for name, arguments in self.instructions if name == instruction]

    def last(self, instruction: str) -> str:
        found = self.all(instruction)
        assert found, f"no {instruction} in the stage {self.name or self.image}"
        return found[-1]

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for arguments in self.all("ENV"):
            for pair in shlex.split(arguments):
                key, sep, value = pair.partition("=")
                assert sep, f"ENV {pair!r}: use the KEY=VALUE form"
                out[key] = value
        return out


def stages() -> list[Stage]:
    instructions = dockerfile_instructions((ROOT / "Dockerfile").read_text())
    args: dict[str, str] = {}
    out: list[Stage] = []
    for instruction, arguments in instructions:
        if instruction == "ARG" and not out:
            name, _, default = arguments.partition("=")
            args[name] = default
        elif instruction == "FROM":
            words = arguments.split()
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m.group(1) or m.group(2)], words[0])
            out.append(Stage(image, words[2] if len(words) == 3 and words[1].upper() == "AS" else None, []))
        else:
            assert out, f"{instruction} before the first FROM"
            out[-1].instructions.append((instruction, arguments))
    return out


def final_stage() -> Stage:
    return stages()[-1]


def exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list)
    assert all(isinstance(item, str) for item in value)
    return value


def cmd() -> list[str]:
    return exec_form(final_stage().last("CMD"))


def option(argv: list[str], name: str) -> str:
    assert argv.count(name) == 1, (name, argv)
    return argv[argv.index(name) + 1]


def graceful_seconds() -> float:
    return float(option(cmd(), "--timeout-graceful-shutdown"))


def exit_seconds(drain: float, settle: float = 0.0) -> float:
    """The longest a replica takes to exit after SIGTERM (``wiremcp.transports.drain``): the settle delay, the
    idle connections left to close (uvicorn's keep-alive, 5 s by default), the drain and its bounded cut-off,
    the connections its closed streams leave idle, then uvicorn's own wait for connections."""
    idle = 5 + QUIET_MARGIN
    return settle + idle + drain + CUT_OFF_BOUND + STEP_BOUND + idle + graceful_seconds()


def test_the_dockerfile_has_two_stages_on_python_3_11_slim() -> None:
    builder, *_, final = stages()
    assert {stage.image for stage in stages()} == {"python:3.11-slim"}
    assert builder.name == "builder"
    # the final stage gets the venv, the door app:asgi goes through and the examples, nothing else
    assert final.all("COPY") == ["--from=builder /opt/venv /opt/venv",
                                 "--from=builder /src/app/__init__.py /srv/wiremcp/app/__init__.py",
                                 "--from=builder /src/examples /srv/wiremcp/examples"]
    assert final.last("WORKDIR") == "/srv/wiremcp"
    assert final.all("ADD") == []
    assert final.env()["PATH"].startswith("/opt/venv/bin:")
    assert "pip wheel" in " ".join(builder.all("RUN"))


def test_the_copied_sources_exist_and_are_what_the_wheel_is_built_from() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    copied: set[str] = set()
    for stage in stages():
        for arguments in stage.all("COPY"):
            if arguments.startswith("--from="):
                continue
            *sources, _destination = arguments.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                copied.add(source)
    assert set(project["tool"]["setuptools"]["package-dir"].values()) | {"examples"} <= copied
    assert {"pyproject.toml", project["project"]["readme"]} <= copied


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i:end + 1], end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path, or one of its parent directories, decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _pattern_regex(pattern.removeprefix("!").strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            ignored = not negated
    return ignored


def test_dockerignore_lets_the_sources_through_and_nothing_private() -> None:
    """.dockerignore's patterns, applied by Docker's rule as ``dockerignored`` restates it (no image is
    built)."""
    patterns = dockerignore_patterns()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    sources = [str(path.relative_to(ROOT)) for folder in project["tool"]["setuptools"]["package-dir"].values()
               for path in (ROOT / folder).rglob("*") if "__pycache__" not in path.parts and path.is_file()]
    assert any(source.endswith("py.typed") for source in sources)
    sent = [source for source in [*sources, "pyproject.toml", "README.md"] if not dockerignored(source, patterns)]
    assert sorted(sent) == sorted([*sources, "pyproject.toml", "README.md"])
    for private in (".venv/bin/python", ".git/config", "deploy/.env", "tests/conftest.py", "wiremcp.egg-info/PKG-INFO",
                    "app/__pycache__/server.cpython-311.pyc"):
        assert dockerignored(private, patterns), private


def test_the_final_stage_runs_as_a_numeric_non_root_user() -> None:
    final = final_stage()
    user = final.last("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit(), f"USER {user}: Kubernetes' runAsNonRoot can only verify a numeric user"
    assert int(uid) != 0
    assert gid.isdigit()
    assert int(gid) != 0
    assert f"--uid {uid}" in " ".join(final.all("RUN"))
    # nothing runs after USER as root
    names = [name for name, _ in final.instructions]
    assert "RUN" not in names[names.index("USER"):]


def test_the_cmd_is_uvicorn_app_asgi_on_all_interfaces_with_a_graceful_timeout_above_the_drain() -> None:
    final = final_stage()
    argv = cmd()
    assert argv[:2] == ["uvicorn", "app:asgi"]
    assert option(argv, "--host") == "0.0.0.0"
    assert option(argv, "--port") == "8000"
    assert "--no-proxy-headers" in argv  # forwarded headers are WIREMCP_TRUSTED_PROXIES' to believe
    assert final.all("ENTRYPOINT") == []
    assert final.all("EXPOSE") == ["8000"]
    assert final.all("STOPSIGNAL") == ["SIGTERM"]
    env = final.env()
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["WIREMCP_SERVER"] == "wiremcp.transports.serving.demo:server"
    assert env["WIREMCP_ALLOWED_HOSTS"]
    assert set(k for k in env if k.startswith("WIREMCP_")) <= SETTINGS
    drain = float(env.get("WIREMCP_DRAIN_SECONDS", Settings().drain_seconds))
    assert graceful_seconds() > drain


_STAND_IN = {"/healthz": 200, "/readyz": 503}


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"status":"ok"}'
        self.send_response(_STAND_IN.get(self.path, 404))
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def health_port() -> Iterator[int]:
    """A stand-in answering /healthz with 200 and /readyz with 503."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def run_probe(argv: list[str], port: int) -> int:
    """Run a python-based probe command with its port 8000 replaced, as the container would."""
    assert argv[:2] == ["python", "-c"], argv
    code = argv[2].replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=20).returncode


def test_the_healthcheck_asks_healthz_with_python(health_port: int) -> None:
    words = final_stage().last("HEALTHCHECK").split(" CMD ", 1)
    assert len(words) == 2, "HEALTHCHECK [OPTIONS] CMD [...]"
    options, command = words
    argv = exec_form(command)
    assert "http://127.0.0.1:8000/healthz" in argv[2]
    assert re.search(r"--timeout=\d+s", options)
    assert run_probe(argv, health_port) == 0
    with refusing_port() as port:
        assert run_probe(argv, port) != 0  # nothing listening
    assert run_probe([*argv[:2], argv[2].replace("/healthz", "/readyz")], health_port) != 0  # 503


# -- compose and nginx ---------------------------------------------------------------------------------------
def compose() -> dict[str, Any]:
    document = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(document, dict)
    return document


def seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+)(ms|s|m|h)?", duration)
    assert match, duration
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]


def check_compose_spec(*paths: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema on the files, against the compose specification's schema it vendors (no network)."""
    argv = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec"]
    return subprocess.run([*argv, *map(str, paths)], capture_output=True, text=True, timeout=60)


def test_the_compose_files_validate_against_the_compose_spec_schema() -> None:
    files = sorted(DEPLOY.glob("compose*.yaml"))
    assert {"compose.yaml", *VARIANTS} <= {path.name for path in files}
    result = check_compose_spec(*files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_compose_spec_check_refuses_a_misspelled_key(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    text = (DEPLOY / "compose.yaml").read_text()
    broken.write_text(text.replace("stop_grace_period:", "stop_grace_periode:"))
    result = check_compose_spec(broken)
    assert result.returncode == 1
    assert "'stop_grace_periode' was unexpected" in result.stdout


def test_compose_declares_replicas_of_the_image_with_redis_and_nginx() -> None:
    """compose.yaml's services, as configured: two or more replicas of the repository's image (not started
    here), Redis for their shared state, nginx in front."""
    services = compose()["services"]
    assert set(services) == {"mcp", "redis", "nginx"}
    mcp = services["mcp"]
    assert mcp["deploy"]["replicas"] >= 2
    assert (DEPLOY / mcp["build"]["context"] / mcp["build"]["dockerfile"]).resolve() == ROOT / "Dockerfile"
    assert "ports" not in mcp  # reached through nginx only
    env = mcp["environment"]
    assert env["WIREMCP_REDIS_URL"] == "redis://redis:6379/0"
    # one variable for every replica, and compose refuses to start without it
    assert env["WIREMCP_REQUEST_STATE_KEYS"].startswith("${WIREMCP_REQUEST_STATE_KEYS:?")
    assert set(k for k in env if k.startswith("WIREMCP_")) <= SETTINGS
    assert "WIREMCP_REQUEST_STATE_KEYS=" in (DEPLOY / "example.env").read_text()
    assert services["redis"]["image"].startswith(("redis:7", "valkey/valkey:"))
    assert seconds(mcp["stop_grace_period"]) > exit_seconds(float(env["WIREMCP_DRAIN_SECONDS"].split(":-")[-1].rstrip("}")))


def test_compose_depends_on_healthy_services_and_the_mcp_healthcheck_asks_readyz(health_port: int) -> None:
    """The depends_on conditions and the healthchecks, as configured (compose is not run); the replicas'
    healthcheck command itself is run against a stand-in server, healthy but not ready."""
    services = compose()["services"]
    assert services["mcp"]["depends_on"] == {"redis": {"condition": "service_healthy"}}
    assert services["nginx"]["depends_on"] == {"mcp": {"condition": "service_healthy"}}
    test = services["mcp"]["healthcheck"]["test"]
    assert test[0] == "CMD"
    assert "http://127.0.0.1:8000/readyz" in test[3]
    assert run_probe(test[1:], health_port) != 0  # the stand-in is unready
    assert run_probe([*test[1:3], test[3].replace("/readyz", "/healthz")], health_port) == 0
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    assert "/lb-healthz" in " ".join(services["nginx"]["healthcheck"]["test"])


def nginx_directives() -> list[tuple[str, list[str], str]]:
    """(name, arguments, the enclosing block's name) of every directive of deploy/nginx.conf, blocks included."""
    text = re.sub(r"(?m)#.*$", "", (DEPLOY / "nginx.conf").read_text())
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{};]|[^\s{};"\']+', text)
    out: list[tuple[str, list[str], str]] = []
    blocks: list[str] = []
    words: list[str] = []
    for token in tokens:
        if token in (";", "{"):
            assert words, "an empty directive in nginx.conf"
            out.append((words[0], words[1:], blocks[-1] if blocks else ""))
            if token == "{":
                blocks.append(words[0])
            words = []
        elif token == "}":
            assert not words, f"a directive without ';' before '}}': {words}"
            blocks.pop()
        else:
            words.append(token[1:-1] if token[0] in "\"'" else token)
    assert not blocks, "unbalanced braces in nginx.conf"
    assert not words, f"a directive without ';' at the end: {words}"
    return out


def test_nginx_closes_idle_upstream_connections_before_the_replicas_do() -> None:
    """A POST nginx sends on a connection the replica is closing at that moment is lost (nginx does not
    repeat a POST): nginx's idle timeout for upstream connections is below uvicorn's keep-alive."""
    import uvicorn

    upstream = {name: args for name, args, block in nginx_directives() if block == "upstream"}
    assert "keepalive" in upstream
    replica_keep_alive = uvicorn.Config("app:asgi").timeout_keep_alive
    assert "--timeout-keep-alive" not in (ROOT / "Dockerfile").read_text()  # the replicas keep uvicorn's default
    assert seconds(upstream["keepalive_timeout"][0]) < replica_keep_alive


def test_nginx_conf_has_no_affinity_and_does_not_buffer() -> None:
    """nginx.conf's directives (nginx is not run): an upstream of the compose service "mcp" with no
    affinity of any kind (plain round robin), proxying without buffering or caching, HTTP/1.1 with the
    forwarded headers; and compose publishes its listening port and mounts it."""
    directives = nginx_directives()
    in_location = {name: args for name, args, block in directives if block == "location"}
    assert in_location["proxy_buffering"] == ["off"]
    assert in_location["proxy_request_buffering"] == ["off"]
    assert in_location["proxy_cache"] == ["off"]
    assert in_location["proxy_http_version"] == ["1.1"]
    assert seconds(in_location["proxy_read_timeout"][0]) >= 600
    headers = {args[0].lower(): args[1] for name, args, block in directives if name == "proxy_set_header"}
    assert headers["connection"] == ""
    assert headers["host"] == "$http_host"
    assert headers["x-forwarded-for"] == "$proxy_add_x_forwarded_for"
    assert headers["x-forwarded-proto"] == "$scheme"
    # plain round robin: no affinity of any kind
    upstream = [(name, args) for name, args, block in directives if block == "upstream"]
    assert {name for name, _ in upstream} <= {"server", "keepalive", "keepalive_timeout", "zone"}
    servers = [args[0] for name, args in upstream if name == "server"]
    assert servers == ["mcp:8000"]
    assert "mcp" in compose()["services"]
    upstream_name = next(args[0] for name, args, _ in directives if name == "upstream")
    assert in_location["proxy_pass"] == [f"http://{upstream_name}"]
    listen = next(args[0] for name, args, _ in directives if name == "listen")
    nginx = compose()["services"]["nginx"]
    assert nginx["ports"][0].endswith(f":{listen}")
    assert nginx["volumes"] == ["./nginx.conf:/etc/nginx/nginx.conf:ro"]


# -- compose with Redis Cluster, compose with Redis Sentinel -------------------------------------------------
CLUSTER_NODES = [f"redis-{n}" for n in range(1, 7)]
SENTINELS = ["sentinel-1", "sentinel-2", "sentinel-3"]
VARIANTS = {"compose.cluster.yaml": "redis+cluster", "compose.sentinel.yaml": "redis+sentinel"}


def compose_file(name: str) -> dict[str, Any]:
    document = yaml.safe_load((DEPLOY / name).read_text())
    assert isinstance(document, dict)
    return document


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a ``sh -c`` script, in words: split at ; && || and |, with the keywords that
    open a command (if, then, do, ...) dropped."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    for word in lexer:
        if word in (";", "&&", "||", "|"):
            out.append([])
        elif out[-1] or word not in ("if", "then", "else", "fi", "do", "done", "until", "while"):
            out[-1].append(word)
    return [words for words in out if words]


def sh_script(service: dict[str, Any]) -> str:
    command = service["command"]
    assert command[:2] == ["sh", "-c"], command
    assert len(command) == 3
    script = command[2]
    assert isinstance(script, str)
    return script


def written_config(script: str, path: str) -> dict[str, list[str]]:
    """What ``test -f PATH || printf '%s\\n' LINE... > PATH`` writes (once: a file already there is kept),
    as {directive: arguments}; a repeated directive (none is) would be an error."""
    assert script.startswith(f"test -f {path} || printf "), script
    for words in shell_commands(script):
        if words[0] == "printf" and words[-2:] == [">", path]:
            assert words[1] == "%s\\n"
            lines = [line.split() for line in words[2:-2]]
            width = {True: 2, False: 1}  # "sentinel monitor ...", "appendonly ..."
            config = {" ".join(line[:width[line[0] == "sentinel"]]): line[width[line[0] == "sentinel"]:]
                      for line in lines}
            assert len(config) == len(lines), lines
            return config
    raise AssertionError(f"nothing writes {path}: {script}")


def redis_url(services: dict[str, Any]) -> tuple[str, list[tuple[str, int]], str]:
    """(scheme, [(host, port), ...], path) of the replicas' WIREMCP_REDIS_URL."""
    url = services["mcp"]["environment"]["WIREMCP_REDIS_URL"]
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    nodes = [(host, int(port)) for host, _, port in (node.partition(":") for node in authority.split(","))]
    return scheme, nodes, slash + path


@pytest.mark.parametrize("name", VARIANTS)
def test_compose_variants_declare_the_replicas_and_nginx_of_compose_yaml(name: str) -> None:
    services = compose_file(name)["services"]
    base = compose()["services"]
    mcp = dict(services["mcp"])
    env = dict(mcp.pop("environment"))
    assert redis_url(services)[0] == VARIANTS[name]
    # the same image, build, probes, limits and settings; only Redis and what the replicas wait for differ
    assert env.pop("WIREMCP_REDIS_URL") != base["mcp"]["environment"]["WIREMCP_REDIS_URL"]
    assert env == {k: v for k, v in base["mcp"]["environment"].items() if k != "WIREMCP_REDIS_URL"}
    assert mcp.pop("depends_on") != base["mcp"]["depends_on"]
    assert mcp == {k: v for k, v in base["mcp"].items() if k not in ("environment", "depends_on")}
    assert services["nginx"] == base["nginx"]  # deploy/nginx.conf, whose upstream is the "mcp" service
    # every service waited for exists, every named volume is declared, every image is Redis 7.4 but ours
    declared = set(compose_file(name)["volumes"])
    for service_name, service in services.items():
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in services, (service_name, dependency)
            assert set(condition) == {"condition"}
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith("./") or source in declared, (service_name, volume)
        if service_name not in ("mcp", "nginx"):
            assert service["image"] == "redis:7.4", service_name
            # compose replaces ${...} and $X itself: the scripts' own $ must be written $$
            assert "$" not in " ".join(service.get("command", [])).replace("$$", ""), service_name
    used = {v.split(":")[0] for s in services.values() for v in s.get("volumes", [])}
    assert declared <= used


def test_compose_cluster_nodes_are_cluster_enabled_with_append_only_files() -> None:
    services = compose_file("compose.cluster.yaml")["services"]
    assert set(services) == {"mcp", "nginx", "redis-cluster-init", *CLUSTER_NODES}
    volumes = set()
    for name in CLUSTER_NODES:
        node = services[name]
        command = node["command"]
        assert command[0] == "redis-server"
        assert option(command, "--cluster-enabled") == "yes"
        assert option(command, "--appendonly") == "yes"
        assert option(command, "--maxmemory-policy") == "noeviction"
        assert "--port" not in command  # 6379, as the URL and the init say
        (volume,) = node["volumes"]
        assert volume.endswith(":/data")
        volumes.add(volume)
        assert node["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
        assert node["restart"] == "unless-stopped"
    assert len(volumes) == len(CLUSTER_NODES)  # a volume each: data and nodes.conf


def test_compose_cluster_init_script_creates_the_cluster_from_all_six_nodes_unless_formed() -> None:
    """The one-shot init service's ``sh -c`` script, parsed into commands (it is not run)."""
    services = compose_file("compose.cluster.yaml")["services"]
    init = services["redis-cluster-init"]
    assert "restart" not in init  # one shot
    assert init["depends_on"] == {name: {"condition": "service_healthy"} for name in CLUSTER_NODES}
    commands = shell_commands(sh_script(init))
    (create,) = [words for words in commands if words[:3] == ["redis-cli", "--cluster", "create"]]
    nodes = create[3:next(i for i, word in enumerate(create) if i > 2 and word.startswith("--"))]
    assert sorted(nodes) == sorted(f"{name}:6379" for name in CLUSTER_NODES)
    # three primaries, a replica each, and no question to answer
    assert create[3 + len(nodes):] == ["--cluster-replicas", "1", "--cluster-yes"]
    # a cluster formed by an earlier `up` is left alone: the check comes first and exits 0
    first, *_ = commands
    assert first[:4] == ["redis-cli", "-h", "redis-1", "cluster"]
    assert commands[commands.index(first) + 2:commands.index(first) + 4] == [
        ["echo", "the cluster is formed already"], ["exit", "0"]]
    assert commands.index(first) < commands.index(create)


def test_compose_cluster_replicas_depend_on_the_init_and_have_the_nodes_as_seeds() -> None:
    services = compose_file("compose.cluster.yaml")["services"]
    assert services["mcp"]["depends_on"] == {
        "redis-cluster-init": {"condition": "service_completed_successfully"}}
    scheme, seeds, path = redis_url(services)
    assert scheme == "redis+cluster"
    assert path == ""  # a cluster has one database
    assert len(seeds) >= 2
    assert {host for host, _ in seeds} <= set(CLUSTER_NODES)
    assert {port for _, port in seeds} == {6379}


def test_compose_sentinel_configures_a_primary_and_a_replica_with_append_only_files() -> None:
    services = compose_file("compose.sentinel.yaml")["services"]
    assert set(services) == {"mcp", "nginx", "redis-1", "redis-2", *SENTINELS}
    configs = {}
    for name in ("redis-1", "redis-2"):
        script = sh_script(services[name])
        assert script.endswith("; exec docker-entrypoint.sh redis-server /data/redis.conf")  # drops root
        configs[name] = config = written_config(script, "/data/redis.conf")
        assert config["appendonly"] == ["yes"]
        assert config["maxmemory-policy"] == ["noeviction"]
        assert config["replica-announce-ip"] == [name]  # its host name, for the sentinels to announce
        (volume,) = services[name]["volumes"]
        assert volume.endswith(":/data")  # the configuration, rewritten by the sentinels, survives restarts
        assert services[name]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    assert "replicaof" not in configs["redis-1"]
    assert configs["redis-2"]["replicaof"] == ["redis-1", "6379"]


def test_compose_sentinel_sentinels_are_configured_to_monitor_the_primary_with_a_quorum_of_two() -> None:
    services = compose_file("compose.sentinel.yaml")["services"]
    scripts = {sh_script(services[name]) for name in SENTINELS}
    assert len(scripts) == 1  # three alike
    (script,) = scripts
    assert script.endswith("; exec docker-entrypoint.sh redis-server /data/sentinel.conf --sentinel")
    config = written_config(script, "/data/sentinel.conf")
    assert config["port"] == ["26379"]
    service, host, port, quorum = config["sentinel monitor"]
    assert (host, port) == ("redis-1", "6379")  # the primary of compose.sentinel.yaml
    assert int(quorum) == 2
    assert len(SENTINELS) // 2 < int(quorum) <= len(SENTINELS)
    assert config["sentinel down-after-milliseconds"] == [service, "5000"]
    # host names: accepted in the monitor line (which must come after it) and given to clients as they are
    assert config["sentinel resolve-hostnames"] == ["yes"]
    assert config["sentinel announce-hostnames"] == ["yes"]
    assert list(config).index("sentinel resolve-hostnames") < list(config).index("sentinel monitor")
    assert len({v for name in SENTINELS for v in services[name]["volumes"]}) == len(SENTINELS)
    for name in SENTINELS:
        assert services[name]["healthcheck"]["test"] == ["CMD", "redis-cli", "-p", "26379", "ping"]
        assert services[name]["depends_on"] == {"redis-1": {"condition": "service_healthy"},
                                                "redis-2": {"condition": "service_healthy"}}


def test_compose_sentinel_replicas_url_names_the_sentinels_and_the_monitored_primary() -> None:
    services = compose_file("compose.sentinel.yaml")["services"]
    scheme, sentinels, path = redis_url(services)
    assert scheme == "redis+sentinel"
    assert sentinels == [(name, 26379) for name in SENTINELS]
    monitored = written_config(sh_script(services["sentinel-1"]), "/data/sentinel.conf")["sentinel monitor"][0]
    assert path == f"/{monitored}/0"
    assert services["mcp"]["depends_on"] == {name: {"condition": "service_healthy"} for name in SENTINELS}


# -- Kubernetes ----------------------------------------------------------------------------------------------
def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    """Every object the kustomization applies, by (kind, name)."""
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in kustomization["resources"]:
        for document in yaml.safe_load_all((KUBERNETES / resource).read_text()):
            key = (document["kind"], document["metadata"]["name"])
            assert key not in out, key
            out[key] = document
    return out


def deployment() -> dict[str, Any]:
    return manifests()[("Deployment", "wiremcp")]


def container() -> dict[str, Any]:
    (only,) = deployment()["spec"]["template"]["spec"]["containers"]
    assert isinstance(only, dict)
    return only


KUBERNETES_VERSION = "1.35"
"""The Kubernetes release whose API schemas (bundled with kubernetes-validate: no network) the manifests must
satisfy."""


def kubernetes_errors(document: dict[str, Any]) -> str | None:
    """kubernetes-validate's objection to one object, in strict mode (unknown fields refused); None if it has
    none. An object of a kind or apiVersion without a schema is an objection too."""
    try:
        version = kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return f"{'.'.join(map(str, error.path))}: {error.message}"
    except kubernetes_validate.SchemaNotFoundError as error:
        return str(error.message)
    assert version == KUBERNETES_VERSION  # these schemas, not an older release's
    return None


def test_the_manifests_validate_strictly_against_the_kubernetes_api_schemas() -> None:
    """Every object of deploy/kubernetes/, the example Secret included (it is applied once filled in); not
    kustomization.yaml, which is kustomize's input rather than an object of the API."""
    errors = {}
    documents = 0
    for path in sorted(KUBERNETES.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for document in yaml.safe_load_all(path.read_text()):
            documents += 1
            error = kubernetes_errors(document)
            if error is not None:
                errors[f"{path.name}: {document['kind']}/{document['metadata']['name']}"] = error
    assert not errors, errors
    assert documents == len(manifests()) + 1  # the Secret


def test_the_kubernetes_check_refuses_a_misspelled_key() -> None:
    text = (KUBERNETES / "deployment.yaml").read_text()
    broken = yaml.safe_load(text.replace("readinessProbe:", "readinesProbe:"))
    error = kubernetes_errors(broken)
    assert error is not None
    assert "'readinesProbe' was unexpected" in error


def test_every_manifest_parses_and_the_kustomization_lists_them_all() -> None:
    objects = manifests()
    assert set(objects) == {("ConfigMap", "wiremcp-config"), ("Deployment", "wiremcp"), ("Service", "wiremcp"),
                            ("HorizontalPodAutoscaler", "wiremcp"), ("PodDisruptionBudget", "wiremcp"),
                            ("Service", "redis"), ("StatefulSet", "redis")}
    listed = set(yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())["resources"])
    assert {p.name for p in KUBERNETES.glob("*.yaml")} - listed == {"kustomization.yaml", "secret.example.yaml"}
    for obj in objects.values():
        assert obj["apiVersion"]
        assert obj["metadata"]["labels"]


def test_the_probes_are_http_gets_of_readyz_and_healthz_on_the_http_port() -> None:
    main = container()
    port = main["ports"][0]
    assert (port["name"], port["containerPort"]) == ("http", int(option(cmd(), "--port")))
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert main["startupProbe"]["httpGet"]["path"] == "/healthz"


def test_the_grace_period_covers_the_prestop_sleep_and_the_drain_with_no_replica_down_in_rollouts() -> None:
    """The configuration that lets a pod leave the Service's endpoints (the preStop sleep) before SIGTERM and
    then drain within its grace period; no cluster is run, so neither is observed."""
    spec = deployment()["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    command = container()["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    grace = spec["template"]["spec"]["terminationGracePeriodSeconds"]
    config = manifests()[("ConfigMap", "wiremcp-config")]["data"]
    assert grace > int(command[1]) + exit_seconds(float(config["WIREMCP_DRAIN_SECONDS"]))


def test_the_pod_security_context_is_the_image_user_on_a_read_only_root_with_resources() -> None:
    pod = deployment()["spec"]["template"]["spec"]
    uid, _, gid = final_stage().last("USER").partition(":")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (int(uid), int(gid))
    security = container()["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert {m["mountPath"] for m in container()["volumeMounts"]} == {"/tmp"}
    resources = container()["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) == {"cpu", "memory"}


def test_the_configuration_comes_from_the_configmap_and_the_secret() -> None:
    objects = manifests()
    sources = container()["envFrom"]
    assert sources == [{"configMapRef": {"name": "wiremcp-config"}}, {"secretRef": {"name": "wiremcp-secrets"}}]
    config = objects[("ConfigMap", "wiremcp-config")]["data"]
    secret = yaml.safe_load((KUBERNETES / "secret.example.yaml").read_text())
    assert (secret["kind"], secret["metadata"]["name"]) == ("Secret", "wiremcp-secrets")
    assert set(secret["stringData"]) == {"WIREMCP_REQUEST_STATE_KEYS", "WIREMCP_REDIS_URL"}
    names = {*config, *secret["stringData"], *(e["name"] for e in container()["env"])}
    assert {n for n in names if n.startswith("WIREMCP_")} <= SETTINGS
    assert all(isinstance(value, str) for value in config.values())
    # the example Redis URL names the reference Redis Service
    redis = objects[("Service", "redis")]
    assert secret["stringData"]["WIREMCP_REDIS_URL"] == f"redis://redis:{redis['spec']['ports'][0]['port']}/0"


def test_the_service_hpa_and_pdb_select_the_pods() -> None:
    objects = manifests()
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    assert deployment()["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = objects[("Service", "wiremcp")]["spec"]
    assert service["selector"].items() <= labels.items()
    assert service["sessionAffinity"] == "None"
    assert service["ports"][0]["targetPort"] == "http"
    pdb = objects[("PodDisruptionBudget", "wiremcp")]["spec"]
    assert pdb["selector"]["matchLabels"].items() <= labels.items()
    hpa = objects[("HorizontalPodAutoscaler", "wiremcp")]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "wiremcp"}
    assert hpa["spec"]["minReplicas"] >= 2
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
