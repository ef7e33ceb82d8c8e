"""Reading an imported CSV file: UTF-8 (a BOM is allowed), a header with the needed columns."""
import codecs
import csv
from collections.abc import Iterator
from pathlib import Path

from .errors import ImportFailed

# A field of a real INQUIRE file is a sentence; a 1 MB field is a wrong file.
csv.field_size_limit(1024 * 1024)


def _decoded_lines(path: Path, handle) -> Iterator[str]:
    """Decode line by line, so that a byte that is not UTF-8 is reported with its line."""
    for number, raw in enumerate(handle, start=1):
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ImportFailed(
                path, f"line {number}", "the file is not UTF-8 text; save it as UTF-8 and import again"
            ) from None


def read_csv(path: Path, required: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line number, row) for each data row of a CSV file.

    Raises ImportFailed naming the file and line for: a missing file, a file
    that is not UTF-8, a header without the required columns, a row with the
    wrong number of fields.
    """
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(path, None, "no such file")
    with path.open("rb") as handle:
        reader = csv.reader(_decoded_lines(path, handle))
        try:
            header = next(reader, None)
            if header is None:
                raise ImportFailed(path, "line 1", "the file is empty; expected a header line")
            missing = [name for name in required if name not in header]
            if missing:
                raise ImportFailed(
                    path,
                    "line 1",
                    f"missing column(s) {', '.join(missing)}; the header must contain {', '.join(required)}",
                )
            for fields in reader:
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise ImportFailed(
                        path,
                        f"line {reader.line_num}",
                        f"expected {len(header)} fields as in the header, found {len(fields)}",
                    )
                yield reader.line_num, dict(zip(header, fields))
        except csv.Error as error:
            raise ImportFailed(path, f"line {reader.line_num}", f"malformed CSV ({error})") from None
