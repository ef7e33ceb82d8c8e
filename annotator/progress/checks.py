"""Completeness checks: draw a random sample of a query's frame, follow its labeling, state the claim.

A check is drawn over a frame (annotator.progress.frames) frozen at the draw: its positives (`found`: final label
relevant) and the rest, of which a simple random sample is drawn. The rest holds the images nobody has judged and
those judged not relevant (or unsure, or undecided): a positive the review judged not relevant by mistake is as
missing as one nobody has seen, and a claim that left them out would hold only for a team that never errs (on the
simulator, 171 of 189 certified claims held with annotators wrong 5% of the time: 90%, under the 95% promised).
A sampled image someone judged already gets a second, blind judgment. The sample's size is the least that
certifies the target if it meets no positive (certify.check_size); annotators label it in the normal grid (the
"completeness check" ranking) and through the API (candidates, strategy=check).

So that one mistaken click neither certifies nor blocks a query, every positive the claim counts gets a second,
blind judgment first: the frame's positives at the draw join the query's overlap sample, as do the sampled images
judged before, and so does every other sampled image the moment someone judges it relevant or unsure
(annotator.labels.writes does it in the same transaction).
Where the two judgments disagree, the final label waits for an adjudicator. The check is decided when every
sampled image is judged and nothing waits; then certify.claim states recall >= target with its confidence, or not.

Checking again after a failed check is a second look at the same question, and looks add up: the k-th check of a
query is tested at alpha / 2^k, so however many checks a query takes, the chance that a certified claim is wrong
stays under alpha (1/2 + 1/4 + ... < 1; the Bonferroni argument spent over an unbounded sequence of tests).
"""

import math
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from annotator.labels.sealed import Writer
from annotator.models import (
    UNDECIDED,
    CheckImage,
    CompletenessCheck,
    Judgment,
    Label,
    LabelValue,
    OverlapImage,
    Query,
)
from annotator.progress import certify
from annotator.progress.frames import MAX_DEPTH, FrameSpec, frame_image_ids, pack, read_frame, unpack
from annotator.progress.frames import BadCheck as BadCheck  # the checks' refusal, for their callers

METHOD = "hypergeometric test (Callaghan and Müller-Hansen 2020) on a simple random sample of the frame's non-positives"
# The values that count as a positive in the sample: unsure counts, so that doubt never helps a claim.
SAMPLE_POSITIVE = (LabelValue.RELEVANT, LabelValue.UNSURE)
TRUE = ("true", "1", "yes", "on")


@dataclass(frozen=True)
class CheckRequest:
    target: float
    confidence: float
    frame: FrameSpec
    second_judgments: bool = True


def _share(data: dict[str, Any], name: str, default: float) -> float:
    value = data.get(name, default)
    if isinstance(value, str):
        with suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and 0 < value < 1):
        raise BadCheck(f'"{name}" must be a number between 0 and 1, both excluded (0.9 is 90%), not {value!r:.40}.')
    return float(value)


def read_request(data: Any) -> CheckRequest:
    """The check a request asks for: {"target_recall": 0.9, "confidence": 0.95, "frame": {...},
    "second_judgments": true}; BadCheck saying what to fix."""
    if not isinstance(data, dict):
        raise BadCheck(
            'Send a JSON object such as {"target_recall": 0.9, "confidence": 0.95, '
            '"frame": {"kind": "top", "depth": 5000}}.'
        )
    second = data.get("second_judgments", True)
    if isinstance(second, str):
        second = second.lower() in TRUE
    if not isinstance(second, bool):
        raise BadCheck('"second_judgments" must be true or false.')
    return CheckRequest(
        target=_share(data, "target_recall", 0.9),
        confidence=_share(data, "confidence", 0.95),
        frame=read_frame(data.get("frame", {"kind": "top", "depth": 5000})),
        second_judgments=second,
    )


def read_form(form: Any) -> CheckRequest:
    """read_request for the side pane's form (a QueryDict: strings, taxa comma-separated, an unchecked box absent)."""
    depth: Any = form.get("depth", "").strip()
    if depth.isdigit():
        depth = int(depth)
    kind = form.get("kind", "")
    frame: dict[str, Any] = {"kind": kind, "depth": depth}
    if kind == CompletenessCheck.Frame.TAXA:
        frame["taxa"] = [name.strip() for name in form.get("taxa", "").split(",") if name.strip()]
    return read_request(
        {
            "target_recall": form.get("target_recall", ""),
            "confidence": form.get("confidence", ""),
            "frame": frame,
            "second_judgments": "second_judgments" in form,
        }
    )


DEFAULT_DEPTH = 5000  # the side pane's `top` frame: INQUIRE's annotators rarely went deeper


def form_choices(query: Query, page_taxa: str) -> dict[str, Any]:
    """What the side pane's check form shows (staff only): the choices, and the open check if there is one."""
    return {
        "open_check": open_check(query),
        "targets": ("0.8", "0.9", "0.95"),
        "confidences": ("0.9", "0.95", "0.99"),
        "frame_kinds": [(kind, dict(CompletenessCheck.Frame.choices)[kind]) for kind in ("top", "taxa", "collection")],
        "default_depth": DEFAULT_DEPTH,
        "max_depth": MAX_DEPTH,
        "page_taxa": page_taxa,
    }


def tested_at(confidence: float, ordinal: int) -> float:
    """The confidence the `ordinal`-th check of a query is tested at: alpha halves with each check (module doc)."""
    return 1.0 - (1.0 - confidence) / float(2**ordinal)


@dataclass(frozen=True)
class Situation:
    """A query's frame now: its ids, those someone judged, its positives (final label relevant), and what the
    next check would cost."""

    frame: npt.NDArray[np.int64]
    judged: npt.NDArray[np.int64]
    positives: npt.NDArray[np.int64]
    population: npt.NDArray[np.int64]  # what the sample is drawn from
    ordinal: int
    tested_at: float
    sample: int  # images the check labels if it meets no positive
    confirmations: int  # the frame's positives that still want a second judgment
    rejudged: int  # about how many sampled images were judged already (each gets a second, blind judgment)

    @property
    def found(self) -> int:
        return len(self.positives)

    @property
    def unlabeled(self) -> int:
        return len(self.frame) - len(self.judged)

    def as_json(self) -> dict[str, Any]:
        return {
            "frame_size": len(self.frame), "judged": len(self.judged), "found": self.found,
            "unlabeled": self.unlabeled, "sampled_from": len(self.population), "check": self.ordinal,
            "tested_at": self.tested_at, "sample": self.sample, "second_judgments": self.confirmations,
            "rejudged": self.rejudged,
        }  # fmt: skip


def situation(query: Query, request: CheckRequest) -> Situation:
    """What drawing `request` now would freeze and cost; BadCheck for a query with no labels or an empty frame."""
    if not Judgment.objects.filter(query=query).exists():
        raise BadCheck(
            f"Query {query.pk} has no labels yet: label down its ranking first; "
            "a check tells when to stop, not where to start."
        )
    frame = frame_image_ids(query, request.frame)
    if not len(frame):
        raise BadCheck("The frame holds no image: choose a deeper ranking, other taxa, or the collection.")
    judged = _in_frame(frame, Judgment.objects.filter(query=query).values_list("image_id", flat=True).distinct())
    positives = _in_frame(frame, _final_ids(query, [LabelValue.RELEVANT]))
    ordinal = query.completeness_checks.count() + 1
    confidence = tested_at(request.confidence, ordinal)
    # Trusting single judgments, the judged images are settled; else only the positives are (once confirmed).
    population = np.setdiff1d(frame, judged if not request.second_judgments else positives, assume_unique=True)
    sample = certify.check_size(len(positives), len(population), request.target, confidence)
    already = len(judged) - len(positives) if request.second_judgments else 0
    return Situation(
        frame=frame,
        judged=judged,
        positives=positives,
        population=population,
        ordinal=ordinal,
        tested_at=confidence,
        sample=sample,
        confirmations=len(_unconfirmed(query, positives)) if request.second_judgments else 0,
        rejudged=round(sample * already / len(population)) if len(population) else 0,
    )


def _in_frame(frame: npt.NDArray[np.int64], ids: Any) -> npt.NDArray[np.int64]:
    found = np.fromiter(ids, dtype=np.int64)
    return np.unique(found[np.isin(found, frame)])


def _final_ids(query: Query, values: Any) -> list[int]:
    return list(Label.objects.filter(query=query, value__in=list(values)).values_list("image_id", flat=True))


def _unconfirmed(query: Query, image_ids: Any) -> list[int]:
    """Those of `image_ids` with fewer judgments than the query wants."""
    ids = [int(image_id) for image_id in image_ids]
    counts = dict(
        Judgment.objects.filter(query=query, image_id__in=ids)
        .values("image_id")
        .annotate(n=Count("id"))
        .values_list("image_id", "n")
    )
    return [image_id for image_id in ids if counts.get(image_id, 0) < query.judgments_wanted]


def open_check(query: Query) -> CompletenessCheck | None:
    return query.completeness_checks.filter(status=CompletenessCheck.Status.CHECKING).first()


def latest(query: Query) -> CompletenessCheck | None:
    return query.completeness_checks.order_by("-ordinal").first()


def latest_of(query_ids: list[int]) -> dict[int, CompletenessCheck]:
    """{query id: its latest check} for the queries that have one, in one read (the dashboard, the query list)."""
    latest: dict[int, CompletenessCheck] = {}
    rows = CompletenessCheck.objects.filter(query_id__in=query_ids).defer("frame_ids", "found_ids")
    for check in rows.order_by("query_id", "-ordinal"):
        latest.setdefault(check.query_id, check)
    return latest


def draw(query: Query, request: CheckRequest, user: Writer) -> tuple[CompletenessCheck, bool]:
    """Draw a check of `query` as `request` asks, or answer its open one: (check, drawn). The frame, the images
    judged in it and the sample are frozen in the check; the frame's positives that have one judgment join the
    overlap sample for their second. BadCheck (nothing drawn) for a query with no labels or an empty frame."""
    if (current := open_check(query)) is not None:
        return current, False
    found = situation(query, request)  # the rankings are read outside the transaction: seconds on a large frame
    # Fresh entropy, not a seed an annotator could replay: the sample must be as random to them as to the test.
    sample = np.random.default_rng().permutation(found.population)[: found.sample]
    try:
        with transaction.atomic():
            Query.objects.select_for_update().filter(pk=query.pk).get()  # two admins drawing at once: one check
            if (current := open_check(query)) is not None:
                return current, False
            check = CompletenessCheck.objects.create(
                query=query, ordinal=query.completeness_checks.count() + 1, frame_kind=request.frame.kind,
                frame_depth=request.frame.depth, frame_taxa=list(request.frame.taxa), frame_size=len(found.frame),
                frame_ids=pack(found.frame), found_ids=pack(found.positives), sampled_from=len(found.population),
                found_at_draw=found.found, target_recall=request.target, confidence=request.confidence,
                tested_at=found.tested_at, second_judgments=request.second_judgments, drawn_by=user,
            )  # fmt: skip
            CheckImage.objects.bulk_create(
                CheckImage(completeness_check=check, image_id=int(image_id), position=n)
                for n, image_id in enumerate(sample)
            )
            if request.second_judgments:  # the positives, and the sampled images judged already: one more judgment
                rejudged = np.intersect1d(sample, found.judged)
                unconfirmed = _unconfirmed(query, np.concatenate([found.positives, rejudged]))
                OverlapImage.objects.bulk_create(
                    [OverlapImage(query=query, image_id=image_id) for image_id in unconfirmed], ignore_conflicts=True
                )
    except IntegrityError:  # another draw committed first (the one-open-check constraint)
        current = open_check(query)
        if current is None:
            raise
        return current, False
    refresh(check)  # a sample of 0 (the frame is all labeled, or too small to hide the target) decides at once
    return check, True


@dataclass(frozen=True)
class Progress:
    size: int
    labeled: int  # sampled images judged, and not waiting for their second judgment
    positives: int  # sampled images whose final label is relevant or unsure
    second: list[int]  # images (sampled, or the frame's positives) waiting for a second blind judgment
    adjudication: list[int]  # images whose judgments disagree, waiting for an adjudicator
    unjudged: list[int]  # sampled images nobody has judged, in the sample's order

    @property
    def pending(self) -> int:
        return len(self.second) + len(self.adjudication)

    @property
    def complete(self) -> bool:
        return not self.unjudged and not self.pending


def progress(check: CompletenessCheck) -> Progress:
    """How far `check`'s labeling has come (read from the judgments and final labels now)."""
    query = check.query
    sample = list(check.images.values_list("image_id", flat=True))
    watched = set(sample)
    if check.second_judgments:  # the frame's positives counted by the claim, confirmed by a second judgment
        found = unpack(check.found_ids)
        watched.update(_in_frame(found, _final_ids(query, [LabelValue.RELEVANT, UNDECIDED])).tolist())
    counts = dict(
        Judgment.objects.filter(query=query, image_id__in=list(watched))
        .values("image_id")
        .annotate(n=Count("id"))
        .values_list("image_id", "n")
    )
    finals = dict(Label.objects.filter(query=query, image_id__in=list(watched)).values_list("image_id", "value"))
    in_overlap = OverlapImage.objects.filter(query=query, image_id__in=list(watched))
    overlap = set(in_overlap.values_list("image_id", flat=True))
    wanted = query.judgments_wanted
    second = [i for i in watched if counts.get(i, 0) and i in overlap and counts[i] < wanted and check.second_judgments]
    waiting = set(second)
    return Progress(
        size=len(sample),
        labeled=sum(1 for image_id in sample if counts.get(image_id, 0) and image_id not in waiting),
        positives=sum(1 for image_id in sample if finals.get(image_id) in SAMPLE_POSITIVE),
        second=sorted(second),
        adjudication=sorted(i for i in watched if finals.get(i) == UNDECIDED and i not in second),
        unjudged=[image_id for image_id in sample if not counts.get(image_id, 0)],
    )


def refresh(check: CompletenessCheck) -> Progress:
    """`check`'s progress, and its decision stored once it is complete (the claim is then fixed)."""
    now = progress(check)
    if check.status == CompletenessCheck.Status.CHECKING and now.complete:
        _decide(check, now)
    return now


def _decide(check: CompletenessCheck, now: Progress) -> None:
    found = len(_in_frame(unpack(check.found_ids), _final_ids(check.query, [LabelValue.RELEVANT])))
    claim = certify.claim(found, check.sampled_from, now.size, now.positives, check.target_recall, check.tested_at)
    with transaction.atomic():
        if not CompletenessCheck.objects.select_for_update().filter(pk=check.pk, status="checking").exists():
            check.refresh_from_db()  # another request decided it first
            return
        check.status = CompletenessCheck.Status.CERTIFIED if claim.certified else CompletenessCheck.Status.NOT_CERTIFIED
        check.found, check.positives = found, now.positives
        check.recall_lower_bound, check.p_value = claim.recall_lower_bound, claim.p_value
        check.missing_point, check.missing_low, check.missing_high = claim.missing
        check.decided_at = timezone.now()
        check.save()


def candidates(query: Query, viewer: Writer, k: int) -> list[int]:
    """The images of `query`'s open check that `viewer` has not judged: first those waiting for a second blind
    judgment (they hold the claim up), then the sample's unjudged images in their random order."""
    check = open_check(query)
    if check is None:
        return []
    now = refresh(check)
    mine = Judgment.objects.filter(query=query, image_id__in=[*now.second, *now.unjudged])
    mine = mine.filter(annotator=viewer) if viewer is not None else mine.filter(annotator__isnull=True)
    judged = set(mine.values_list("image_id", flat=True))
    return [image_id for image_id in [*now.second, *now.unjudged] if image_id not in judged][:k]


# What a claim says that is read off every judgment of the frame, the sealed ones of an overlap sample too.
WITHHELD_FIELDS = ("found", "recall_lower_bound", "p_value", "estimated_positives")


def report(query: Query, *, withheld: str = "") -> dict[str, Any]:
    """The query's completeness as the API, the command and the export give it (one record). `withheld`: why the
    viewer may not read what the judgments of images they judge blind would tell (annotator.labels.visibility);
    those figures are then None, and the record says why."""
    shown = _report(query)
    if withheld and shown["sample"]:
        shown |= {name: None for name in WITHHELD_FIELDS}
        shown["sample"] = {**shown["sample"], "positives": None}
        shown["withheld"] = withheld
    return shown


NO_CHECK = "No check yet: when the query looks done, staff draw a random check of its frame (side pane or API)."


def reports(query_ids: Any = None) -> list[dict[str, Any]]:
    """report() of every query (or of `query_ids`), by id: what completeness.json holds."""
    queries = Query.objects.order_by("pk")
    if query_ids is not None:
        queries = queries.filter(pk__in=list(query_ids))
    return [report(query) for query in queries]


def _report(query: Query) -> dict[str, Any]:
    check = latest(query)
    if check is None:
        return {
            "query_id": query.pk, "status": "no_check", "frame": None, "target_recall": None, "confidence": None,
            "method": METHOD, "sample": None, "recall_lower_bound": None, "estimated_positives": None,
            "next": NO_CHECK,
        }  # fmt: skip
    now = refresh(check)
    decided = check.status != CompletenessCheck.Status.CHECKING
    return {
        "query_id": query.pk,
        "status": check.status,
        "check": check.ordinal,
        "frame": {
            "kind": check.frame_kind,
            "depth": check.frame_depth,
            "size": check.frame_size,
            **({"taxa": check.frame_taxa} if check.frame_kind == CompletenessCheck.Frame.TAXA else {}),
        },  # fmt: skip
        "target_recall": check.target_recall,
        "confidence": check.confidence,
        "tested_at": check.tested_at,
        "method": METHOD,
        "second_judgments": check.second_judgments,
        "sample": {"size": now.size, "labeled": now.labeled, "positives": now.positives, "pending": now.pending},
        "found": check.found if decided else check.found_at_draw,
        "sampled_from": check.sampled_from,
        "recall_lower_bound": check.recall_lower_bound if decided else None,
        "p_value": check.p_value if decided else None,
        "estimated_positives": _estimated(check) if decided else None,
        "drawn_at": check.created_at.isoformat(),
        "decided_at": check.decided_at.isoformat() if check.decided_at else None,
        "next": next_step(check, now),
    }


def _estimated(check: CompletenessCheck) -> dict[str, float]:
    """The positives of the frame: those labeled (found + met in the sample) and the missing ones' interval."""
    labeled = (check.found or 0) + (check.positives or 0)
    return {
        "point": round(labeled + (check.missing_point or 0.0), 1),
        "low": labeled + (check.missing_low or 0),
        "high": labeled + (check.missing_high or 0),
    }


def next_step(check: CompletenessCheck, now: Progress) -> str:
    """One sentence: what the team does next."""
    percent, sure = f"{check.target_recall:.0%}", f"{check.confidence:.0%}"
    if check.status == CompletenessCheck.Status.CERTIFIED:
        return (
            f"Done: recall is at least {percent} with {sure} confidence over this frame; "
            "check again after large changes."
        )
    if check.status == CompletenessCheck.Status.NOT_CERTIFIED:
        return (
            f"Not yet: the check found {check.positives} positive{'' if check.positives == 1 else 's'} "
            f"(they are labeled); keep labeling and check again."
        )
    waits = []
    if now.unjudged:
        waits.append(f"label the check's {len(now.unjudged)} images left (ranking \u201ccompleteness check\u201d)")
    if now.second:
        waits.append(f"{_count(len(now.second), 'positive')} for a second annotator's blind judgment")
    if now.adjudication:
        waits.append(f"{_count(len(now.adjudication), 'disagreement')} for an adjudicator")
    return "Checking: " + "; ".join(waits) + "."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s wait' if n != 1 else ' waits'}"
