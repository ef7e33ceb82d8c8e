"""Servers that tests start as processes of their own: a free loopback port, and a Django development server over
a demo's data."""

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def runserver(environment: dict[str, str], tries: int = 3) -> tuple[subprocess.Popen[str], int]:
    """`manage.py runserver` on a free port with `environment`, once its login page answers. A free port is free only
    when probed: another test process may bind it before runserver does (with three test processes one did, and
    answered 501), so a runserver that exits on a port already in use is started again on another."""
    for _ in range(tries):
        port = free_port()
        # A file, not a pipe nobody reads (it would fill with request lines and block); it lives as long as the server.
        log = tempfile.TemporaryFile("w+")  # noqa: SIM115
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while server.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5) as page:
                    if page.status == 200 and "Log in" in page.read().decode():
                        return server, port
            except OSError:
                pass
            time.sleep(0.5)
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=20)
            pytest.fail(f"runserver did not answer on port {port} within 60 s")
        log.seek(0)
        said = log.read()
        if "That port is already in use" not in said:
            pytest.fail(f"runserver did not answer: {said}")
    pytest.fail(f"runserver found its port taken {tries} times")
