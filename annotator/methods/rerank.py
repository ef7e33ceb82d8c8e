"""Two-stage reranking (INQUIRE's setting): the CLIP top N of a query, scored by a vision-language
model's P(yes), best first. Scores are stored per (query, image, method, model); the model's answers
are cached by lmm/ so a second rerank of the same images asks nothing.
"""

import datetime
import io
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone
from PIL import Image as PILImage

from annotator.methods.registry import MODEL_METHODS, RERANK_METHODS
from annotator.models import GeneratedImage, PreLabel, Query, RerankJob, RerankScore
from catalog.facade import NotServable, original_file
from catalog.models import Image
from common import background
from lmm.facade import (
    ImageInput,
    ModelUnavailable,
    Progress,
    Scorer,
    configured_image_generator,
    configured_panel,
    configured_scorer,
    configured_text_model,
    panel,
    score_images,
    structured,
    visret,
)
from search.facade import SearchUnavailable, configured_spec, embed_image, fuse_rankings, rank, search

DEFAULT_TOP = 100  # INQUIRE-Rerank: 100 candidates per query

log = logging.getLogger(__name__)


@dataclass
class Reranked:
    ranking: list[tuple[int, float]]  # (image id, score), best first
    asked: int
    cached: int
    skipped: list[int] = field(default_factory=list)  # candidates whose file could not be read
    prompt_tokens: int = 0  # what the model server billed for this run (cached answers cost nothing)
    completion_tokens: int = 0


def candidates(query: Query, top: int) -> tuple[dict[int, ImageInput], dict[int, int], list[int]]:
    """The CLIP top `top` of `query`: ({image id: ImageInput}, {image id: CLIP rank}, unreadable ids)."""
    hits = search(text=query.text, k=top)
    clip_rank = {hit.image_id: rank for rank, hit in enumerate(hits, start=1)}
    images: dict[int, ImageInput] = {}
    skipped: list[int] = []
    for image in Image.objects.in_bulk(list(clip_rank)).values():
        try:
            path, content_type = original_file(image)
            images[image.pk] = ImageInput(path.read_bytes(), content_type)
        except (NotServable, OSError) as error:
            log.warning("query %s: image %s skipped: %s", query.pk, image.pk, error)
            skipped.append(image.pk)
    return images, clip_rank, sorted(skipped)


def rerank(
    query: Query,
    *,
    top: int = DEFAULT_TOP,
    method: str = "yesno",
    scorer: Scorer | None = None,
    progress: Progress | None = None,
) -> Reranked:
    """Rerank the CLIP top `top` of `query` with `method`. Raises SearchUnavailable (no index) or
    ModelUnavailable (no model, or it failed: the answers given so far stay cached)."""
    if method not in RERANK_METHODS:
        raise ValueError(f"method is one of {', '.join(RERANK_METHODS)}, not {method!r}")
    scorer = scorer or configured_scorer()
    images, clip_rank, skipped = candidates(query, top)
    if method == "structured":
        found, asked, cached = structured.score_structured(scorer, query.text, plan_for(query), images, progress)
        scores = {key: (answer.score, [list(pair) for pair in answer.answers]) for key, answer in found.items()}
    else:
        scored = score_images(scorer, query.text, images, progress=progress)
        scores = {key: (answer.score, []) for key, answer in scored.answers.items()}
        asked, cached = scored.asked, scored.cached
    RerankScore.objects.bulk_create(
        [
            RerankScore(
                query=query, image_id=image_id, method=method, model=scorer.name, score=score, detail=detail,
                clip_rank=clip_rank[image_id],
            )
            for image_id, (score, detail) in scores.items()
        ],
        update_conflicts=True,
        unique_fields=["query", "image", "method", "model"],
        update_fields=["score", "detail", "clip_rank", "created_at"],
    )  # fmt: skip
    ranking = sorted(scores.items(), key=lambda pair: (-pair[1][0], clip_rank[pair[0]]))
    return Reranked(
        [(image_id, score) for image_id, (score, _) in ranking],
        asked,
        cached,
        skipped,
        scorer.usage.prompt_tokens,
        scorer.usage.completion_tokens,
    )


def plan_for(query: Query) -> structured.Plan:
    """The query's structured-rerank plan: as staff left it, else written now by the text model (and
    kept on the query, where staff can edit it before the next run). Raises ModelUnavailable."""
    questions = [q.strip() for q in query.subquestions or [] if isinstance(q, str) and q.strip()]
    if questions and query.context.strip():
        return structured.Plan(query.context.strip(), questions[: structured.MAX_QUESTIONS])
    plan = structured.write_plan(configured_text_model(), query.text, query.context)
    if questions:
        plan = structured.Plan(plan.context, questions[: structured.MAX_QUESTIONS])
    Query.objects.filter(pk=query.pk).update(context=plan.context, subquestions=plan.questions)
    return plan


# --- as a job: started from the labeling page, run by a worker on the `models` queue -----------------


def start_job(query: Query, *, user: User | None = None, top: int = DEFAULT_TOP, method: str = "yesno") -> RerankJob:
    """Queue a rerank of `query`, or with method "visret" the drawing of it (a Celery task on the `models`
    queue, so that only a machine with the model's worker runs it). Raises ModelUnavailable when no model
    is configured; ValueError for a method MODEL_METHODS does not have."""
    if method not in MODEL_METHODS:
        raise ValueError(f"method is one of {', '.join(MODEL_METHODS)}, not {method!r}")
    model = model_of(method)
    job = RerankJob.objects.create(query=query, method=method, model=model, top=top, started_by=user)
    transaction.on_commit(lambda: _send(job.pk))
    return job


def _send(job_id: int) -> None:
    """Queue the job on the `models` queue; if the broker is away the job ends failed with the reason (never
    "queued" for ever) and QueueUnavailable goes on to the caller."""

    try:
        background.publish("annotator.rerank", job_id, queue="models")
    except background.QueueUnavailable as error:
        RerankJob.objects.filter(pk=job_id).update(
            status=RerankJob.Status.FAILED, error=str(error), finished_at=timezone.now()
        )
        raise


def requeue_stale_jobs(stale_seconds: float | None = None) -> list[int]:
    """Queue again the running jobs whose worker stopped stamping their heartbeat `stale_seconds` ago
    (default QUIRE_JOB_STALE_SECONDS): the worker was killed, or its machine lost. Without this the broker
    gives the task back only after its visibility timeout (hours). A job run again asks only what its cache
    lacks, and a job done twice is still done once (run_job returns a finished job as it is)."""
    stale_seconds = settings.QUIRE_JOB_STALE_SECONDS if stale_seconds is None else stale_seconds
    cutoff = timezone.now() - datetime.timedelta(seconds=stale_seconds)
    requeued = []
    for job_id in RerankJob.objects.filter(status=RerankJob.Status.RUNNING, heartbeat_at__lt=cutoff).values_list(
        "pk", flat=True
    ):
        # One UPDATE per job, conditional: two reapers never both take it.
        if RerankJob.objects.filter(pk=job_id, status=RerankJob.Status.RUNNING, heartbeat_at__lt=cutoff).update(
            status=RerankJob.Status.QUEUED
        ):
            log.warning("rerank job %s: no heartbeat for %s s; queued again", job_id, stale_seconds)
            _send(job_id)
            requeued.append(job_id)
    return requeued


def run_job(job_id: int) -> RerankJob:
    """Run (or, after a crash, resume) a rerank job. Answers already given are in the cache, so a job
    run again asks only for the images it had not got to."""
    job = RerankJob.objects.select_related("query").get(pk=job_id)
    if job.status == RerankJob.Status.DONE:
        return job
    RerankJob.objects.filter(pk=job.pk).update(status=RerankJob.Status.RUNNING, error="", heartbeat_at=timezone.now())

    def progress(done: int, total: int) -> None:  # each answer: the job's progress, and the heartbeat the reaper reads
        RerankJob.objects.filter(pk=job.pk).update(done=done, total=total, heartbeat_at=timezone.now())

    try:
        if job.method in _JOB_RUNNERS:
            result = _JOB_RUNNERS[job.method](job, progress=progress)
        else:
            result = rerank(job.query, top=job.top, method=job.method, progress=progress)
    except (ModelUnavailable, SearchUnavailable) as error:
        RerankJob.objects.filter(pk=job.pk).update(
            status=RerankJob.Status.FAILED, error=str(error), finished_at=timezone.now()
        )
    else:
        RerankJob.objects.filter(pk=job.pk).update(
            status=RerankJob.Status.DONE,
            asked=result.asked,
            done=len(result.ranking),
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            finished_at=timezone.now(),
        )
    job.refresh_from_db()
    return job


def latest_scores(query: Query) -> tuple[RerankJob | None, list[tuple[int, float, list[Any]]]]:
    """The query's last finished rerank and its (image id, score, sub-question answers) ranking, best first."""
    job = query.rerank_jobs.filter(status=RerankJob.Status.DONE, method__in=RERANK_METHODS).first()
    if job is None:
        return None, []
    rows = RerankScore.objects.filter(query=query, method=job.method, model=job.model).order_by("-score", "clip_rank")
    return job, list(rows.values_list("image_id", "score", "detail"))


# --- VisRet: draw the query, search with the drawings -------------------------------------------------


def draw(job: RerankJob, progress: Progress | None = None) -> Reranked:
    """VisRet's first half: rewrite the query, draw it visret.IMAGES times, keep each drawing with its CLIP
    vector. A job run again after a crash keeps the drawings it has. Raises ModelUnavailable or
    SearchUnavailable (the CLIP model cannot embed them)."""
    kept = list(job.generated_images.all())
    if len(kept) < visret.IMAGES:
        description = visret.rewrite(configured_text_model(), job.query.text)
        drawings = configured_image_generator().generate(description, n=visret.IMAGES)
        model = configured_spec().name
        job.generated_images.all().delete()
        for number, data in enumerate(drawings, start=1):
            try:
                with PILImage.open(io.BytesIO(data)) as picture:
                    vector = embed_image(picture.convert("RGB"))
            except (OSError, ValueError, PILImage.DecompressionBombError):
                raise ModelUnavailable("The image generator answered with something that is not an image.") from None
            generated = GeneratedImage(
                query=job.query, job=job, description=description, vector=vector.tobytes(), vector_model=model
            )
            generated.file.save(f"visret-{job.query_id}-{job.pk}-{number}.png", ContentFile(data), save=True)
            if progress:
                progress(number, visret.IMAGES)
    return Reranked([], asked=visret.IMAGES, cached=0)


def visret_ranking(
    query: Query, *, exclude_ids: Iterable[int], depth: int = 1000
) -> tuple[list[tuple[int, float]], list[GeneratedImage]]:
    """VisRet's second half: each drawing of the query's last finished VisRet job searched image to image
    (leaving out `exclude_ids`), the rankings fused by RRF (k = 1). Returns ((image id, fused score) best
    first, the drawings). Raises SearchUnavailable."""
    job = query.rerank_jobs.filter(method="visret", status=RerankJob.Status.DONE).first()
    if job is None:
        return [], []
    drawings = [g for g in job.generated_images.all() if g.vector_model == configured_spec().name]
    rankings = [
        [
            hit.image_id
            for hit in rank(
                strategy="image",
                example_vectors=[np.frombuffer(bytes(g.vector), dtype=np.float32)],
                k=depth,
                exclude_image_ids=list(exclude_ids),
            )
        ]
        for g in drawings
    ]
    return fuse_rankings(rankings, k=visret.RRF_K), drawings


# --- the judge panel's pre-labels ---------------------------------------------------------------------


def prelabel(job: RerankJob, progress: Progress | None = None) -> Reranked:
    """Every judge of the panel votes on the CLIP top N; the verdicts become the job's pre-labels."""
    images, clip_rank, skipped = candidates(job.query, job.top)
    judges = configured_panel()
    verdicts, asked = panel.judge(judges, job.query.text, images, progress)
    with transaction.atomic():
        PreLabel.objects.filter(job=job).delete()
        PreLabel.objects.bulk_create(
            [
                PreLabel(
                    query=job.query, image_id=image_id, job=job, value=v.value, confidence=v.confidence,
                    votes=[list(cast) for cast in v.votes], clip_rank=clip_rank[image_id],
                )
                for image_id, v in verdicts.items()
            ]
        )  # fmt: skip
    ranking = sorted(
        verdicts.items(), key=lambda pair: (-panel_score(pair[1].value, pair[1].confidence), clip_rank[pair[0]])
    )
    return Reranked(
        [(image_id, panel_score(v.value, v.confidence)) for image_id, v in ranking],
        asked,
        0,
        skipped,
        sum(judge.usage.prompt_tokens for judge in judges),
        sum(judge.usage.completion_tokens for judge in judges),
    )


def panel_score(value: str, confidence: float) -> float:
    """Order for the judge-panel ranking: confident accepts first, confident rejects last."""
    return {panel.ACCEPT: confidence, panel.REJECT: -confidence}.get(value, 0.0)


def panel_ranking(prelabels: Iterable[PreLabel]) -> list[tuple[int, float]]:
    """Pre-labels as a ranking: (image id, panel score), confident accepts first, ties in CLIP order."""
    ordered = sorted(prelabels, key=lambda p: (-panel_score(p.value, p.confidence), p.clip_rank))
    return [(p.image_id, panel_score(p.value, p.confidence)) for p in ordered]


def latest_prelabels(query: Query) -> dict[int, PreLabel]:
    """{image id: PreLabel} from the query's last finished judge panel."""
    job = query.rerank_jobs.filter(method="judges", status=RerankJob.Status.DONE).first()
    return {} if job is None else {p.image_id: p for p in job.prelabels.all()}


def model_of(method: str) -> str:
    """The configured model that answers `method` (a name, for the job's record); ModelUnavailable, with what to
    set, where none is: callers ask before they spend anything on a method that cannot run."""
    return _MODEL_NAMES.get(method, lambda: configured_scorer().name)()


def ranking_by(query: Query, method: str, *, top: int, depth: int) -> list[tuple[int, float]]:
    """The head of `query`'s ranking by a model method, run in this process (evaluation's runs of a method):
    yesno and structured rerank the CLIP top `top`; judges orders it by the panel's verdicts; visret fuses
    the searches of its drawings (to `depth`). Raises ModelUnavailable, SearchUnavailable, or ValueError
    when the job fails."""
    if method in RERANK_METHODS:
        return rerank(query, top=top, method=method).ranking
    job = run_job(RerankJob.objects.create(query=query, method=method, model="", top=top).pk)
    if job.status != RerankJob.Status.DONE:
        raise ValueError(f"{method} failed on query {query.pk}: {job.error}")
    if method == "visret":
        return visret_ranking(query, exclude_ids=(), depth=depth)[0]
    return panel_ranking(job.prelabels.all())


# The methods that are not a per-image rerank: who answers them, and what runs them (the reranks use
# configured_scorer and rerank()). Checked against the registry at import, so a new method cannot be
# registered without its runner.
_MODEL_NAMES = {
    "visret": lambda: configured_image_generator().model,
    "judges": lambda: ", ".join(sorted({judge.name for judge in configured_panel()})),
}
_JOB_RUNNERS = {"visret": draw, "judges": prelabel}
assert set(_JOB_RUNNERS) == set(_MODEL_NAMES) == set(MODEL_METHODS) - set(RERANK_METHODS)
