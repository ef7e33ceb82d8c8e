"""A real redis-server of a test's own, on a free port, that the test may stop, kill and start again; the shared
one other tests use stays up."""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest
import redis

REQUIRED = os.environ.get("QUIRE_REQUIRE_SERVICES") == "1"


class OwnRedis:
    def __init__(self, port: int):
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(200):
            try:
                redis.Redis.from_url(self.url).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} did not answer")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def kill(self) -> None:
        """As a crash or a restart without persistence: everything queued is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def own_redis():
    """A started OwnRedis (url, stop, kill, start again on the same port)."""
    if shutil.which("redis-server") is None:
        reason = "redis-server is not installed (apt-get install redis-server)"
        if REQUIRED:
            pytest.fail(f"{reason} (QUIRE_REQUIRE_SERVICES=1: CI must run this test)")
        pytest.skip(reason)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = OwnRedis(port)
    server.start()
    yield server
    server.stop()


# The real Celery worker's fixtures (a Redis database per test process, a worker started and stopped by PID), for
# the fault tests that run jobs on one (test_jobs_end.py).
from tests.search.test_celery_worker import beat, broker, sending_to_broker, start_worker  # noqa: E402, F401
