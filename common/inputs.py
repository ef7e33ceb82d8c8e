"""Reading files people give Quire: one error type and one CSV reader for every importer and reader.

No Django here: the evaluation readers use it too, and a reader that fails must only
say where and why, never touch the database.
"""

import codecs
import csv
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

# What a whole number looks like in a file: ASCII digits, an optional sign. Python's int() also takes other
# scripts' digits ("٣٣٣" is 333), underscores and spaces, none of which an id in a CSV should be.
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def not_a_whole_number(field: str, text: str) -> str:
    """The sentence for a field that is not a whole number (naming the digits when they are another script's)."""
    if text.lstrip("+-").isdigit():
        return f"{field} must be written in ASCII digits (0-9), not {text[:40]!r}"
    return f"{field} must be a whole number, not {text[:40]!r}"


class InputError(ValueError):
    """A file cannot be read as asked. Its text is one line: the file, the place in it, and what to fix.

    `where` is a line number (shown as "line N"), a place such as "images[12]" or
    "near byte 65536", or None for the file as a whole. Importers raise it before or
    inside their transaction, so the database is left exactly as it was.
    """

    def __init__(self, path: Path | str, where: int | str | None, problem: str) -> None:
        self.path = str(path)
        self.where = f"line {where}" if isinstance(where, int) else where
        # One line, always: a value quoted from the file may hold line breaks.
        self.problem = problem.replace("\r", "\\r").replace("\n", "\\n")
        place = f"{self.path}, {self.where}" if self.where else self.path
        super().__init__(f"{place}: {self.problem}")


class CsvFile:
    """A CSV file with a header line, read as it is iterated (a 200 MB file is never held whole).

    Iterating yields (line number, fields) for each non-blank data row; every row must
    have as many fields as the header. UTF-8 only (a BOM is allowed). Every problem
    raises InputError with the line: a byte that is not UTF-8, a malformed row, a row
    with the wrong number of fields, a missing file, an empty file.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(self.path, None, "no such file")
        self._handle = self.path.open("rb")
        self._reader = csv.reader(self._decoded_lines())
        first = self._next()
        if first is None:
            self._handle.close()
            raise InputError(self.path, 1, "the file is empty; expected a header line")
        self.header = [name.strip() for name in first]

    def require(self, columns: Iterable[str], hint: str = "") -> None:
        """Raise InputError naming the columns of `columns` the header lacks."""
        missing = [name for name in columns if name not in self.header]
        if missing:
            self._handle.close()
            found = ", ".join(name or "(unnamed)" for name in self.header)
            raise InputError(
                self.path, 1, f"missing column(s) {', '.join(missing)} (found {found}){'; ' + hint if hint else ''}"
            )

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        try:
            while (fields := self._next()) is not None:
                if not fields:
                    continue
                if len(fields) != len(self.header):
                    raise InputError(
                        self.path,
                        self._reader.line_num,
                        f"expected {len(self.header)} fields as in the header, found {len(fields)}",
                    )
                yield self._reader.line_num, fields
        finally:
            self._handle.close()

    def close(self) -> None:
        """Done with the file without reading its rows (another reader took them)."""
        self._handle.close()

    def records(self) -> Iterator[tuple[int, dict[str, str]]]:
        """(line number, {column: value}) for each data row."""
        for line, fields in self:
            yield line, dict(zip(self.header, fields, strict=True))

    def _next(self) -> list[str] | None:
        try:
            return next(self._reader, None)
        except csv.Error as error:
            raise InputError(self.path, self._reader.line_num, f"malformed CSV ({error})") from None

    def _decoded_lines(self) -> Iterator[str]:
        """Decode line by line, so that a byte that is not UTF-8 is reported with its line."""
        for number, raw in enumerate(self._handle, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(
                    self.path, number, "the file is not UTF-8 text; save it as UTF-8 and try again"
                ) from None


def read_csv(path: Path, required: Iterable[str] = (), hint: str = "") -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line number, row as a dict) for each data row of a CSV file whose header has `required`.

    Raises InputError (file, line, problem) as CsvFile does, and for missing columns.
    """
    table = CsvFile(path)
    table.require(required, hint)
    yield from table.records()
