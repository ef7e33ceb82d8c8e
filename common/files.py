"""Writing files so that readers never see half of one.

Every file Quire writes that another process may read at the same time (thumbnails,
exports, the index pointer, embedding parts, the demo's metadata) is written beside
its final name and renamed over it: rename is atomic on POSIX file systems, so a
reader finds the old file or the new one. A crash mid-write leaves only a hidden
temporary file, never a truncated file under the real name.
"""

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path in `target`'s folder to write to; when the block ends without an
    error it replaces `target` in one rename, otherwise it is removed and `target` is untouched."""
    target = Path(target)
    # Unique per writer: two threads or processes making the same thumbnail both finish whole.
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_atomically(target: str | Path, data: bytes | str) -> None:
    """Write `data` (text as UTF-8) to `target` through atomic_path."""
    with atomic_path(target) as temporary:
        if isinstance(data, str):
            temporary.write_text(data, encoding="utf-8")
        else:
            temporary.write_bytes(data)
