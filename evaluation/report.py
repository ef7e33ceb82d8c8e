"""Scoring a run against ground truth under a protocol, and the tables the papers print.

Protocols:
  fullrank  the run ranks the collection; R = every positive of the query; AP normaliser min(k, R);
            k 50 unless given
  rerank    the run reorders a fixed candidate set (INQUIRE-Rerank); R = positives among the
            candidates; AP normaliser r (plain AP over the list); k = the query's number of
            candidates unless given (INQUIRE scores AP over all 100)
  two-stage: `two_stage(first, second, top)` reorders the first run's top N by the second run's
            scores; the result is scored full-rank.

Averages: `overall` is the macro average over queries (every query weighs the same, as in the
papers); each group table gives per-group macro averages over its queries, and `mean_of_groups`
the average of the group means (each group weighs the same).

Tied scores: averaged as scikit-learn (and so INQUIRE) does, unless ties="run-order" (metrics.py).

Queries with no relevant image: their metrics are undefined (None; null in the JSON, "no positives"
in the tables) and they are left out of every mean, with a warning naming them. This is INQUIRE's
rule (its metrics give NaN and its means skip them), and it is the same whether the ground truth
comes from files or from the database.
"""

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import metrics as measures
from .inputs import GroundTruth, Run

DEFAULT_METRICS = ("ap", "ndcg", "mrr", "precision", "recall", "hit", "oracle_ap")
PROTOCOLS = ("fullrank", "rerank")
FULLRANK_K = 50

NO_GROUP = "(none)"  # the group of queries with no value in a grouping column


@dataclass
class Report:
    protocol: str
    k: int
    metrics: tuple[Any, ...]
    per_query: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    run: str = ""
    ground_truth: str = ""
    ties: str = "average"
    normaliser: str = "min"
    k_is_candidates: bool = False  # rerank with no k given: each query's k is its number of candidates

    @property
    def k_label(self) -> str:
        return f"all candidates (up to {self.k})" if self.k_is_candidates else str(self.k)

    def scored(self, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The rows whose metrics are defined (the query has at least one relevant image)."""
        return [row for row in (self.per_query if rows is None else rows) if not row.get("no_positives")]

    def overall(self) -> dict[str, Any]:
        """Mean, standard error and bootstrap interval per metric (computed once: the tables and the JSON share it)."""
        if getattr(self, "_overall", None) is None:
            self._overall = {
                name: measures.mean_with_uncertainty([row[name] for row in self.scored()]) for name in self.metrics
            }
        return self._overall

    def groups(self, columns: Iterable[str]) -> dict[str, Any]:
        """Per value of each of `columns`: the macro averages of its queries, then their mean. A query with
        no value there (one added in the app without a category) is in the group NO_GROUP."""
        result: dict[str, Any] = {}
        for column in columns:
            values: dict[str, list[dict[str, Any]]] = {}
            for row in self.per_query:
                values.setdefault(str(row.get(column) or "").strip() or NO_GROUP, []).append(row)
            table = {
                value: {
                    "queries": len(self.scored(rows)),
                    **{name: _mean(self.scored(rows), name) for name in self.metrics},
                }
                for value, rows in sorted(values.items())
            }
            groups = [group for group in table.values() if group["queries"]]
            table["mean_of_groups"] = {name: _mean(groups, name) for name in self.metrics}
            result[column] = table
        return result

    def as_json(self, group_by: Iterable[str] = ()) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "k": self.k,
            "k_rule": "candidates" if self.k_is_candidates else "fixed",
            "ties": self.ties,
            "normaliser": self.normaliser,
            "run": self.run,
            "ground_truth": self.ground_truth,
            "queries": len(self.per_query),
            "scored": len(self.scored()),  # the queries the averages are over: those with a relevant image
            "overall": {name: summary["mean"] for name, summary in self.overall().items()},
            "uncertainty": {name: {"se": s["se"], "ci95": s["ci95"]} for name, s in self.overall().items()},
            "groups": self.groups(group_by),
            "per_query": self.per_query,
            "warnings": self.warnings,
        }

    def per_query_csv(self) -> str:
        out = io.StringIO()
        columns = ["query_id", "R", "retrieved", *self.metrics]
        extra = list(dict.fromkeys(key for row in self.per_query for key in row if key not in columns))
        writer = csv.DictWriter(out, fieldnames=columns + extra, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.per_query)
        return out.getvalue()


def _mean(rows: list[dict[str, Any]], name: str) -> float | None:
    return float(np.mean([row[name] for row in rows])) if rows else None


def evaluate(
    truth: GroundTruth,
    run: Run,
    *,
    protocol: str = "fullrank",
    k: int | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    normaliser: str | None = None,
    ties: str = "average",
) -> Report:
    """Score `run` against `truth`: one row per query of the metrics named, and the warnings a reader of
    the table must see (queries missing on either side, queries with no positive, unjudged top images).

    `protocol` "fullrank" scores each query's top `k` (default FULLRANK_K) against every relevant image of
    the ground truth; "rerank" scores a run in the INQUIRE-Rerank layout against its own candidate sets,
    over each query's whole candidate list unless `k` is given. `normaliser` is AP's denominator ("min" or
    "r"; the protocol's by default) and `ties` how equal scores are ranked ("average" or "order").
    Raises ValueError for an unknown protocol, metric or tie rule, or a k below 1.
    """
    metrics = tuple(metrics)
    _refuse_unknown(protocol, k, metrics, ties)
    normaliser = normaliser or ("r" if protocol == "rerank" else "min")
    per_candidates = protocol == "rerank" and k is None
    k = k or FULLRANK_K
    query_ids, warnings = _queries(truth, run, protocol)
    rows = []
    for query_id in query_ids:
        positives, query_k = _positives(truth, run, protocol, query_id, k, per_candidates)
        row = {"query_id": query_id, "R": len(positives), "retrieved": len(run.ranked.get(query_id, []))}
        row.update({"k": query_k} if per_candidates else {})
        row.update(_scores(run.ranked.get(query_id, []), positives, query_k, metrics, normaliser, ties))
        row.update({key: value for key, value in truth.queries.get(query_id, {}).items() if key})
        rows.append(row)
    warnings += _coverage_warnings(truth, run, protocol, query_ids, rows, k)
    if per_candidates:
        k = max((row["k"] for row in rows), default=1)
    return Report(
        protocol,
        k,
        metrics,
        rows,
        warnings,
        run=run.name,
        ground_truth=truth.source,
        ties=ties,
        normaliser=normaliser,
        k_is_candidates=per_candidates,
    )


def _refuse_unknown(protocol: str, k: int | None, metrics: tuple[str, ...], ties: str) -> None:
    if protocol not in PROTOCOLS:
        raise ValueError(f"the protocol is fullrank or rerank, not {protocol!r}")
    if k is not None and k < 1:
        raise ValueError("k must be at least 1")
    measures.score_query([], 0, 1, metrics, ties=ties)  # unknown metric names and tie rules fail here, first


def _queries(truth: GroundTruth, run: Run, protocol: str) -> tuple[list[Any], list[str]]:
    """The queries scored (the ground truth's, or under rerank the run's candidate sets) and warnings
    about the run's queries that are not among them or missing from the run."""
    query_ids = truth.query_ids()
    if protocol == "rerank":
        if run.candidate_relevance is None:
            raise ValueError("the rerank protocol needs a run in the INQUIRE-Rerank layout (with a relevant column)")
        query_ids = sorted(run.candidate_relevance)  # the candidate sets define the queries
    warnings = []
    if unknown := sorted(set(run.ranked) - set(query_ids)):
        warnings.append(
            f"{len(unknown)} queries of the run are not in the ground truth and were ignored: {unknown[:10]}"
        )
    return query_ids, warnings


def _positives(
    truth: GroundTruth, run: Run, protocol: str, query_id: int, k: int, per_candidates: bool
) -> tuple[set[int], int]:
    """A query's relevant images and the depth it is scored to."""
    if protocol != "rerank":
        return truth.positives.get(query_id, set()), k
    candidates = (run.candidate_relevance or {}).get(query_id, {})
    positives = {image for image, relevant in candidates.items() if relevant}
    return positives, (max(1, len(candidates)) if per_candidates else k)


def _scores(
    ranked: list[tuple[int, float]], positives: set[int], k: int, metrics: Sequence[str], normaliser: str, ties: str
) -> dict[str, Any]:
    """One query's metrics over its top k; None for each (and no_positives) when it has no positive."""
    if not positives:
        return {**{name: None for name in metrics}, "no_positives": True}
    top = ranked[:k]
    relevance = np.fromiter((image in positives for image, _ in top), dtype=np.float64, count=len(top))
    scores = np.fromiter((score for _, score in top), dtype=np.float64, count=len(top))
    return measures.score_query(relevance, len(positives), k, metrics, normaliser, scores=scores, ties=ties)


def _coverage_warnings(
    truth: GroundTruth, run: Run, protocol: str, query_ids: Iterable[int], rows: list[dict[str, Any]], k: int
) -> list[str]:
    """Warnings about what the scores cannot see: queries with no positive, unjudged top images."""
    warnings = []
    # One sentence per query: a query with no relevant image is undefined whether or not the run ranks it; only a
    # query that has positives and is missing from the run scores 0.
    if missing := [row["query_id"] for row in rows if not row.get("no_positives") and row["retrieved"] == 0]:
        warnings.append(f"{len(missing)} queries have no entries in the run and score 0: {missing[:10]}")
    if empty := [row["query_id"] for row in rows if row.get("no_positives")]:
        warnings.append(
            f"{len(empty)} queries have no relevant image: their metrics are undefined and left out of the "
            f"means: {empty[:10]}"
        )
    if protocol == "fullrank" and truth.judged and (unjudged := _unjudged(truth, run, query_ids, k)):
        warnings.append(f"{unjudged} images in the runs' top {k} were never labeled; they count as not relevant")
    return warnings


def _unjudged(truth: GroundTruth, run: Run, query_ids: Iterable[int], k: int) -> int:
    """How many images of the runs' top `k` the ground truth never judged."""
    return sum(
        1
        for query_id in query_ids
        for image, _ in run.ranked.get(query_id, [])[:k]
        if image not in truth.judged.get(query_id, ())
    )


def two_stage(first: Run, second: Run, top: int) -> Run:
    """Rerank the first run's top `top` by the second run's scores (images it does not score keep
    their first-stage order after those it does)."""
    ranked = {}
    for query_id, items in first.ranked.items():
        scores = dict(second.ranked.get(query_id, []))
        head = [image for image, _ in items[:top]]
        order = sorted(range(len(head)), key=lambda i: (head[i] not in scores, -scores.get(head[i], 0.0), i))
        ranked[query_id] = [(head[i], scores.get(head[i], float("-inf"))) for i in order]
    return Run(f"{first.name} top {top} reranked by {second.name}", ranked)


def compare(a: Report, b: Report, metric: str = "ap") -> dict[str, Any]:
    """Run A against run B on the queries both scored: per-query differences, share improved, p-value."""
    b_by_query = {row["query_id"]: row[metric] for row in b.scored()}
    pairs = [
        (row["query_id"], row[metric], b_by_query[row["query_id"]])
        for row in a.scored()
        if row["query_id"] in b_by_query
    ]
    a_values = np.array([x for _, x, _ in pairs])
    b_values = np.array([y for _, _, y in pairs])
    return {
        "metric": metric,
        "queries": len(pairs),
        "mean_a": float(a_values.mean()) if pairs else 0.0,
        "mean_b": float(b_values.mean()) if pairs else 0.0,
        "improved": float(np.mean(a_values > b_values)) if pairs else 0.0,
        "worse": float(np.mean(a_values < b_values)) if pairs else 0.0,
        "p_value": measures.paired_permutation_test(a_values, b_values),
        "per_query": [{"query_id": q, "a": x, "b": y, "difference": x - y} for q, x, y in pairs],
    }


def format_table(report: Report, group_by: Iterable[str] = ()) -> str:
    """The printed tables: AP, nDCG and oracle x100, the rest as fractions."""

    def cell(name: str, value: Any) -> str:
        if value is None:
            return "     –"
        return f"{100 * value:6.1f}" if name in measures.PERCENT_METRICS else f"{value:6.3f}"

    header = " ".join(f"{name:>9}" for name in report.metrics)
    lines = [_title(report)]
    named = _named_groups(report, group_by)
    # The first column as wide as its longest label (a group's whole name: "Defensive and Survival Behavior (12)").
    wide = max([24, *(len(label) + 1 for table in named.values() for label in table)])
    lines.append(f"{'':{wide}} {header}")
    overall = report.overall()
    lines.append(f"{'overall':{wide}} " + " ".join(f"{cell(n, overall[n]['mean']):>9}" for n in report.metrics))
    lines.append(
        f"{'  ± standard error':{wide}} " + " ".join(f"{cell(n, overall[n]['se']):>9}" for n in report.metrics)
    )
    for column, table in named.items():
        lines.append(f"\nby {column}:")
        for label, scores in table.items():
            lines.append(f"{label:{wide}} " + " ".join(f"{cell(n, scores[n]):>9}" for n in report.metrics))
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def _title(report: Report) -> str:
    """The table's first line: what was scored, against what, and how."""
    scored = len(report.scored())
    unscored = len(report.per_query) - scored
    against = f" against {report.ground_truth}" if report.ground_truth else ""
    return (
        f"{report.protocol} @ {report.k_label}: {scored} queries scored"
        + (f" ({unscored} more have no relevant image)" if unscored else "")
        + f", run {report.run}{against} "
        f"(macro average over queries; AP, nDCG x100; AP normaliser {report.normaliser}; tied scores: "
        f"{'averaged, as scikit-learn and INQUIRE' if report.ties == 'average' else 'in the run order'})"
    )


def _named_groups(report: Report, group_by: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{column: {a group's printed name (its query count beside it): its scores}}."""
    return {
        column: {
            ("mean of the groups" if value == "mean_of_groups" else value)
            + (f" ({scores['queries']})" if "queries" in scores else ""): scores
            for value, scores in table.items()
        }
        for column, table in report.groups(group_by).items()
    }
