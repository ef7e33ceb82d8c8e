"""The fast path for reading runs and ground truth: pyarrow's multithreaded CSV reader and numpy.

A 250-query, 1,000-deep run and INQUIRE's annotations are 430,000 lines: the standard library's csv
module and a Python loop took 1.2 s over them, pyarrow and numpy a tenth of that (bench/eval_bench.py).
This module only reads files that are well formed. Whenever anything is off (a field that is not a
number, a NaN score, a repeated image, a ragged row, a stray tab, bytes that are not UTF-8) it returns
None, and `evaluation.inputs` reads the file again line by line to name the file, line and problem.
So the two readers cannot disagree on a good file, and a bad one is explained exactly as before.
"""

from pathlib import Path
from typing import Any

import numpy as np

RELEVANT = "relevant"
TREC_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]


def _read(
    path: Path, *, columns: list[str], types: dict[str, Any], names: list[str] | None = None, delimiter: str = ","
) -> dict[str, Any] | None:
    """The columns as numpy arrays (strings as Python lists), or None if pyarrow cannot read them cleanly."""
    import pyarrow as pa
    from pyarrow import csv

    try:
        table = csv.read_csv(
            Path(path),
            read_options=csv.ReadOptions(column_names=names, use_threads=True, block_size=1 << 22),
            parse_options=csv.ParseOptions(delimiter=delimiter, newlines_in_values=False),
            convert_options=csv.ConvertOptions(
                include_columns=columns, column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowTypeError, KeyError, UnicodeDecodeError, OSError):
        return None
    arrays: dict[str, Any] = {}
    for name in columns:
        column = table.column(name)
        if column.null_count:  # an empty numeric field
            return None
        arrays[name] = column.to_pylist() if pa.types.is_string(column.type) else _numbers(column)
    return arrays


# The numeric types the readers ask pyarrow for, as numpy's.
_NUMPY_TYPES: dict[str, type[np.number[Any]]] = {"int64": np.int64, "double": np.float64}


def _numbers(column: Any) -> np.ndarray:  # a pyarrow ChunkedArray
    """A numeric column with no nulls as one numpy array, viewed from its chunks' data buffers. pyarrow's own
    to_numpy imports pandas to look for extension types: 0.38 s, a third of `manage.py evaluate`'s run over
    INQUIRE-sized files (bench/eval_bench.py)."""
    dtype: np.dtype[Any] = np.dtype(_NUMPY_TYPES[str(column.type)])
    parts = [
        np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
        for chunk in column.chunks
    ]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _has_repeats(query_ids: np.ndarray, image_ids: np.ndarray) -> bool:
    """Whether a (query, image) pair appears twice. Both ids in one int64 key when they fit (one sort,
    4x quicker than a two-key lexsort; np.unique over rows sorts a structured view and is 40x slower)."""
    if query_ids.min() >= 0 and image_ids.min() >= 0 and int(query_ids.max()) < 2**20 and int(image_ids.max()) < 2**43:
        keys = np.sort((query_ids << 43) | image_ids)
        return bool(np.any(keys[1:] == keys[:-1]))
    order = np.lexsort((image_ids, query_ids))
    q, i = query_ids[order], image_ids[order]
    return bool(np.any((q[1:] == q[:-1]) & (i[1:] == i[:-1])))


def _in_order(query_ids: np.ndarray, scores: np.ndarray, ranks: np.ndarray) -> bool:
    """Whether the file already lists each query's images best first (as runs are written): no sort needed."""
    same = query_ids[1:] == query_ids[:-1]
    if np.count_nonzero(~same) + 1 != len(np.unique(query_ids)):  # a query's lines are not all together
        return False
    ordered = (scores[1:] < scores[:-1]) | ((scores[1:] == scores[:-1]) & (ranks[1:] >= ranks[:-1]))
    return bool(np.all(ordered | ~same))


def _blocks(sorted_ids: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of equal values in `sorted_ids` (one query's lines)."""
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    return list(zip(starts.tolist(), np.r_[starts[1:], len(sorted_ids)].tolist(), strict=True))


def _group(
    query_ids: np.ndarray, image_ids: np.ndarray, scores: np.ndarray, order_keys: tuple[np.ndarray, ...]
) -> dict[int, list[tuple[int, float]]]:
    """Each query's images best first: by score, then by the order keys (rank, then line)."""
    if not _in_order(query_ids, scores, order_keys[0]):
        order = np.lexsort((*reversed(order_keys), -scores, query_ids))
        query_ids, image_ids, scores = query_ids[order], image_ids[order], scores[order]
    images, values = image_ids.tolist(), scores.tolist()
    return {int(query_ids[a]): list(zip(images[a:b], values[a:b], strict=True)) for a, b in _blocks(query_ids)}


def _ranked(
    query_ids: np.ndarray, image_ids: np.ndarray, scores: np.ndarray, order_keys: tuple[np.ndarray, ...]
) -> dict[int, list[tuple[int, float]]] | None:
    # NaN, or infinite (a number too long for a float: the line reader names its line)
    if not len(query_ids) or not np.isfinite(scores).all() or _has_repeats(query_ids, image_ids):
        return None
    return _group(query_ids, image_ids, scores, order_keys)


def trec_run(path: Path) -> dict[int, list[tuple[int, float]]] | None:
    """A TREC run (qid Q0 docid rank score tag, one space apart): ties by rank, then line."""
    import pyarrow as pa

    cols = _read(
        path,
        columns=["qid", "docid", "rank", "score"],
        types={"qid": pa.int64(), "docid": pa.int64(), "rank": pa.int64(), "score": pa.float64()},
        names=TREC_COLUMNS,
        delimiter=" ",
    )
    if cols is None:
        return None
    lines = np.arange(len(cols["qid"]))
    return _ranked(cols["qid"], cols["docid"], cols["score"], (cols["rank"], lines))


def csv_run(path: Path, header: list[str]) -> dict[int, list[tuple[int, float]]] | None:
    """A CSV run with query_id,image_id,score[,rank]: ties by rank when given, then line."""
    import pyarrow as pa

    columns = ["query_id", "image_id", "score"] + (["rank"] if "rank" in header else [])
    types = {"query_id": pa.int64(), "image_id": pa.int64(), "score": pa.float64(), "rank": pa.int64()}
    cols = _read(path, columns=columns, types={name: types[name] for name in columns})
    if cols is None:
        return None
    lines = np.arange(len(cols["query_id"]))
    keys = (cols["rank"], lines) if "rank" in cols else (lines,)
    return _ranked(cols["query_id"], cols["image_id"], cols["score"], keys)


def qrels(path: Path, header: list[str]) -> tuple[dict[int, set[int]], dict[int, set[int]]] | None:
    """Positives and judged images per query from an INQUIRE annotations or Quire labels CSV."""
    import pyarrow as pa

    labeled = "label" in header
    columns = ["query_id", "image_id"] + (["label"] if labeled else [])
    cols = _read(
        path,
        columns=columns,
        types={"query_id": pa.int64(), "image_id": pa.int64(), **({"label": pa.string()} if labeled else {})},
    )
    if cols is None or not len(cols["query_id"]) or _has_repeats(cols["query_id"], cols["image_id"]):
        return None
    query_ids, image_ids = cols["query_id"], cols["image_id"]
    relevant = (
        np.fromiter((value.strip() == RELEVANT for value in cols["label"]), dtype=bool, count=len(query_ids))
        if labeled
        else np.ones(len(query_ids), dtype=bool)
    )
    order = np.argsort(query_ids, kind="stable")
    query_ids, image_ids, relevant = query_ids[order], image_ids[order], relevant[order]
    positives, judged = {}, {}
    for a, b in _blocks(query_ids):
        query_id = int(query_ids[a])
        images = image_ids[a:b]
        judged[query_id] = set(images.tolist())
        positives[query_id] = set(images[relevant[a:b]].tolist())
    return positives, judged
