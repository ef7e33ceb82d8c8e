"""Reading ground truth and runs. No Django here except `qrels_from_database`.

Ground truth:
  INQUIRE annotations CSV  query_id,image_id,image_path          (positives only)
  Quire labels CSV         query_id,image_id,image_path,label,...  (relevant / not_relevant / unsure;
                                                                    only "relevant" counts as relevant)
  INQUIRE queries CSV      [,]query_id,query_text,supercategory,category,iconic_group: the query set and
                           the columns tables are grouped by
Runs:
  TREC        qid Q0 docid rank score tag        (whitespace separated, no header)
  CSV         query_id,image_id,score[,rank]     (header required)
  Rerank      INQUIRE-Rerank layout: query_id (or query, the text), inat24_image_id, relevant, clip_score
              (a fixed candidate set per query; its `relevant` column is the ground truth)

A run's order within a query is its score, best first; equal scores keep the
order of the file (or of the rank column when one is given). Every problem is
reported with the file and line.

Well-formed runs and ground truth are read by `evaluation.columnar` (pyarrow and numpy); the
line-by-line readers here read everything else, so that they can name the line to fix.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.inputs import WHOLE_NUMBER, CsvFile, not_a_whole_number
from common.inputs import InputError as InputError  # what the readers raise, for their callers

from . import columnar

# (line, query id, image id, score, order key) of one ranked image, as the run readers yield them.
Entry = tuple[int, int, int, float, tuple[int, int]]
RELEVANT = "relevant"


@dataclass
class GroundTruth:
    positives: dict[int, set[int]]
    judged: dict[int, set[int]] = field(default_factory=dict)  # every labeled image, when negatives are known
    queries: dict[int, dict[str, Any]] = field(default_factory=dict)  # query id -> its columns (text, supercategory...)
    source: str = ""

    def query_ids(self) -> list[int]:
        """The queries evaluated: all of the queries file when given, else every query the ground truth
        judges (those without a relevant image are then reported as having none)."""
        return sorted(self.queries) if self.queries else sorted(self.positives)


@dataclass
class Run:
    name: str
    ranked: dict[int, list[tuple[int, float]]]  # query id -> [(image id, score)], best first
    candidate_relevance: dict[int, dict[int, bool]] | None = None  # rerank layout only


def _int(path: Path, line: int, row: Mapping[str, str], column: str) -> int:
    value = (row.get(column) or "").strip()
    if not WHOLE_NUMBER.fullmatch(value):  # int() would also read other scripts' digits ("٣" is 3)
        raise InputError(path, line, not_a_whole_number(column, value))
    return int(value)


def _float(path: Path, line: int, value: Any, column: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(path, line, f"{column} must be a number, not {value!r}") from None
    if number != number:
        raise InputError(path, line, f"{column} is NaN")
    return number


def read_queries(path: Path) -> dict[int, dict[str, Any]]:
    """Read an INQUIRE queries CSV: {query id: {column: value}} for every other column (query_text,
    supercategory, category, iconic_group...), the columns report tables can be grouped by.
    Raises InputError (file, line, problem)."""
    table = CsvFile(path)
    table.require(["query_id"])
    queries = {}
    for line, row in table.records():
        query_id = _int(path, line, row, "query_id")
        if query_id in queries:
            raise InputError(path, line, f"query {query_id} appears twice")
        queries[query_id] = {key: value for key, value in row.items() if key and key != "query_id"}
    return queries


def _ints(path: Path, line: int, row: list[str], positions: tuple[int, ...], names: tuple[str, ...]) -> list[int]:
    try:
        values = [row[position] for position in positions]
        if not all(WHOLE_NUMBER.fullmatch(value.strip()) for value in values):
            raise ValueError
        return [int(value) for value in values]
    except (ValueError, IndexError):
        for position, name in zip(positions, names, strict=True):
            _int(path, line, {name: row[position] if position < len(row) else ""}, name)
        raise


def read_qrels(path: Path, queries_path: Path | None = None) -> GroundTruth:
    """Read ground truth from an INQUIRE annotations CSV (every row relevant) or a Quire labels CSV
    (a `label` column; only "relevant" counts as relevant, other labels are judged negatives),
    and the query set from `queries_path` when given. Raises InputError (file, line, problem)."""
    rows = CsvFile(path)
    rows.require(["query_id", "image_id"], "give an INQUIRE annotations or Quire labels CSV")
    header = rows.header
    label = header.index("label") if "label" in header else None
    queries = read_queries(queries_path) if queries_path else {}
    if (fast := columnar.qrels(path, header)) is not None:
        rows.close()
        positives, judged = fast
    else:
        positives, judged = _read_qrels_rows(path, rows)
    if not any(positives.values()):
        raise InputError(path, None, "has no relevant images: there is nothing to evaluate against")
    return GroundTruth(positives, judged if label is not None else {}, queries, source=str(path))


def _read_qrels_rows(path: Path, rows: CsvFile) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    header = rows.header
    q, i = header.index("query_id"), header.index("image_id")
    label = header.index("label") if "label" in header else None
    positives: dict[int, set[int]] = {}
    judged: dict[int, set[int]] = {}
    for line, row in rows:
        if not row:
            continue
        query_id, image_id = _ints(path, line, row, (q, i), ("query_id", "image_id"))
        images = judged.setdefault(query_id, set())
        if image_id in images:
            raise InputError(path, line, f"query {query_id}, image {image_id} appears twice")
        images.add(image_id)
        relevant = positives.setdefault(query_id, set())
        if label is None or row[label].strip() == RELEVANT:
            relevant.add(image_id)
    return positives, judged


def qrels_from_database(query_ids: Iterable[int] | None = None) -> GroundTruth:
    """Ground truth from the labels in Quire's database (of `query_ids`, default all): relevant is
    relevant; not relevant and unsure are judged negatives. Raises InputError when nothing is relevant."""
    from annotator.models import Label, LabelValue, Query  # Django's models: the plain CLI reads files only

    labels = Label.objects.all() if query_ids is None else Label.objects.filter(query_id__in=query_ids)
    positives: dict[int, set[int]] = {}
    judged: dict[int, set[int]] = {}
    for query_id, image_id, value in labels.values_list("query_id", "image_id", "value").iterator(chunk_size=20_000):
        judged.setdefault(query_id, set()).add(image_id)
        positives.setdefault(query_id, set())
        if value == LabelValue.RELEVANT:
            positives[query_id].add(image_id)
    if not any(positives.values()):
        raise InputError("the database", None, "has no relevant labels yet: label some images first")
    queries = {
        q.pk: {
            "query_text": q.text,
            "supercategory": q.supercategory,
            "category": q.category,
            "iconic_group": q.iconic_group,
            "split": q.split,
        }
        for q in Query.objects.filter(pk__in=positives)
    }
    return GroundTruth(positives, judged, queries, source="database labels")


def read_run(path: Path, *, score_column: str = "clip_score", queries: dict[int, dict[str, Any]] | None = None) -> Run:
    """Read a run, recognising its format from its first line: TREC (whitespace separated), a CSV
    with query_id,image_id,score[,rank], or the INQUIRE-Rerank layout (`score_column` holds the
    scores; `queries` maps its query texts to ids). Each query's images come best first by score,
    ties in file (or rank) order. Raises InputError (file, line, problem)."""
    path = Path(path)
    try:
        head = path.read_bytes()[:4096].decode("utf-8-sig", errors="replace")
    except OSError as error:
        raise InputError(path, None, f"cannot be read: {error.strerror}") from None
    first = head.splitlines()[0] if head.strip() else ""
    if not first:
        raise InputError(path, None, "is empty")
    if "," not in first:  # whitespace-separated: TREC
        return _nonempty(path, _read_trec(path))
    header = [column.strip() for column in first.split(",")]
    if "inat24_image_id" in header:
        return _nonempty(path, _read_rerank(path, score_column, queries or {}))
    if {"query_id", "image_id", "score"} <= set(header):
        return _nonempty(path, _read_csv_run(path))
    raise InputError(
        path,
        1,
        "not a run: expected TREC lines (qid Q0 docid rank score tag), a CSV with query_id,image_id,score, "
        "or the INQUIRE-Rerank columns (query_id or query, inat24_image_id, relevant, clip_score)",
    )


def _nonempty(path: Path, run: Run) -> Run:
    if not run.ranked:
        raise InputError(path, None, "has no rows: a run ranks at least one image for one query")
    return run


def _collect(path: Path, entries: Iterable[Entry]) -> dict[int, list[tuple[int, float]]]:
    """entries: (line, query_id, image_id, score, order key). Sorts each query by score, ties by the order key."""
    by_query: dict[int, dict[int, tuple[Any, ...]]] = {}
    for line, query_id, image_id, score, order in entries:
        images = by_query.get(query_id)
        if images is None:
            images = by_query[query_id] = {}
        if image_id in images:
            raise InputError(
                path, line, f"query {query_id}, image {image_id} is already ranked on line {images[image_id][2]}"
            )
        images[image_id] = (-score, order, line)
    return {
        query_id: [(image_id, -key[0]) for image_id, key in sorted(images.items(), key=lambda item: item[1])]
        for query_id, images in by_query.items()
    }


def _read_trec(path: Path) -> Run:
    if (ranked := columnar.trec_run(path)) is not None:
        return Run(Path(path).name, ranked)

    def entries() -> Iterator[Entry]:
        for line, text in enumerate(Path(path).read_text(encoding="utf-8-sig").splitlines(), start=1):
            if not text.strip():
                continue
            fields = text.split()
            if len(fields) != 6:
                raise InputError(
                    path, line, f"a TREC run line has 6 fields (qid Q0 docid rank score tag), this one {len(fields)}"
                )
            try:
                query_id, image_id, rank = int(fields[0]), int(fields[2]), int(fields[3])
            except ValueError:
                raise InputError(path, line, "qid, docid and rank must be whole numbers") from None
            yield line, query_id, image_id, _float(path, line, fields[4], "score"), (rank, line)

    return Run(Path(path).name, _collect(path, entries()))


def _read_csv_run(path: Path) -> Run:
    rows = CsvFile(path)
    header = rows.header
    if (ranked := columnar.csv_run(path, header)) is not None:
        rows.close()
        return Run(Path(path).name, ranked)
    q, i, sc = header.index("query_id"), header.index("image_id"), header.index("score")
    rank = header.index("rank") if "rank" in header else None

    def entries() -> Iterator[Entry]:
        for line, row in rows:
            if not row:
                continue
            query_id, image_id = _ints(path, line, row, (q, i), ("query_id", "image_id"))
            order = (_ints(path, line, row, (rank,), ("rank",))[0], line) if rank is not None else (0, line)
            yield line, query_id, image_id, _float(path, line, row[sc], "score"), order

    return Run(Path(path).name, _collect(path, entries()))


def _read_rerank(path: Path, score_column: str, queries: dict[int, dict[str, Any]]) -> Run:
    table = CsvFile(path)
    table.require(["relevant", score_column], "the rerank layout needs relevant and score columns")
    rows = table.records()
    by_text = {columns.get("query_text", ""): query_id for query_id, columns in queries.items()}
    relevance: dict[int, dict[int, bool]] = {}

    def entries() -> Iterator[Entry]:
        for line, row in rows:
            if "query_id" in table.header:
                query_id = _int(path, line, row, "query_id")
            elif row.get("query", "") in by_text:
                query_id = by_text[row["query"]]
            else:
                raise InputError(
                    path, line, f"query {row.get('query', '')!r} is not in the queries file (give --queries)"
                )
            image_id = _int(path, line, row, "inat24_image_id")
            flag = (row["relevant"] or "").strip().lower()
            if flag not in ("0", "1", "true", "false"):
                raise InputError(path, line, f"relevant must be 0/1 or true/false, not {flag!r}")
            relevance.setdefault(query_id, {})[image_id] = flag in ("1", "true")
            yield line, query_id, image_id, _float(path, line, row[score_column], score_column), (0, line)

    ranked = _collect(path, entries())
    return Run(Path(path).name, ranked, relevance)
