"""bench/milvus_server.started: servers starting at once on one machine choose their ports one after another.

The package's port resolution probes free ports and lets them go; two test processes each starting a server at the
same moment both chose etcd's 2381 and one died on binding it. This runs no server: `_start` and `wait_healthy` are
replaced by stand-ins that record how many starts overlap."""

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
