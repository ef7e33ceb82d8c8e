"""A Milvus Lite file: one process at a time, and only a file that is Milvus Lite's.

Why Quire keeps its own lock: milvus-lite 2.5 locks `.<name>.lock` beside the file, but a process that is
refused still builds a Server whose stop() (run when it is dropped) unlinks that lock file, which it never
held. The next process then creates a new lock file, locks it, and opens the same database as the holder
(issue 37: after the first refusal, three gunicorn workers, `search` and `build_index --rebuild` all opened one
file). Quire's lock, `.<name>.quire-lock`, is taken before milvus-lite is asked and is never unlinked: flock
belongs to the open file, so the kernel lets go of it when the process ends, however it ends.

Why the file is looked at first: pointed at another program's SQLite database, Milvus Lite added its three
tables to it; pointed at a damaged or truncated file it failed in a way pymilvus reported as "another process
has the file open". A file that exists is read (never written) before Milvus Lite opens it, and refused with a
sentence saying what it is.
"""

import fcntl
import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

from .exceptions import VectorDatabaseUnavailable

SQLITE_MAGIC = b"SQLite format 3\x00"
# Tables Milvus Lite 2.5 makes in every file it opens (its collections' own tables come beside them).
MILVUS_LITE_TABLES = {"collection_meta", "bm25_stats", "token_doc_count"}

_held: dict[str, int] = {}  # resolved file path -> the descriptor holding Quire's lock on it
_held_lock = threading.Lock()


def is_lite(uri: str) -> bool:
    return uri.endswith(".db")


def hold(uri: str, setting: str) -> bool:
    """Take this process's hold on the Milvus Lite file `uri`; True when it was taken now (False for a server
    address, or a file this process holds already). VectorDatabaseUnavailable, with a sentence naming
    `setting`, when another process holds it or the file is not Milvus Lite's. A folder that does not exist
    is left for pymilvus to name."""
    if not is_lite(uri):
        return False
    path = Path(uri).absolute().resolve()
    if not path.parent.is_dir():
        return False
    with _held_lock:
        if str(path) in _held:
            return False
        descriptor = os.open(path.parent / f".{path.name}.quire-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise VectorDatabaseUnavailable(
                f"Milvus Lite cannot open {setting}: another process has the file open, and Milvus Lite serves "
                "one process at a time. Stop that process, or run a Milvus server and point QUIRE_MILVUS_URI at it."
            ) from None
        try:
            check(path, setting)
        except VectorDatabaseUnavailable:
            os.close(descriptor)
            raise
        _held[str(path)] = descriptor
        return True


def let_go(uri: str) -> None:
    """Give up this process's hold (after its Milvus Lite server for the file has stopped)."""
    if not is_lite(uri):
        return
    path = str(Path(uri).absolute().resolve())
    with _held_lock:
        if (descriptor := _held.pop(path, None)) is not None:
            os.close(descriptor)  # the flock goes with it; the lock file stays, so that no one re-creates it


def _refuse_cut_short(path: Path, header: bytes, setting: str) -> None:
    """A SQLite file smaller than its header says: a copy or a disk that stopped half-way."""
    # The header's page size and page count (sqlite.org/fileformat.html, offsets 16, 28; the count is valid
    # when the change counter at 24 equals the version-valid-for number at 92).
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] == header[92:96] and pages and path.stat().st_size < pages * page_size:
        raise VectorDatabaseUnavailable(
            f"{setting} is cut short: its header counts {pages * page_size:,} bytes and the file holds "
            f"{path.stat().st_size:,} (a copy or a disk that stopped half-way). It was left as it is: restore it, "
            "or load the collection again into a new file with build_index --backend milvus."
        )


def check(path: Path, setting: str) -> None:
    """Refuse a file that is not Milvus Lite's, reading it only: another program's SQLite database, a file
    of another kind, or one damaged or cut short. A missing or empty file is new: Milvus Lite makes it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise VectorDatabaseUnavailable(
            f"{setting} is not a Milvus Lite file: it is not even a SQLite database (another kind of file, or "
            "one damaged). It was left as it is: point QUIRE_MILVUS_URI at a new file, or restore this one."
        )
    _refuse_cut_short(path, header, setting)
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as database:
            tables = {name for (name,) in database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as error:
        raise VectorDatabaseUnavailable(
            f"{setting} is damaged ({error}). It was left as it is: restore it, or load the collection again into "
            "a new file with build_index --backend milvus."
        ) from None
    if tables and not MILVUS_LITE_TABLES & tables:
        named = ", ".join(sorted(tables)[:5])
        raise VectorDatabaseUnavailable(
            f"{setting} is another program's SQLite database (its tables: {named}), not a Milvus Lite file. It was "
            "left as it is: point QUIRE_MILVUS_URI at a file of Quire's own."
        )
