"""A Milvus Lite file serves one Quire process at a time, every time, and only a file that is Milvus Lite's is
opened: another program's database, a file of another kind, or one cut short is refused with a sentence saying
what it is, and left byte for byte as it was (issue 37)."""

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from search import milvus
from search.exceptions import VectorDatabaseUnavailable

ROOT = Path(__file__).resolve().parents[2]
# A Quire process opening the file the way the web server and the commands do (search.milvus.connect).
QUIRE_OPENS = """
import os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
import django
django.setup()
from django.conf import settings
settings.QUIRE_MILVUS_URI = sys.argv[1]
from search import milvus
from search.exceptions import VectorDatabaseUnavailable
try:
    milvus.connect().list_collections()
except VectorDatabaseUnavailable as refused:
    print("refused:", refused, flush=True)
    sys.exit(3)
print("open", flush=True)
if sys.argv[2] == "hold":
    time.sleep(120)
"""


def quire_process(uri: str, *, hold: bool) -> subprocess.Popen:
    """A Quire process in a process group of its own: Milvus Lite's server is its child, and ending the process
    alone left that server holding the file until it noticed (on a loaded CI machine, after the next open)."""
    return subprocess.Popen(
        [sys.executable, "-c", QUIRE_OPENS, uri, "hold" if hold else "try"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip


def end(process: subprocess.Popen) -> None:
    """End `process` and what it started (its group: we started it), and wait for it."""
    with contextlib.suppress(ProcessLookupError):  # it may have ended already
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def connect_once_let_go(seconds: float = 30.0):
    """milvus.connect() once the file's last holder has exited: a killed process's lock goes when the kernel has
    ended every process of it, which a loaded machine may take a moment over."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return milvus.connect()
        except VectorDatabaseUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def lite(settings, tmp_path):
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    yield Path(settings.QUIRE_MILVUS_URI)
    milvus._let_go(settings.QUIRE_MILVUS_URI)


def test_a_second_process_is_refused_every_time(lite):
    """After the first refusal milvus-lite unlinked the holder's lock file, and the next process opened the
    file as well: three gunicorn workers, `search` and a rebuild all had it open."""
    holder = quire_process(str(lite), hold=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        for _ in range(3):  # here, again and again
            with pytest.raises(VectorDatabaseUnavailable, match="another process has the file open"):
                milvus.connect()
        for _ in range(2):  # and in other processes, after those refusals
            other = quire_process(str(lite), hold=False)
            said, _ = other.communicate(timeout=120)
            assert other.returncode == 3 and "another process has the file open" in said
    finally:
        end(holder)
    client = connect_once_let_go()  # the holder gone, its lock went with it
    assert client.list_collections() == []


def refuses_and_keeps(path: Path, message: str) -> None:
    before = digest(path)
    for _ in range(2):
        with pytest.raises(VectorDatabaseUnavailable, match=message):
            milvus.connect()
    assert digest(path) == before


def test_another_programs_sqlite_database_is_refused_and_left_unchanged(lite):
    with sqlite3.connect(lite) as database:
        database.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        database.execute("INSERT INTO notes (text) VALUES ('field notes, 2026')")
    database.close()
    refuses_and_keeps(lite, r"another program's SQLite database \(its tables: notes\)")
    tables = sqlite3.connect(lite).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("notes",)]  # no Milvus table added


def test_a_file_of_another_kind_is_refused_and_left_unchanged(lite):
    lite.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    refuses_and_keeps(lite, "is not a Milvus Lite file: it is not even a SQLite database")


def test_a_milvus_lite_file_cut_short_is_refused_and_left_unchanged(lite, tmp_path):
    client = milvus.connect()
    client.create_collection("x", dimension=4)
    client.insert("x", [{"id": n, "vector": [0.1 * n, 0.2, 0.3, 0.4]} for n in range(2_000)])
    client.close()
    milvus._let_go(str(lite))
    whole = lite.read_bytes()
    assert len(whole) > 8192
    lite.write_bytes(whole[: len(whole) // 2])
    refuses_and_keeps(lite, "is cut short")
