"""What a completeness claim says, wherever a user looks: the API, the side pane, the dashboard, the command and
completeness.json all read report(); the side pane's form reads form_choices()."""

from typing import Any

from annotator.completeness import benchmark, checks, looks
from annotator.completeness.advice import advice
from annotator.completeness.check_requests import CONFIDENCES, DEFAULT_DEPTH, TARGETS
from annotator.completeness.checks import current, latest, open_check
from annotator.completeness.frames import MAX_DEPTH
from annotator.completeness.sample_progress import Progress, withheld_figures
from annotator.models import CompletenessCheck, Query


def method(looks: int = 1) -> str:
    """The test in words: checks drawn since issue 62 give each sampled image `looks` fresh looks (after the draw,
    from someone who had not judged it); those drawn before (looks 0) counted the review's judgment as a look."""
    how = (
        "each looked at twice, blind (the review's judgment one of the looks)"
        if looks == 0
        else f"each looked at {'once' if looks == 1 else f'{looks} times'} after the draw by someone who had not "
        "judged it"
    )
    return (
        "hypergeometric test (Callaghan and Müller-Hansen 2020) on a simple random sample of the frame's images that "
        f"are not confirmed positives, {how}, and adjudicated where a look says relevant; thinned by a bound on the "
        "share of sampled positives the looks lose"
    )


OUTSIDE = "positives outside the frame: not bounded"


def form_choices(query: Query, page_taxa: str) -> dict[str, Any]:
    """What the side pane's check form shows (staff only): the choices, and the open check if there is one."""
    return {
        "open_check": open_check(query),
        "targets": tuple(str(target) for target in TARGETS),
        "confidences": tuple(str(confidence) for confidence in CONFIDENCES),
        "frame_kinds": [
            ("", "the query's frame (frozen at its first check)"),
            *[(kind, CompletenessCheck.Frame(kind).label) for kind in ("top", "taxa", "collection")],
        ],
        "default_depth": DEFAULT_DEPTH,
        "max_depth": MAX_DEPTH,
        "page_taxa": page_taxa,
    }


# What a claim says that is read off every judgment of the frame, the sealed ones of an overlap sample too.
WITHHELD_FIELDS = ("found", "recall_lower_bound", "p_value", "estimated_positives", "decided_early")


def report(query: Query, *, withheld: str = "", aim: str = "query") -> dict[str, Any]:
    """The query's completeness as the API, the command and the export give it (one record). `withheld`: why the
    viewer may not read what the judgments of images they judge blind would tell (annotator.labels.visibility);
    those figures are then None, and the record says why. `aim`: the claim the advice aims at (query, benchmark)."""
    if withheld:  # not even how many looks were given: it would tell who has judged what the viewer judges blind
        shown = {**_report(query), "advice": {"next": "label", "reason": withheld}}
        if shown["sample"]:
            shown |= {name: None for name in WITHHELD_FIELDS}
            shown["sample"] = withheld_figures(shown["sample"]["size"])
            shown["next"] = BLIND_NEXT if shown["status"] == "checking" else shown["next"]
        shown["withheld"] = withheld
        return shown
    return {**_report(query), "advice": advice(query, aim)}


BLIND_NEXT = "Checking: label the check's images you have not judged (ranking “completeness check”)."


NO_CHECK = "No check yet: when the query looks done, staff draw a random check of its frame (side pane or API)."


def sampled_by(query: Query) -> int | None:
    """The number of the open benchmark check that samples `query`'s frame, or None."""
    pooled = checks.open_check()
    return pooled.ordinal if pooled is not None and pooled.strata.filter(query=query).exists() else None


def _no_check_of_its_own(pooled: int | None) -> str:
    """The next step of a query without a check: a benchmark check that samples it says so (the box read "no check
    yet" while its pairs were being looked at)."""
    if pooled is not None:
        return (
            f"No check of its own yet; the open benchmark check {pooled} samples this query's frame: label "
            "its pairs (ranking “completeness check”)."
        )
    return NO_CHECK


def reports(query_ids: Any = None) -> list[dict[str, Any]]:
    """report() of every query (or of `query_ids`), by id."""
    queries = Query.objects.order_by("pk")
    if query_ids is not None:
        queries = queries.filter(pk__in=list(query_ids))
    return [report(query) for query in queries]


def completeness_file(query_ids: Any = None) -> dict[str, Any]:
    """What completeness.json holds: both kinds of claim, each query's and the benchmark's (the latest benchmark
    check, or None)."""
    pooled = checks.latest()
    return {"queries": reports(query_ids), "benchmark": None if pooled is None else benchmark.report(pooled)}


def query_claims(data: Any) -> list[dict[str, Any]]:
    """The per-query claims of a completeness.json, as written now ({"queries": [...]}) or by a release made
    before the benchmark claim (a list)."""
    return data if isinstance(data, list) else list(data.get("queries") or [])


def _report(query: Query) -> dict[str, Any]:
    check = latest(query)
    if check is None:
        pooled = sampled_by(query)
        return {
            "query_id": query.pk, "status": "no_check", "frame": None, "target_recall": None, "confidence": None,
            "method": method(), "sample": None, "recall_lower_bound": None, "estimated_positives": None,
            "claim": None, "outside_frame": OUTSIDE, "next": _no_check_of_its_own(pooled), "benchmark_check": pooled,
        }  # fmt: skip
    now = current(check)
    decided = check.status != CompletenessCheck.Status.CHECKING
    frame = check.stratum
    return {
        **checks.report(check, [now]),
        "query_id": query.pk,
        "frame": {
            "kind": frame.frame_kind,
            "depth": frame.frame_depth,
            "size": frame.frame_size,
            **({"taxa": frame.frame_taxa} if frame.frame_kind == CompletenessCheck.Frame.TAXA else {}),
            "definition": frame_words(check),
        },  # fmt: skip
        "method": method(check.looks),
        "second_judgments": check.second_judgments,
        "found": check.found if decided else check.found_at_draw,
        "p_value": check.p_value if decided else None,
        # Not for a check decided early: it stopped at a positive, so its interval's low end would be too high.
        "estimated_positives": _estimated(check) if decided and not checks.decided_early(check, now.size) else None,
        "looks_per_image": check.looks or 2,
        "claim": claim_words(check) if decided else None,
        "outside_frame": OUTSIDE,
        "next": next_step(check, now),
    }


def _estimated(check: CompletenessCheck) -> dict[str, float]:
    """The positives of the frame: those labeled (found + met in the sample) and the missing ones' interval, at the
    confidence the check was tested at (named in the record, so that no figure stands at an unstated level)."""
    labeled = (check.found or 0) + (check.positives or 0)
    return {
        "point": round(labeled + (check.missing_point or 0.0), 1),
        "low": labeled + (check.missing_low or 0),
        "high": labeled + (check.missing_high or 0),
        "confidence": check.tested_at,
    }


def frame_words(check: CompletenessCheck) -> str:
    """What the frame is, in the words every claim uses."""
    frame = check.stratum
    size = f"{frame.frame_size:,} images"
    if frame.frame_kind == CompletenessCheck.Frame.TOP:
        what = f"the top {frame.frame_depth:,} of the text and learned rankings, together"
    elif frame.frame_kind == CompletenessCheck.Frame.REVIEWED:
        what = f"the images judged and the top {frame.frame_depth:,} of the text and learned rankings, together"
    elif frame.frame_kind == CompletenessCheck.Frame.TAXA:
        what = "the images of " + ", ".join(str(taxon) for taxon in frame.frame_taxa)
    else:
        what = "the whole collection"
    return f"{what} ({size}), frozen {check.created_at:%Y-%m-%d}"


# With second judgments off only the unjudged images are sampled: a positive the review judged not relevant is
# settled as it was, so the claim says the review's misses are outside it (issue 62).
SINGLE = (
    "single judgments trusted: only images nobody had judged were sampled, so positives the review judged not "
    "relevant are not bounded"
)


def claim_words(check: CompletenessCheck) -> str:
    """One sentence saying exactly what a decided check claims: over which images, at which confidence, with which
    assumption; the same words in the API, the side pane, the dashboard and completeness.json."""
    percent, sure = f"{check.target_recall:.0%}", f"{check.confidence:.0%}"
    scope = (
        f"over the frame ({frame_words(check)}), check {check.ordinal} of the query tested at "
        f"{check.tested_at:.2%}, {looks.assumption_words(check.looks, check.per_look_miss_rate, check.miss_rate)}; "
        f"{'' if check.second_judgments else SINGLE + '; '}{OUTSIDE}"
    )
    if check.status == CompletenessCheck.Status.CERTIFIED:
        return f"Recall is at least {percent} with {sure} confidence {scope}."
    return f"Not certified: recall at least {percent} with {sure} confidence could not be claimed {scope}."


def next_step(check: CompletenessCheck, now: Progress) -> str:
    """One sentence: what the team does next."""
    percent, sure = f"{check.target_recall:.0%}", f"{check.confidence:.0%}"
    if check.status == CompletenessCheck.Status.CERTIFIED:
        return (
            f"Done: recall is at least {percent} with {sure} confidence over this frame; "
            "check again after large changes."
        )
    if check.status == CompletenessCheck.Status.NOT_CERTIFIED:
        met = check.positives or 0
        if checks.decided_early(check, now.size):
            return f"Not yet: the check was {checks.early_words(check, now.size)}; keep labeling and check again."
        return (
            f"Not yet: the check's sample held {met} positive{'' if met == 1 else 's'} the review had not "
            f"confirmed; keep labeling and check again."
        )
    waits = []
    if now.unjudged:
        waits.append(f"label the check's {len(now.unjudged)} images left (ranking \u201ccompleteness check\u201d)")
    if now.second:
        waits.append(f"{_count(len(now.second), 'image')} for a second annotator's blind judgment")
    if now.adjudication:
        waits.append(f"{_count(len(now.adjudication), 'image')} for an adjudicator")
    return "Checking: " + "; ".join(waits) + "."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s wait' if n != 1 else ' waits'}"
