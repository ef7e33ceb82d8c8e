"""bench/milvus_server.started: servers starting at once on one machine choose their ports one after another.

The package's port resolution probes free ports and lets them go; two test processes each starting a server at the
same moment both chose etcd's 2381 and one died on binding it. This runs no server: `_start` and `wait_healthy` are
replaced by stand-ins that record how many starts overlap."""

import socket
import threading
import time

import pytest

from bench import milvus_server


class FakeProcess:
    def __init__(self):
        self.stopped = False

    def poll(self):
        return 0 if self.stopped else None


def test_starts_at_once_choose_and_bind_their_ports_one_after_another(monkeypatch, tmp_path):
    monkeypatch.setattr(milvus_server, "START_LOCK", tmp_path / "start.lock")
    inside, most, lock = 0, 0, threading.Lock()

    def fake_start(folder, *, next_target_every=None):
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        return milvus_server.Server("http://127.0.0.1:1", 1, "http://127.0.0.1:1/healthz", folder), FakeProcess()

    def fake_healthy(server, process):
        nonlocal inside
        time.sleep(0.2)  # the ports are bound once the server is healthy
        with lock:
            inside -= 1

    monkeypatch.setattr(milvus_server, "_start", fake_start)
    monkeypatch.setattr(milvus_server, "wait_healthy", fake_healthy)
    threads = [threading.Thread(target=milvus_server.started, args=(tmp_path / str(i),)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1


def test_a_start_that_never_becomes_healthy_is_stopped_and_lets_the_next_start(monkeypatch, tmp_path):
    monkeypatch.setattr(milvus_server, "START_LOCK", tmp_path / "start.lock")
    process = FakeProcess()
    stopped = []
    monkeypatch.setattr(milvus_server, "_start", lambda folder, **_: (None, process))

    def never(server, process):
        raise milvus_server.ServerUnavailable("the Milvus server exited with status -6 on starting")

    monkeypatch.setattr(milvus_server, "wait_healthy", never)
    monkeypatch.setattr(milvus_server, "stop", lambda process, grace=30: stopped.append(process))
    with pytest.raises(milvus_server.ServerUnavailable, match="status -6"):
        milvus_server.started(tmp_path / "a")
    assert stopped == [process]
    with pytest.raises(milvus_server.ServerUnavailable):  # the lock was let go: the next start gets as far
        milvus_server.started(tmp_path / "b")
    assert stopped == [process, process]


def test_a_start_that_dies_is_tried_again_on_ports_chosen_afresh(monkeypatch, tmp_path):
    monkeypatch.setattr(milvus_server, "START_LOCK", tmp_path / "start.lock")
    starts = []

    def fake_start(folder, **_):
        starts.append(folder)
        return milvus_server.Server(f"http://127.0.0.1:{len(starts)}", 1, "", folder), FakeProcess()

    def dies_twice(server, process):
        if len(starts) < 3:
            raise milvus_server.ExitedOnStarting(
                f"the Milvus server exited with status -6 on starting: try {len(starts)}"
            )

    monkeypatch.setattr(milvus_server, "_start", fake_start)
    monkeypatch.setattr(milvus_server, "wait_healthy", dies_twice)
    server, _ = milvus_server.started(tmp_path / "a")
    assert server.uri == "http://127.0.0.1:3" and len(starts) == 3


def test_a_start_that_keeps_dying_fails_saying_each_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(milvus_server, "START_LOCK", tmp_path / "start.lock")
    tries = iter(range(1, 10))
    monkeypatch.setattr(milvus_server, "_start", lambda folder, **_: (None, FakeProcess()))

    def dies(server, process):
        raise milvus_server.ExitedOnStarting(f"died on try {next(tries)}")

    monkeypatch.setattr(milvus_server, "wait_healthy", dies)
    with pytest.raises(
        milvus_server.ServerUnavailable, match="3 starts failed; died on try 1; died on try 2; died on try 3"
    ):
        milvus_server.started(tmp_path / "a")


def test_the_reason_a_server_died_is_read_from_above_its_goroutine_dump():
    log = (
        "[2026/12/01 10:00:00.000 +00:00] [INFO] [etcd] [starting]\n"
        "panic: listen tcp 127.0.0.1:2381: bind: address already in use\n\n"
        "goroutine 1 [running]:\nmain.main()\n"
        + "created by go.etcd.io/etcd/server/v3/embed.(*Etcd).serveClients\n"
        * 50
    )
    assert milvus_server.why_it_exited(log) == "panic: listen tcp 127.0.0.1:2381: bind: address already in use"
    assert milvus_server.why_it_exited("no reason given\nlast line") == "no reason given\nlast line"


@pytest.fixture
def ipv6_loopback_listener():
    """A listener on [::1] alone (IPv6 only): another address than the 127.0.0.1 the `milvus` package probes."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(("::1", 0))
    except OSError as error:
        pytest.skip(f"no IPv6 loopback on this machine to hold a port on another address: {error}")
    sock.listen()
    yield sock
    sock.close()


def test_a_port_taken_on_another_address_passes_the_packages_probe_and_is_moved_past(tmp_path, ipv6_loopback_listener):
    """CI saw three starts die on "listen tcp :53102: bind: address already in use": the package's probe binds
    127.0.0.1, the server listens on every address. A port held on [::1] passes that probe, fails free_everywhere,
    and resolve_free_everywhere chooses another."""
    milvus = pytest.importorskip("milvus", reason="the Milvus server package (requirements-dev.txt)")
    taken = ipv6_loopback_listener.getsockname()[1]
    config = milvus.MilvusServerConfig(data_dir=str(tmp_path))
    probe = config.try_bind_port(taken)
    assert probe is not None, "the package's probe passes a port held on another address"
    probe.close()
    assert not milvus_server.free_everywhere(taken)
    key = next(key for key in config.configurable_items if key.endswith("_port"))
    config.configurable_items[key][1] = taken  # the package's search for this port starts at the taken one
    milvus_server.resolve_free_everywhere(config)
    chosen = [int(config.get(name)) for name in config.configurable_items if name.endswith("_port")]
    assert taken not in chosen and int(config.get(key)) > taken
    assert all(milvus_server.free_everywhere(port) for port in chosen)
