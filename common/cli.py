"""What every Quire import and export command shares: one-line errors and a progress bar."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError
from tqdm import tqdm

from .inputs import InputError


@contextmanager
def input_errors_as_command_errors() -> Iterator[None]:
    """Turn an InputError into Django's CommandError: the one-line message and exit status 1."""
    try:
        yield
    except InputError as error:
        raise CommandError(str(error)) from None


@contextmanager
def progress_bar(description: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """Yield a progress(done, total) callback drawing a tqdm bar on stderr (silent when not a terminal)."""
    bar = tqdm(desc=description, unit=unit, unit_scale=True, disable=None)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield progress
    finally:
        bar.close()


@contextmanager
def reading_bar() -> Iterator[Callable[[str, int, int], None]]:
    """Yield a reading(step, bytes_read, file_bytes) callback drawing one byte-counting tqdm bar per
    step of reading a file (silent when not a terminal)."""
    bars: dict[str, tqdm] = {}

    def reading(step: str, done: int, total: int) -> None:
        if step not in bars:
            for bar in bars.values():
                bar.close()
            bars[step] = tqdm(desc=f"reading ({step})", total=total, unit="B", unit_scale=True, disable=None)
        bars[step].update(done - bars[step].n)

    try:
        yield reading
    finally:
        for bar in bars.values():
            bar.close()
