"""How far annotators agree: per query, per annotator pair, per annotator and overall.

The figures (https://www.k-alpha.org and Cohen 1960 for their meaning):
- percent agreement: the share of agreeing pairs of votes on an item, averaged over the items;
- Cohen's kappa (scikit-learn's cohen_kappa_score): agreement between exactly two annotators beyond chance;
  null where a query has more or fewer than two;
- Krippendorff's alpha (the `krippendorff` package, nominal): agreement beyond chance for any number of
  annotators and missing votes; null where it is undefined (no item, or every vote the same value);
- a bootstrap interval (95%, items resampled) beside percent agreement and alpha;
- per annotator, agreement with the final label, on the items where the final rests on more than their own
  vote (another vote or an adjudication);
- optionally, crowd-kit's Dawid-Skene estimate of each annotator's accuracy.

Unsure is not a vote. An item counts when at least two annotators voted relevant or not relevant on it; an
unsure judgment is left out as missing (so an item judged relevant by one and unsure by another is no item).
"""

import itertools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotator.labels import sealed
from annotator.labels.tallies import change_marker
from annotator.methods.rerank import latest_prelabels
from annotator.models import Decision, Label, LabelValue, Query
from common.cached_figures import BackgroundFigure, id_set, ids_part

UNSURE_RULE = (
    "Unsure is not a vote: an item counts where at least two annotators voted relevant or not relevant; "
    "an unsure judgment is left out, as missing."
)
VOTES = (LabelValue.NOT_RELEVANT, LabelValue.RELEVANT)  # coded 0 and 1
RESAMPLES = 1000
# One seed for every bootstrap, and the items always in one order (votes_of sorts them): the same items give
# the same interval on the query's page, in `agreement --query N` and in its overall line (issue 37 found three).
SEED = 0

Item = Any  # an image id within a query, or (query id, image id) across queries
Votes = dict[Item, dict[str, str]]  # item -> {annotator: relevant | not_relevant}


def votes_of(rows: Iterable[tuple[Item, str, str]]) -> Votes:
    """The items with two votes or more, from (item, annotator, value) rows; unsure judgments left out."""
    votes: Votes = defaultdict(dict)
    for item, annotator, value in rows:
        if value in VOTES:
            votes[item][annotator] = value
    return {item: votes[item] for item in sorted(votes) if len(votes[item]) >= 2}


def percent_agreement(votes: Votes) -> float | None:
    shares = _pair_shares(votes)
    return float(shares.mean()) if len(shares) else None


def _pair_shares(votes: Votes) -> np.ndarray:
    """Per item, the share of its pairs of votes that agree."""
    shares = []
    for by in votes.values():
        pairs = list(itertools.combinations(by.values(), 2))
        shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return np.array(shares, dtype=float)


def cohen_kappa(votes: Votes) -> float | None:
    """Cohen's kappa where exactly two annotators voted on the items; None otherwise or where undefined."""
    annotators = sorted({name for by in votes.values() for name in by})
    if len(annotators) != 2 or not votes:
        return None
    first, second = annotators
    return kappa_score([by[first] for by in votes.values()], [by[second] for by in votes.values()])


def kappa_score(a: list[str], b: list[str]) -> float | None:
    """scikit-learn's Cohen's kappa of two lists of votes over VOTES; None where it is undefined. scikit-learn then
    warns and answers NaN: the same fact, said here as None, so commands print no warning lines."""
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = float(cohen_kappa_score(a, b, labels=list(VOTES)))
    return kappa if np.isfinite(kappa) else None


def _matrix(votes: Votes) -> np.ndarray:
    """The reliability data: one row per annotator, one column per item, 0 or 1 per vote, NaN where none."""
    annotators = sorted({name for by in votes.values() for name in by})
    data = np.full((len(annotators), len(votes)), np.nan)
    row = {name: index for index, name in enumerate(annotators)}
    for column, by in enumerate(votes.values()):
        for name, value in by.items():
            data[row[name], column] = VOTES.index(value)
    return data


def _alpha(data: np.ndarray) -> float | None:
    import krippendorff

    try:
        alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    except ValueError:  # one value in the whole domain: agreement beyond chance is undefined
        return None
    return alpha if np.isfinite(alpha) else None


def bootstrap(
    samples: int, statistic: Callable[[np.ndarray], float | None], *, resamples: int, seed: int = SEED
) -> list[float] | None:
    """The 95% percentile interval of `statistic` over `resamples` resamplings (with replacement) of the
    `samples` items, each given to it as an array of item positions; None with fewer than two items or
    when the statistic is undefined on most resamples."""
    if samples < 2 or resamples < 1:
        return None
    rng = np.random.default_rng(seed)
    found = [value for _ in range(resamples) if (value := statistic(rng.integers(0, samples, samples))) is not None]
    if len(found) < resamples / 2:
        return None
    low, high = np.percentile(found, [2.5, 97.5])
    return [float(low), float(high)]  # full precision: pages round, agreement.json does not


@dataclass
class Reliability:
    """The figures of one set of items."""

    items: int
    percent_agreement: float | None
    cohen_kappa: float | None
    krippendorff_alpha: float | None
    percent_agreement_interval: list[float] | None = None
    krippendorff_alpha_interval: list[float] | None = None

    def as_dict(self, *, kappa: bool = True) -> dict[str, Any]:
        found = {
            "items": self.items,
            "percent_agreement": _round(self.percent_agreement),
            "cohen_kappa": _round(self.cohen_kappa),
            "krippendorff_alpha": _round(self.krippendorff_alpha),
            "percent_agreement_interval": self.percent_agreement_interval,
            "krippendorff_alpha_interval": self.krippendorff_alpha_interval,
        }
        if not kappa:
            del found["cohen_kappa"]
        return found


def reliability(votes: Votes, *, resamples: int = RESAMPLES, seed: int = SEED) -> Reliability:
    """Every figure of `votes`, with bootstrap intervals over `resamples` resamplings of the items (0: none)."""
    shares, data = _pair_shares(votes), _matrix(votes)
    return Reliability(
        items=len(votes),
        percent_agreement=float(shares.mean()) if len(shares) else None,
        cohen_kappa=cohen_kappa(votes),
        krippendorff_alpha=_alpha(data) if votes else None,
        percent_agreement_interval=bootstrap(
            len(votes), lambda drawn: float(shares[drawn].mean()), resamples=resamples, seed=seed
        ),
        krippendorff_alpha_interval=bootstrap(
            len(votes), lambda drawn: _alpha(data[:, drawn]), resamples=resamples, seed=seed
        ),
    )


def pairs(votes: Votes) -> list[dict[str, Any]]:
    """For each pair of annotators who voted on the same items: the items, percent agreement and kappa."""
    shared: dict[tuple[str, str], Votes] = defaultdict(dict)
    for item, by in votes.items():
        for first, second in itertools.combinations(sorted(by), 2):
            shared[first, second][item] = {first: by[first], second: by[second]}
    return [
        {
            "annotators": [first, second],
            "items": len(common),
            "percent_agreement": _round(percent_agreement(common)),
            "cohen_kappa": _round(cohen_kappa(common)),
        }
        for (first, second), common in sorted(shared.items())
    ]


def with_final(rows: Iterable[tuple[Item, str, str]], finals: dict[Item, tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Per annotator: of their votes on items whose final label rests on more than their vote alone (two
    votes or more, or an adjudication) and is relevant or not relevant, the share equal to it."""
    rows = list(rows)
    voters: dict[Item, int] = defaultdict(int)
    for item, _, value in rows:
        voters[item] += value in VOTES
    agree: dict[str, list[bool]] = defaultdict(list)
    names = set()
    for item, annotator, value in rows:
        names.add(annotator)
        final, decided_by = finals.get(item, ("", ""))
        if value in VOTES and final in VOTES and (voters[item] >= 2 or decided_by == Decision.ADJUDICATED):
            agree[annotator].append(value == final)
    return {
        name: {"items": len(agree[name]), "agreement_with_final": _round(np.mean(agree[name]) if agree[name] else None)}
        for name in sorted(names)
    }


def dawid_skene(votes: Votes) -> dict[str, float | None] | None:
    """Each annotator's accuracy as crowd-kit's Dawid-Skene estimates it (the chance their vote equals the
    true label, weighted by the estimated class priors); None without items."""
    if not votes:
        return None
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    frame = pd.DataFrame(
        [(str(item), name, value) for item, by in votes.items() for name, value in by.items()],
        columns=["task", "worker", "label"],
    )
    model = DawidSkene(n_iter=100).fit(frame)
    priors: Any = model.priors_
    errors_by_worker: Any = model.errors_
    accuracy = {}
    for name in sorted(frame["worker"].unique()):
        # P(their vote | true label): rows their vote, columns the truth. crowd-kit leaves out the rows of values
        # this annotator never used (a probability of 0), so they are put back before reading the diagonal.
        errors = errors_by_worker.loc[name].reindex(index=priors.index, columns=priors.index, fill_value=0.0)
        accuracy[name] = _round(sum(priors[label] * errors.loc[label, label] for label in priors.index))
    return accuracy


def counted_votes(query_ids: Iterable[int] | None = None) -> list[tuple[Item, str, str]]:
    """[((query id, image id), annotator, value)]: the votes the figures count, of `query_ids` (default all): the
    blind votes (annotator.labels.sealed.counted_votes)."""
    where = {} if query_ids is None else {"query_id__in": list(query_ids)}
    counted = sealed.counted_votes("annotator__username", "value", **where)
    return [((query_id, image_id), name, value) for (query_id, image_id, _), (name, value) in counted.items()]


def report(
    query_ids: Iterable[int] | None = None,
    *,
    resamples: int = RESAMPLES,
    dawid_skene_accuracy: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The agreement figures of the database's judgments (of `query_ids`, default all) in the shape of
    `manage.py agreement --json`: overall, per query, per annotator, per pair, and how unsure counts.
    `progress(done, total)` is called after each query (a bar in the terminal)."""
    finals = Label.objects.exclude(value="")
    if query_ids is not None:
        query_ids = list(query_ids)
        finals = finals.filter(query_id__in=query_ids)
    rows = counted_votes(query_ids)
    by_query: dict[int, list[tuple[Item, str, str]]] = defaultdict(list)
    for row in rows:
        by_query[row[0][0]].append(row)
    everything = votes_of(rows)
    queries = {}
    for done, query_id in enumerate(sorted(by_query), start=1):
        figures = reliability(votes_of(by_query[query_id]), resamples=resamples)
        queries[str(query_id)] = figures.as_dict()
        if progress is not None:
            progress(done, len(by_query))
    final_values = {
        (query_id, image_id): (value, decided_by)
        for query_id, image_id, value, decided_by in finals.values_list("query_id", "image_id", "value", "decided_by")
    }
    annotators = with_final(rows, final_values)
    if dawid_skene_accuracy:
        for name, accuracy in (dawid_skene(everything) or {}).items():
            annotators[name]["dawid_skene_accuracy"] = accuracy
    return {
        "overall": reliability(everything, resamples=resamples).as_dict(kappa=False),
        "queries": queries,
        "annotators": annotators,
        "pairs": pairs(everything),
        "unsure": UNSURE_RULE,
    }


def judge_panel(query: Query) -> dict[str, Any]:
    """The judge panel's verdicts scored like a third annotator against the query's final labels that more
    than one person stands behind (double-labeled or adjudicated): the items, percent agreement and kappa.
    Abstentions and unsure or undecided finals are left out."""

    trusted = dict(
        Label.objects.filter(
            query=query,
            decided_by__in=[Decision.AGREED, Decision.MAJORITY, Decision.ADJUDICATED],
            value__in=VOTES,
        ).values_list("image_id", "value")
    )
    verdicts = {"accept": LabelValue.RELEVANT, "reject": LabelValue.NOT_RELEVANT}
    votes = {
        image_id: {"panel": verdicts[prelabel.value], "final": trusted[image_id]}
        for image_id, prelabel in latest_prelabels(query).items()
        if image_id in trusted and prelabel.value in verdicts
    }
    return {
        "items": len(votes),
        "percent_agreement": _round(percent_agreement(votes)),
        "cohen_kappa": _round(cohen_kappa(votes)),
    }


def _round(value: Any) -> float | None:
    """A figure as JSON carries it: a float at full precision (so agreement.json equals the reference
    libraries), or None where undefined. Pages and the table round for reading."""
    return None if value is None else float(value)


# agreement.json and the agreement page: computed in the background (annotator/tasks.py: agreement_report), cached
# by the labels' change marker, never in a request (1,000 bootstrap resamples a query for agreement.json).
REPORT = BackgroundFigure("agreement-report", "annotator.agreement_report")


def cached_report(query_ids: Iterable[int] | None, *, resamples: int = RESAMPLES) -> dict[str, Any] | None:
    """`report` of `query_ids` (None: every query) as cached, or None with its job sent (the page asks again)."""
    ids = id_set(query_ids)
    have, found = REPORT.cached(_report_parts(ids, resamples), ids, resamples)
    return found if have else None


def refresh_report(query_ids: Iterable[int] | None, resamples: int) -> None:
    """Compute and cache `report` (the background half of cached_report), under the marker read before."""
    ids = id_set(query_ids)
    parts = _report_parts(ids, resamples)
    REPORT.store(parts, report(ids, resamples=resamples))


def _report_parts(ids: tuple[int, ...] | None, resamples: int) -> tuple[object, ...]:
    return ids_part(ids), change_marker(ids), resamples
