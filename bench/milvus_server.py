"""A Milvus standalone server for tests and benchmarks: PyPI's `milvus` package (milvus-io/embd-milvus), which
ships Milvus standalone's binary with an embedded etcd and local storage (requirements-dev.txt pins it; the
runtime never needs it: a deployment runs Milvus's own image or Helm chart, docs/vector-backends.md).

`running(folder)` starts one on free loopback ports with its data under `folder`, waits for its health endpoint,
and stops it by its PID (SIGTERM, then SIGKILL) however the block ends. `QUIRE_TEST_MILVUS_URI` (tests) names a
server already running instead.

Why not the package's own MilvusServer.start/stop: it waits for health with no bound on a dead start's output, and
stop() gives Milvus one second before SIGKILL, which leaves etcd's ports taken for about a minute afterwards.
Its port resolution (each listener's first free port above the default) and config template are used as they are;
since that resolution probes ports and lets them go, two servers starting at once on one machine (a test process
per core, each starting its own) could both pick a port and one die on binding it ("bind: address already in use",
seen with three test processes): `started` holds a machine-wide lock from the resolution until the server is
healthy, its ports bound.
"""

import contextlib
import ctypes
import fcntl
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_TIMEOUT = 180  # seconds: a first start decompresses the binary (about 10 s), etcd and the coordinators follow


class ServerUnavailable(RuntimeError):
    """The `milvus` package is not installed or its server does not start here; the message says why."""


@dataclass(frozen=True)
class Server:
    uri: str  # http://127.0.0.1:<proxy port>, what QUIRE_MILVUS_URI names
    pid: int
    health_url: str
    folder: Path

    @property
    def log(self) -> Path:
        return self.folder / "logs" / "milvus-stderr.log"


def _stop_with_parent() -> None:
    """In the child, before exec: SIGTERM when the process that started it dies, however it dies (a test run killed
    by its timeout, a benchmark stopped with Ctrl-C), so that no server outlives its user."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _start(folder: Path, *, next_target_every: int | None = None) -> tuple[Server, subprocess.Popen[bytes]]:
    try:
        import milvus  # a test dependency: importing it here lets the runtime do without it
    except ImportError as error:
        raise ServerUnavailable(
            f"the `milvus` package is not installed ({error}): pip install -r requirements-dev.txt"
        ) from None
    config = milvus.MilvusServerConfig(data_dir=str(folder))
    resolve_free_everywhere(config)  # free ports for the proxy, the coordinators and etcd; the config file written
    milvus._initialize_data_files(config.base_data_dir)  # the binary and its libraries, decompressed once
    health_port = _port_free_everywhere(config, 19091)
    peer_port = _port_free_everywhere(config, 23800)
    _own_etcd_peer_port(config, peer_port)
    if next_target_every is not None:
        _next_target_every(config, next_target_every)
    binary = Path(config.base_data_dir) / "bin" / "milvus"
    env = {
        **os.environ,
        "DEPLOY_MODE": "STANDALONE",
        "METRICS_PORT": str(health_port),
        "MILVUS_RUN_DIR": str(folder / "run"),
        "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}",
    }
    logs = folder / "logs"
    with (logs / "milvus-stdout.log").open("wb") as out, (logs / "milvus-stderr.log").open("wb") as err:
        process = subprocess.Popen(
            [str(binary), "run", "standalone"],
            cwd=config.base_data_dir,
            env=env,
            stdout=out,
            stderr=err,
            preexec_fn=_stop_with_parent,  # the only call made in the child is prctl
        )
    server = Server(
        f"http://127.0.0.1:{config.get('proxy_port')}", process.pid, f"http://127.0.0.1:{health_port}/healthz", folder
    )
    return server, process


def resolve_free_everywhere(config: Any, tries: int = 20) -> None:
    """`config.resolve()` (the package's) with every port it chooses free on every address. The package probes a
    port on 127.0.0.1, but the server's components listen on all addresses (Go's ":port"), so a port another process
    holds on another address (IPv6's, a docker bridge's) passes the probe and the server dies on it: seen in CI beside
    the docker smoke test, "listen tcp :53102: bind: address already in use" on all three tries, since each
    resolution chose the same port. A port found taken is held on 127.0.0.1 while the package resolves again, so
    that its probe moves past it."""
    held: list[socket.socket] = []
    try:
        for _ in range(tries):
            config.resolve()
            ports = [int(config.get(key)) for key in config.configurable_items if key.endswith("_port")]
            taken = [port for port in ports if not free_everywhere(port)]
            if not taken:
                return
            held += [sock for port in taken if (sock := _held_on_loopback(port)) is not None]
        raise ServerUnavailable(f"no ports free on every address after {tries} resolutions")
    finally:
        for sock in held:
            sock.close()


def _port_free_everywhere(config: Any, start: int) -> int:
    """The first port from `start` that the package's probe finds free (on 127.0.0.1) and that is free on every
    address."""
    port = start
    while True:
        port, probe = config.resolve_port(port)
        probe.close()
        if free_everywhere(port):
            return int(port)
        port += 1


def free_everywhere(port: int) -> bool:
    """Whether a listener may bind `port` on every address, as the server's components do (Go's ":port": IPv6's
    unspecified address taking IPv4 too where the machine has IPv6, with SO_REUSEADDR, as Go's listeners set)."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        address = "::"
    except OSError:  # no IPv6 here
        sock, address = socket.socket(socket.AF_INET, socket.SOCK_STREAM), "0.0.0.0"
    with sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
            sock.listen()
        except OSError:
            return False
    return True


def _held_on_loopback(port: int) -> socket.socket | None:
    """A listener on 127.0.0.1:`port` (None if another took it first: the package's probe fails there anyway)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
    except OSError:
        sock.close()
        return None
    return sock


def _own_etcd_peer_port(config: Any, peer_port: int) -> None:
    """The embedded etcd listens for peers on 2380 whatever the package configures, so a second server on one machine
    (a test session beside a benchmark) failed to start: an etcd config file (Milvus's etcd.config.path) gives it a
    free peer port, and the client port the package chose."""
    client = f"http://127.0.0.1:{config.get('etcd_port')}"
    peer = f"http://127.0.0.1:{peer_port}"
    etcd = Path(config.base_data_dir) / "configs" / "etcd.yaml"
    etcd.write_text(
        "name: quire\n"
        f"data-dir: {config.get('etcd_data_dir')}\n"
        f"listen-client-urls: {client}\nadvertise-client-urls: {client}\n"
        f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: quire={peer}\n"
    )
    _add_to_section(config, "etcd", f"  config:\n    path: {etcd}\n")


def _add_to_section(config: Any, section: str, lines: str) -> None:
    """`lines` at the head of a top-level section of the server's milvus.yaml (the package's template)."""
    milvus_yaml = Path(config.base_data_dir) / "configs" / "milvus.yaml"
    text = "\n" + milvus_yaml.read_text()
    assert f"\n{section}:\n" in text, "the package's config template changed"
    milvus_yaml.write_text(text.replace(f"\n{section}:\n", f"\n{section}:\n{lines}", 1)[1:])


def _next_target_every(config: Any, seconds: int) -> None:
    """How often the query coordinator moves its query nodes to the segments the data coordinator has sealed and
    indexed (queryCoord.updateNextTargetInterval, 10 s by default): a load waits for that hand-off (search.milvus'
    _rows_served_sealed), so a test server set to 1 s spends a second there instead of ten (a load of 6,000 rows:
    8.7 s instead of 18.8). The same code path, only sooner; benchmarks keep the default."""
    _add_to_section(config, "queryCoord", f"  updateNextTargetInterval: {seconds}\n")


class ExitedOnStarting(ServerUnavailable):
    """The server's process ended before it was healthy; `started` tries again on other ports."""


def why_it_exited(log: str) -> str:
    """The line that says why a server died, from its stderr: Go's `panic:` or `fatal error:` line (a crash's
    goroutine dump follows it, so the log's tail alone names only goroutines: seen in CI), or a bind refused;
    the log's last lines where none is found."""
    reasons = [line.strip() for line in log.splitlines() if WHY.search(line)]
    return reasons[0][:400] if reasons else log[-800:]


WHY = re.compile(r"^(panic: |fatal error: )|address already in use|\[FATAL\]")


def wait_healthy(server: Server, process: subprocess.Popen[bytes], timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = server.log.read_text(errors="replace") if server.log.exists() else ""
            raise ExitedOnStarting(
                f"the Milvus server exited with status {process.returncode} on starting: {why_it_exited(log)}"
            )
        with contextlib.suppress(OSError), urllib.request.urlopen(server.health_url, timeout=2) as answer:
            if b"OK" in answer.read():
                return
        time.sleep(0.25)
    raise ServerUnavailable(f"the Milvus server was not healthy within {timeout:.0f} s (its log: {server.log})")


def stop(process: subprocess.Popen[bytes], grace: float = 30) -> None:
    """SIGTERM by PID, then SIGKILL after `grace` seconds: Milvus flushes and lets go of etcd on SIGTERM. (The
    embedded build's graceful stop outlasted 30 s on every stop measured here, so a server whose data is thrown
    away, a test's, is given a few seconds.)"""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


START_LOCK = Path(tempfile.gettempdir()) / "quire-milvus-start.lock"


START_TRIES = 3


def started(folder: Path, *, next_target_every: int | None = None) -> tuple[Server, subprocess.Popen[bytes]]:
    """A server started and healthy, its ports chosen and bound while no other server on this machine chooses its
    own (START_LOCK); stopped again if it never became healthy. A server that dies on starting is started again,
    on ports chosen afresh, up to START_TRIES times: the lock orders Milvus servers only, and any other process on
    the machine may take a probed port before the server binds it. CI saw a start die with status -6 beside three
    test processes and a docker build, its reason lost above the goroutine dump (why_it_exited reads it now); a
    restart in the same folder on other ports was tried here and serves. The error names each try's reason."""
    reasons = []
    with START_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        for _ in range(START_TRIES):
            server, process = _start(folder, next_target_every=next_target_every)
            try:
                wait_healthy(server, process)
                return server, process
            except ExitedOnStarting as error:
                reasons.append(str(error))
            except BaseException:
                stop(process, grace=3)
                raise
    raise ServerUnavailable(f"{START_TRIES} starts failed; " + "; ".join(reasons))


@contextlib.contextmanager
def running(folder: Path, *, next_target_every: int | None = None, stop_grace: float = 30) -> Iterator[Server]:
    """A Milvus standalone server with its data under `folder`, stopped when the block ends (`next_target_every`:
    _next_target_every's seconds, the server's default when None; `stop_grace`: stop's)."""
    folder.mkdir(parents=True, exist_ok=True)
    server, process = started(folder, next_target_every=next_target_every)
    try:
        yield server
    finally:
        stop(process, stop_grace)
