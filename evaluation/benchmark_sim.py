"""Completeness claims measured the way a team works, at a benchmark's scale: each query reviewed down its
learned ranking until the advice says it is ready, then either a check per query (each query's own claim) or one
pooled benchmark check over every query's frame (the benchmark's claim), with everything counted.

The world is evaluation/worlds.py's `inquire_world` (or the team world's ten queries): clustered CLIP-shaped
embeddings with a text-image gap and near-duplicate crowds, each query's positives lognormal in number (INQUIRE's
median 46). Annotators are wrong on a `noise` share of the images, each on their own; the adjudicator on an
`expert_noise` share. As the tool does (annotator.completeness):

  review      the learned ranking (search's feedback strategy, recomputed every 50 labels from the reviewer's own
              judgments, as the labeling page ranks for its viewer) or the page's batches, 50 at a time, until
              the last 50 judgments are at most 10% relevant, once there are 175 (150 for a query's own
              claim): the advice's "check"
  frame       the query's default frame, frozen at its first check drawn: the images judged and the top
              2 x judged (rounded up to a multiple of 500) of the text and learned rankings, together (a draw
              that no sample could certify is refused, as the tool refuses it, and leaves the frame growing)
  confirm     the frame's single-judgment positives go to the adjudicator as they are labeled, so only confirmed
              positives count and a draw's frame is computed from confirmed labels
  check       a simple random sample of the frame's other images (the union of every frame's, for the benchmark)
              sized by certify.check_size, each image given one fresh look after the draw (the review's judgment
              does not count; Settings.design "two" replays the check of before issue 62) and adjudicated where a
              look says relevant; certify.claim at the looks' miss-rate bound, the k-th check at its share of alpha
  not yet     the queries whose sampled images held positives (for a query's own check: that query) are labeled
              further, at least as many labels as the check looked at and until the ranking looks dry again, and
              the check drawn again over the same frames

Per run: whether each claim was certified, whether it held (true recall over the frames: per query, or micro over
all of them), the labels it cost (review, confirmations, looks, adjudications), beside an oracle that labels down
the same trajectory and stops each query the moment its true recall reaches the target.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.stats import binomtest

from annotator.facade import (
    ADVICE_LEAST,
    ADVICE_WINDOW,
    BENCHMARK_TOLERATE_SHARE,
    QUERY_TOLERATE,
    benchmark_tolerance,
    check_size,
    claim,
    hiding_estimate,
    most_positives,
    staged_sizes,
    tested_at,
    tolerance_for_misses,
)
from search.facade import RECENT_ANSWERS, strategy_vector

from .certification import NoFreshLook, Team, default_frame, look, miss_rate
from .simulation import annotator_mistakes, world_ranker
from .worlds import World

WINDOW = ADVICE_WINDOW  # the judgments the tool's advice reads a ranking's yield over
LEAST = ADVICE_LEAST  # the judgments a query has before the advice reads its ranking's yield, per claim
POOLED_WINDOW = 200  # the pooled review rule's window, as issue 62 states it (measured, not the tool's)
NEAR_DUPLICATE = 0.95  # search.strategies' near-duplicate cosine
REFIT = 50  # labels between two refits of the learned ranking: the page's feedback ranking is refitted every batch


@dataclass
class Settings:
    noise: float = 0.05
    expert_noise: float = 0.0
    target: float = 0.9
    confidence: float = 0.95
    dry: float = 0.05  # window_rule "confirmed": at most this share of the last window confirmed relevant
    # How the simulated team reads that a ranking looks dry: "judgments", as the tool's advice does
    # (annotator.completeness.advice: at most `judged_dry` of the last window's judgments relevant, the reviewer's own
    # calls, a check's looks at images nobody had judged too), or "confirmed", the simulator's rule before issue 62's
    # comparison through the API (confirmed positives only, at `dry`).
    window_rule: str = "judgments"
    judged_dry: float = 0.10
    batch: int = 50
    max_review: int = 6000  # per query
    max_checks: int = 6
    tolerate_share: int = BENCHMARK_TOLERATE_SHARE  # the tool's: a tenth of the misses the target allows, <= 20
    # How a benchmark check's tolerance is chosen: "share", as above; "misses", from the positives the team expects
    # it to meet (certify.tolerance_for_misses over expected_misses); "larger", the larger of the two.
    sizing: str = "share"
    # How a re-check (a benchmark check after a failed one) is sized: "first", as any check (`sizing`); "estimate",
    # to tolerate what the failed check says the frames still hide (certify.hiding_estimate, then
    # certify.tolerance_for_misses), never less than `sizing` gives.
    recheck: str = "first"
    window: int = WINDOW  # the judgments the advice's yield is read over
    least_judged: int = LEAST["benchmark"]  # the judgments a query has before its ranking may read dry
    query_least_judged: int = LEAST["query"]  # the same for a query's own claim (per_query_claims)
    extend: float = 0.0  # > 1: a failed benchmark check is extended (nested samples, `extended_claim`), not redrawn
    design: str = "fresh"  # evaluation.certification.DESIGNS: one fresh look per sampled pair, or the two of before
    pooled: bool = False  # the benchmark's pooled review rule (pooled_review) instead of each query until dry
    # After a failed benchmark check: "review" labels the queries whose sample met positives, at least the check's
    # size between them and until dry, before drawing again; "advice" reviews each query while its last window,
    # the check's looks at images nobody had judged included, is not dry, as the tool's per-query advice says (the
    # team through the API does that); "redraw" draws again at once.
    after_failure: str = "review"
    annotators: int = 2  # the reviewer, the second annotator, and any further ones a re-check's looks need
    # What the reviewer labels: "learned", the simulator's own learned ranking, or "page", the batches the
    # candidates API gives (the team through the API labels those).
    ranking: str = "learned"
    # A check (the benchmark's or a query's) decided as soon as it has counted more positives than it may
    # (certify.most_positives), as the tool decides it (annotator.completeness.checks): its other pairs are not
    # looked at. False: every pair is.
    curtail: bool = True
    # > 0: a query's ranking also reads dry from this many judgments on when its last window holds no confirmed
    # positive (measured, not the tool's rule).
    quiet_from: int = 0
    # After a query's failed check its team labels at least as many images as the check "looked" at (the tool's
    # advice since issue 62: annotator.completeness.advice), or as many as it "drew" (its rule before), then until
    # dry.
    owed: str = "looked"
    # > 0: the team reads the advice every `step` labels of a page batch (the labeling page's side pane asks for it
    # again whenever saving pauses), and a query's review stops there once it reads dry; the rest of the loaded
    # batch is left unlabeled. 0: the advice is read once a whole batch is labeled.
    step: int = 0
    # The positives a query's own check is sized to tolerate meeting (the tool's: annotator.completeness.checks'
    # TOLERATE: 3 since 2026-12-02, 2 the day before, 1 until then); measured, not the tool's, when other.
    query_tolerate: int = QUERY_TOLERATE
    # A positive the reviewer finds goes to the adjudicator as it is labeled (the tool's flow since issue 62: the
    # frame's single-judgment positives wait in the adjudicator's queue, the advice says "wait" until they are
    # confirmed, and the team through the API works the queue at every step), so the learned ranking and the frame
    # a draw freezes are computed from confirmed labels, as the server computes them. False: confirmed only when a
    # check is drawn, as the simulator did until 2026-12-02 (its frames then came from unconfirmed labels).
    confirm_as_labeled: bool = True
    # > 0 (measured, not the tool's; it takes the place of `staged`): a query's check is a double sampling plan: its
    # first `first_stage_share` of the check's alpha goes to a first stage, the first pairs of the sample in its
    # random order, sized to certify on meeting none; where that stage meets a positive, the rest of the sample
    # (sized to tolerate `query_tolerate` at the rest of alpha) is looked at. Either stage's certificate is wrong at
    # most its own share of the time, so the check's is at most their sum (Bonferroni; Dodge and Romig's double
    # sampling, with the stages' alphas split).
    first_stage_share: float = 0.0
    # True (the tool's since 2026-12-03: annotator.completeness.checks' first stage): a query's check in two stages
    # (certify.staged_sizes): the whole sample the one-stage check's, tested as it is, and its first pairs
    # certifying on counting none, as many as keep the two together within alpha at every truth (computed exactly).
    # False: one stage, as the tool did before.
    staged: bool = True
    # True: every check's sample is the pairs first in `coupled_order` (the run's seed, the check's ordinal, each
    # pair's query and image), the order bench/completeness_api.py --coupled-draws gives the server, so that the
    # simulator and the team through the API draw the same pairs wherever their frames agree (common random
    # numbers). False: a seeded permutation (the simulator's draws until 2026-12-03).
    coupled_draws: bool = False


@dataclass
class QueryRun:
    """One query's labeling: its team, the review's order, its learned ranking and its frozen frame."""

    world: World
    query_id: int
    team: Team
    order: list[int] = field(default_factory=list)
    ranking: list[int] = field(default_factory=list)
    oracle: int | None = None  # labels spent when true recall first reached the target
    frame: np.ndarray | None = None
    # Settings.ranking "page": the labeling page's batches over the world (evaluation.simulation.world_ranker, the
    # candidates API's own search.batches rules); None: the simulator's learned ranking (refit, look-alikes passed)
    page: Callable[..., list[int]] | None = None
    batch: int = 50
    loaded: list[int] = field(default_factory=list)  # Settings.step: the page batch's images not yet labeled
    confirm_as_labeled: bool = True  # Settings.confirm_as_labeled
    frozen_ids: set[int] = field(default_factory=set)  # the frozen frame's images, as a set

    @property
    def truth(self) -> set[int]:
        return self.team.truth

    def seen(self) -> tuple[list[int], list[int]]:
        """(relevant, not relevant) as the reviewer's ranking learns them: the labeling page ranks from the labels its
        viewer sees (annotator.labeling.grid.seen_by), their own judgment of every image they judged, not the
        adjudicator's decision on it."""
        first = self.team.first
        return [i for i in first if first[i]], [i for i in first if not first[i]]

    def refit(self) -> None:
        relevant, not_relevant = self.seen()
        text = self.world.texts[self.query_id]
        vector = strategy_vector("feedback", text, self.world.vectors[relevant], self.world.vectors[not_relevant])
        scores = self.world.vectors @ np.asarray(vector, dtype=np.float32)
        depth = min(len(scores) - 1, len(self.team.first) + 8 * REFIT)
        while True:  # deeper until something is left: a crowd of look-alikes can fill the whole head (issue 62)
            top = np.argpartition(-scores, depth)[: depth + 1]
            top = np.asarray([int(i) for i in top[np.argsort(-scores[top])] if int(i) not in self.team.first])
            if not_relevant and len(top):  # the page's batches pass over near-duplicates of images judged not relevant
                recent = self.world.vectors[not_relevant[-REFIT:]]
                alike = (self.world.vectors[top] @ recent.T).max(axis=1) >= NEAR_DUPLICATE
                top = top[~alike]
            if len(top) or depth >= len(scores) - 1:
                break
            depth = min(len(scores) - 1, depth * 4)
        self.ranking = top.tolist()

    def label(self, count: int, target: float, hold: bool = False) -> None:
        """Review `count` more images down the learned ranking (refitted every REFIT labels), or the page's batches
        (`hold`: a whole batch is loaded and the images past `count` wait in `loaded` for the next call)."""
        if self.page is not None:
            self._label_batches(count, target, hold)
            return
        for _ in range(count):
            if len(self.order) % REFIT == 0 or not self.ranking:
                self.refit()
            if not self.ranking:
                return
            image_id = self.ranking.pop(0)
            if not self._judge(image_id) and self.ranking:  # the page's batches pass over its look-alikes
                rest = np.asarray(self.ranking)
                alike = self.world.vectors[rest] @ self.world.vectors[image_id] >= NEAR_DUPLICATE
                self.ranking = rest[~alike].tolist()
            self.order.append(image_id)
            if self.oracle is None and self.found() >= target * len(self.truth):
                self.oracle = len(self.order)  # an oracle labels each image once, and knows when to stop

    def _label_batches(self, count: int, target: float, hold: bool = False) -> None:
        """Review `count` more images as the team through the API does: batches of the `feedback` candidates (the
        page's rules: text probes, look-alike stacks behind their leader) from the final labels, each image of a
        batch judged by the reviewer, none of a stack's waiting look-alikes. `hold`: see label."""
        done = 0
        while done < count:
            if not self.loaded:
                self.loaded = self._next_batch(self.batch if hold else min(self.batch, count - done))
            picks, self.loaded = self.loaded[: count - done], self.loaded[count - done :]
            if not picks:
                return
            for image_id in picks:
                self._judge(image_id)
                self.order.append(image_id)
                if self.oracle is None and self.found() >= target * len(self.truth):
                    self.oracle = len(self.order)
            done += len(picks)

    def _judge(self, image_id: int) -> bool:
        """The reviewer's judgment of `image_id`; a positive of the frame (every image judged is in the default
        frame; a frozen frame holds what it holds) confirmed by the adjudicator at once when confirm_as_labeled."""
        relevant = self.team.judge(image_id)
        if relevant and self.confirm_as_labeled and (self.frame is None or image_id in self.frozen_ids):
            self.team.adjudicate(image_id)
        return relevant

    def _next_batch(self, k: int) -> list[int]:
        """The page's next `k` `feedback` candidates from the reviewer's own judgments so far (QueryRun.seen)."""
        assert self.page is not None
        judged = list(self.team.first)
        relevant, not_relevant = self.seen()
        recent = [(i, self.team.first[i]) for i in self.order[-RECENT_ANSWERS:]]
        return self.page("feedback", relevant, not_relevant, set(judged), k, recent)

    def found(self, within: Iterable[int] | None = None) -> int:
        return self.team.found(within)

    def found_any(self) -> bool:
        """The advice reads no ranking as dry before it has yielded a positive."""
        return any(self.team.first.values())

    def confirmed(self, image_id: int) -> bool:
        """Whether a labeled image is a confirmed positive (its single positive confirmed by the adjudicator, as the
        team does as it goes; counted once, here or at the check)."""
        return bool(self.team.first[image_id] and self.team.adjudicate(image_id))

    def yielding(self, window: int) -> int:
        """Confirmed positives among the query's last `window` labels."""
        return sum(self.confirmed(i) for i in self.order[-window:])

    def reads_dry(self, recent: list[int], options: Settings, dry: float) -> bool:
        """Whether a window of judgments reads dry by `options.window_rule` (`dry`: the "confirmed" rule's share)."""
        if options.window_rule == "judgments":
            return sum(self.team.first[i] for i in recent) <= options.judged_dry * len(recent)
        return sum(map(self.confirmed, recent)) <= dry * len(recent)

    def review(self, dry: float, options: Settings, least: int | None = None) -> None:
        """Label until the last `options.window` judgments read dry (Settings.window_rule; `dry` for the
        "confirmed" rule), once the query has `options.least_judged`, at least `least` more (a window's worth by
        default). A page batch loaded and not labeled when it stops is left (the team comes back to a new one)."""
        try:
            self._review(dry, options, options.window if least is None else least)
        finally:
            self.loaded = []

    def _review(self, dry: float, options: Settings, least: int) -> None:
        window = options.window
        start = len(self.order)
        while len(self.order) < options.max_review:
            enough = len(self.order) >= max(window, options.least_judged)
            ready = len(self.order) - start >= least and enough and self.found_any()
            if ready and self.reads_dry(self.order[-window:], options, dry):
                return
            if len(self.order) - start >= least and self._quiet(options):
                return
            before = len(self.order)
            self._label_on(options)
            if len(self.order) == before:
                return

    def _quiet(self, options: Settings) -> bool:
        """Settings.quiet_from: the query has that many judgments, has yielded a confirmed positive, and its last
        window holds none."""
        window = options.window
        if not options.quiet_from or len(self.order) < max(window, options.quiet_from):
            return False
        return self.yielding(len(self.order)) > 0 and self.yielding(window) == 0

    def review_while_yielding(self, looked: list[int], options: Settings) -> None:
        """Review on while the query's last `options.window` judgments, a check's `looked` images after the review's
        own, do not read dry: the tool's per-query advice after a failed check (its window reads every judgment
        outside the overlap samples, so a check's looks at images nobody had judged count)."""
        recent = (self.order + looked)[-options.window :]
        while not self.reads_dry(recent, options, options.dry) and len(self.order) < options.max_review:
            before = len(self.order)
            self._label_on(options)
            if len(self.order) == before:
                break
            recent = (recent + self.order[before:])[-options.window :]
        self.loaded = []

    def _label_on(self, options: Settings) -> None:
        """The review's next labels before the advice is read again: a page batch, or `options.step` of it."""
        self.label(options.step or options.batch, options.target, hold=bool(options.step))

    def freeze(self, frame: np.ndarray | None = None) -> np.ndarray:
        """The query's frame, frozen once: `frame` (the frame a draw was just made over), else the default frame now
        (frames.default_spec: the images judged and the top of the text and learned rankings)."""
        if self.frame is None:
            self.frame = self.frame_now() if frame is None else frame
            self.frozen_ids = set(self.frame.tolist())
        return self.frame

    def frame_now(self) -> np.ndarray:
        """The frame a draw would freeze now: the frozen one, else the tool's default frame over today's judgments.
        The tool freezes a frame only by a draw (checks._keep): a draw it refuses leaves the default frame growing
        with the review, and its later positives count found."""
        return self.frame if self.frame is not None else default_frame(self.world, self.query_id, self.team)

    def confirm(self, frame: np.ndarray | None = None) -> list[int]:
        """The positives of `frame` (the frozen frame by default), each confirmed by the adjudicator (once); those
        it keeps."""
        frame = (self.freeze() if frame is None else frame).tolist()
        for image_id in frame:
            if image_id in self.team.first and self.team.final(image_id):
                self.team.adjudicate(image_id)
        return [i for i in frame if i in self.team.first and self.team.final(i)]

    def true_positives_in_frame(self) -> int:
        return len(self.truth.intersection(self.freeze().tolist()))


def pooled_review(runs: dict[int, QueryRun], options: Settings) -> None:
    """The benchmark's pooled review rule (issue 62): every query gets one window of labels first; then each next
    batch goes to the query whose last window holds the most confirmed positives (a query whose ranking ran out
    drops out); review stops once the last `window` labels over all queries are at most `dry` confirmed relevant.
    A query's own stopping rule spends a window on every dry query; pooled, a dry query costs its first window only,
    and the labels go where the positives still are."""
    timeline: list[tuple[int, int]] = []  # (query, image) in the order the team labeled them

    def label(query_id: int, count: int) -> int:
        run = runs[query_id]
        before = len(run.order)
        run.label(count, options.target)
        timeline.extend((query_id, image_id) for image_id in run.order[before:])
        return len(run.order) - before

    for query_id in runs:
        label(query_id, POOLED_WINDOW)
    open_queries = {q for q, run in runs.items() if len(run.order) < options.max_review}
    while open_queries:
        recent = timeline[-POOLED_WINDOW:]
        share = sum(runs[q].confirmed(i) for q, i in recent) / max(1, len(recent))
        if len(recent) >= POOLED_WINDOW and share <= options.dry:
            return
        best = max(sorted(open_queries), key=lambda q: (runs[q].yielding(POOLED_WINDOW), -len(runs[q].order)))
        if not label(best, options.batch) or len(runs[best].order) >= options.max_review:
            open_queries.discard(best)


def first_review(runs: dict[int, QueryRun], options: Settings) -> None:
    """The review before the first benchmark check: pooled (pooled_review), or each query until its own ranking
    looks dry."""
    if options.pooled:
        pooled_review(runs, options)
        return
    for run in runs.values():
        run.review(options.dry, options)


def _looked(run: QueryRun, image_id: int, options: Settings) -> bool:
    """A sampled image, looked at as the design says and adjudicated where a look says relevant: counted a positive?"""
    return look(run.team, image_id, options.design)


def _start(world: World, seed: int, options: Settings) -> dict[int, QueryRun]:
    runs = {}
    for query_id in sorted(world.positives):
        noises = (options.noise, options.noise, options.expert_noise, *[options.noise] * (options.annotators - 2))
        mistaken = tuple(annotator_mistakes(n, query_id, _person(seed, who)) for who, n in enumerate(noises))
        page = world_ranker(world, query_id) if options.ranking == "page" else None
        team = Team(world.positives[query_id], mistaken)
        runs[query_id] = QueryRun(world, query_id, team, page=page, confirm_as_labeled=options.confirm_as_labeled)
    return runs


def _person(seed: int, who: int) -> int:
    """The mistakes' seed of person `who` of a run (0 reviewer, 1 second annotator, 2 adjudicator, 3... further
    annotators): the first three as before further annotators existed, the others apart from every run's."""
    return seed * 3 + who if who < 3 else 1_000_000 + seed * 100 + who


@dataclass
class NestedChecks:
    """Benchmark checks as one growing sample (Settings.extend): the population (every frame's pairs that were not
    confirmed positives at the first draw) and one random order of it are fixed at the first check, and the k-th
    check labels the first `size(k)` pairs of that order, first x growth^(k-1): sizes fixed before any pair is
    looked at, so each check is a simple random sample of that one population of a size chosen in advance, and its
    bound on the positives the population held holds at its own share of alpha (certify.tested_at); Bonferroni over
    the checks needs no independence between them. What the team finds outside the sample after the first draw
    raises what is found (certify.claim's `confirmed_outside`), never what is known to be missing.

    Extending a failed check adaptively instead (redrawing over what is still unconfirmed, or choosing the next
    size from what the last one met) is not valid this simply: the positives a check met leave the population, so
    the kept pairs are the negatives of the sample and read as a cleaner population than a fresh draw would."""

    found: int  # confirmed positives of the frames at the first draw (outside the population)
    owner: np.ndarray  # query of each pair
    pairs: np.ndarray  # image of each pair
    order: np.ndarray  # one random order of the pairs
    first: int
    growth: float

    def size(self, ordinal: int) -> int:
        return min(len(self.pairs), math.ceil(self.first * self.growth ** (ordinal - 1)))


def coupled_order(seed: int, ordinal: int, owners: np.ndarray, images: np.ndarray) -> np.ndarray:
    """The indices of the (query `owners`, image `images`) pairs in the order of a pseudo-random priority of each
    pair, the run's `seed` and the check's `ordinal`: a uniformly random order for a check, which puts a pair in the
    same place whatever other pairs are drawn from. Two frames that differ by a few pairs then give samples that
    differ by about as few (a permutation of n + 4 pairs shares nothing with one of n). SplitMix64's finalizer
    (Steele, Lea and Flood 2014) over the four values, each multiplied in by its own odd constant."""
    run = ((seed * 0x9E3779B97F4A7C15) ^ (ordinal * 0xC2B2AE3D27D4EB4F)) & 0xFFFFFFFFFFFFFFFF  # Python ints: no wrap
    # uint64 arrays wrap silently, as the mixing wants.
    mixed = np.asarray(owners, dtype=np.uint64) * np.uint64(0x165667B19E3779F9)
    mixed ^= np.asarray(images, dtype=np.uint64) * np.uint64(0xD6E8FEB86659FD93) ^ np.uint64(run)
    mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed = mixed ^ (mixed >> np.uint64(31))
    return np.argsort(mixed, kind="stable")


def _draw(
    options: Settings, rng: np.random.Generator, check: tuple[int, int], owners: np.ndarray, pairs: np.ndarray,
    size: int,
) -> np.ndarray:  # fmt: skip
    """The indices of a check's sample of the (query `owners`, image `pairs`) pairs: the first `size` of the coupled
    order of `check` (the run's seed, the check's ordinal) with Settings.coupled_draws, else of a permutation drawn
    from the run's `rng` (the same draws, value for value, as permuting the pairs themselves)."""
    if options.coupled_draws:
        return coupled_order(*check, owners, pairs)[:size]
    return rng.permutation(len(pairs))[:size]


def _pooled(runs: dict[int, QueryRun]) -> tuple[int, np.ndarray, np.ndarray]:
    """Every frame's confirmed positives (counted) and the (query, image) pairs of the rest."""
    found, owners, pairs = 0, [], []
    for query_id, run in runs.items():
        positives = run.confirm()
        rest = np.setdiff1d(run.freeze(), np.asarray(positives, dtype=np.int64))
        found += len(positives)
        owners.append(np.full(len(rest), query_id))
        pairs.append(rest)
    return found, np.concatenate(owners), np.concatenate(pairs)


def benchmark_claim(world: World, seed: int, options: Settings) -> dict[str, Any]:
    """The benchmark's claim as a team reaches it: every query reviewed until dry at `options.dry`, then pooled
    checks until one certifies (or `max_checks`): each drawn afresh over what is not yet confirmed, or with
    `options.extend` one nested sample (NestedChecks)."""
    runs = _start(world, seed, options)
    first_review(runs, options)
    rng = np.random.default_rng([seed, 51])
    rate = miss_rate(options.design)
    checks, certified, lower, least, stuck = 0, False, None, None, False
    first: dict[str, Any] = {}  # the first check's state: what bench/certify_level_bench.py tests the level on
    nested: NestedChecks | None = None
    looked = 0  # pairs labeled by the checks so far (a nested check's earlier pairs are not labeled again)
    failed: FailedCheck | None = None
    while checks < options.max_checks and not certified:
        checks += 1
        confidence = tested_at(options.confidence, checks)
        found, owner, pairs = _pooled(runs)
        tolerate = _tolerance(runs, found, len(pairs), confidence, rate, options, failed)
        if least is None:
            least = check_size(found, len(pairs), options.target, confidence, rate)
        size = check_size(found, len(pairs), options.target, confidence, rate, tolerate) or 0
        if options.extend > 1:
            nested = nested or NestedChecks(found, owner, pairs, rng.permutation(len(pairs)), size, options.extend)
            found, owner, pairs = nested.found, nested.owner, nested.pairs
            chosen = nested.order[: nested.size(checks)]
        else:
            chosen = _draw(options, rng, (seed, checks), owner, pairs, size)
        first = first or {"found": found, "sampled_from": len(pairs), "sample": len(chosen), "tested_at": confidence,
                          "miss_rate": rate, "hidden": _hidden(runs, owner, pairs)}  # fmt: skip
        curtail = _most(options, nested, (found, len(pairs), len(chosen)), confidence, rate)
        try:
            met, new, unsealed, seen = _look_at_sample(runs, chosen, owner, pairs, looked, options, curtail)
        except NoFreshLook:  # the team cannot finish this check: the tool's check waits for someone new
            stuck = True
            break
        outside = 0 if nested is None else _confirmed_outside(runs, chosen, owner, pairs)
        said = claim(found, len(pairs), len(chosen), sum(met.values()), options.target, confidence, rate, outside)
        certified, lower = said.certified, said.recall_lower_bound
        looked = len(chosen) if nested is not None else looked + seen
        if not certified:
            failed = FailedCheck(found, len(pairs), sum(met.values()), seen, seen < len(chosen))
            after_failure(runs, options, new, unsealed, seen)
    checked = {"certified": certified, "checks": checks, "bound": lower, "stuck": stuck}
    return _claim_record(runs, options, seed, checked, sampled=looked, least=least, first=first)


def _hidden(runs: dict[int, QueryRun], owner: np.ndarray, pairs: np.ndarray) -> int:
    """The true positives among a check's pairs (the bench's clairvoyant figure: what its sample may meet)."""
    pairs_of = zip(owner.tolist(), pairs.tolist(), strict=True)
    return sum(image_id in runs[query_id].truth for query_id, image_id in pairs_of)


def _most(
    options: Settings, nested: NestedChecks | None, check: tuple[int, int, int], confidence: float, rate: float
) -> int | None:
    """Where a check (found, population, size) stops being looked at (Settings.curtail, as the tool decides it): once
    it has counted more than this many positives it cannot certify. None: every pair is looked at (curtail off; a
    nested check's sizes are fixed in advance)."""
    if not options.curtail or nested is not None:
        return None
    return most_positives(*check, options.target, confidence, rate)


def _claim_record(
    runs: dict[int, QueryRun], options: Settings, seed: int, checked: dict[str, Any], *, sampled: int,
    least: int | None, first: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """A benchmark claim's record: how its checks went (`checked`), its true micro-recall over the frames, the labels
    spent, and the yardsticks (the oracles continue the trajectories, so they are read after the labels)."""
    in_frames = sum(run.true_positives_in_frame() for run in runs.values())
    found_in_frames = sum(run.found(run.freeze().tolist()) for run in runs.values())
    micro = found_in_frames / in_frames if in_frames else 1.0
    spent = sum(run.team.spent for run in runs.values())
    confirmed = sum(len(run.confirm()) for run in runs.values())
    review = sum(len(run.order) for run in runs.values())  # before the oracle continues the trajectories
    oracle = sum(_oracle(run, options) for run in runs.values())
    floor = valid_floor(list(runs.values()), options, _tolerated(options))
    floors = {
        share: floor["labels"] if share == options.tolerate_share else
        valid_floor(list(runs.values()), options, _shared(share, options.target))["labels"]
        for share in FLOOR_SHARES
    }  # fmt: skip
    return {
        "seed": seed, "queries": len(runs), **checked,
        "floor": floor["labels"], "floor_recall": floor["recall"], "floors": floors,
        "micro_recall": micro, "held": micro >= options.target - 1e-12, "labels": spent,
        "review": review, "sampled": sampled, "confirmed": confirmed,
        "least_check": least, "oracle": oracle,
        "frame_oracle": sum(_frame_oracle(run, options) for run in runs.values()),
        "positives": sum(len(run.truth) for run in runs.values()), "in_frames": in_frames, "first_check": first,
    }  # fmt: skip


def _look_at_sample(
    runs: dict[int, QueryRun], chosen: np.ndarray, owner: np.ndarray, pairs: np.ndarray, looked: int, options: Settings,
    curtail: int | None = None,
) -> tuple[dict[int, int], dict[int, int], dict[int, list[int]], int]:  # fmt: skip
    """A benchmark check's sampled pairs looked at as the design says: per query the positives met, those met at
    pairs no earlier check had labeled (`looked` of a nested sample's order were), and its sampled images nobody had
    judged (their looks are in the tool's window; the others are sealed). NoFreshLook when nobody can look.
    `curtail`: the pairs are looked at in the sample's order until more than that many positives are counted; the
    last figure is how many were looked at."""
    met: dict[int, int] = {}
    new: dict[int, int] = {}
    unsealed: dict[int, list[int]] = {}
    counted = seen = 0
    for position, n in enumerate(chosen.tolist()):
        if curtail is not None and counted > curtail:
            break
        seen += 1
        query_id, image_id = int(owner[n]), int(pairs[n])
        if image_id not in runs[query_id].team.first:
            unsealed.setdefault(query_id, []).append(image_id)
        if _looked(runs[query_id], image_id, options):
            counted += 1
            met[query_id] = met.get(query_id, 0) + 1
            if position >= looked or options.extend <= 1:
                new[query_id] = new.get(query_id, 0) + 1
    return met, new, unsealed, seen


def _confirmed_outside(runs: dict[int, QueryRun], chosen: np.ndarray, owner: np.ndarray, pairs: np.ndarray) -> int:
    """Positives of a nested sample's population confirmed since the first draw, outside the sample."""
    rest = np.ones(len(pairs), dtype=bool)
    rest[chosen] = False
    return sum(1 for n in np.flatnonzero(rest).tolist() if _confirmed(runs[int(owner[n])], int(pairs[n])))


def after_failure(
    runs: dict[int, QueryRun], options: Settings, new: dict[int, int], unsealed: dict[int, list[int]], sampled: int
) -> None:
    """What the team labels between a failed benchmark check and the next draw (Settings.after_failure): `new`, the
    positives the check met per query; `unsealed`, its looks at images nobody had judged; `sampled`, its size."""
    if options.after_failure == "advice":
        for query_id, images in unsealed.items():
            runs[query_id].review_while_yielding(images, options)
    elif options.after_failure == "review":  # label where the sample met positives, then redraw
        for query_id in sorted(new, key=lambda q: -new[q]):
            runs[query_id].review(options.dry, options, least=max(options.window, sampled // max(1, len(new))))


def expected_misses(runs: dict[int, QueryRun], window: int = 200) -> int:
    """The positives the frames are expected still to hide, read off the review as the tool reads it
    (annotator.completeness.benchmark): each query's confirmed positives among the last `window` images its review
    reached. A ranking yields less as it goes down, so what the last window found is about what lies below it; at
    the first draw of 12 seeds (10 queries, windows of 200) the truth was 0.5 to 4.5 times this, a median 1.1."""
    return sum(sum(run.confirmed(image_id) for image_id in run.order[-window:]) for run in runs.values())


@dataclass(frozen=True)
class FailedCheck:
    """What a failed benchmark check saw, for sizing the next one (Settings.recheck)."""

    found: int  # confirmed positives when it was drawn
    population: int  # the pairs it was drawn from
    positives: int  # positives it counted
    looked_at: int  # pairs looked at
    decided_early: bool


def _tolerance(
    runs: dict[int, QueryRun], found: int, population: int, confidence: float, rate: float, options: Settings,
    failed: FailedCheck | None = None,
) -> int:  # fmt: skip
    share = _tolerated(options)(found)
    if options.sizing != "share":
        misses = tolerance_for_misses(found, population, options.target, confidence, rate, expected_misses(runs))
        share = misses if options.sizing == "misses" else max(share, misses)
    if failed is None or options.recheck == "first":
        return share
    since = max(0, found - failed.found)
    hiding = hiding_estimate(failed.positives, failed.looked_at, failed.population, rate, failed.decided_early, since)
    return max(share, tolerance_for_misses(found, population, options.target, confidence, rate, hiding))


def _tolerated(options: Settings) -> Callable[[int], int]:
    """The benchmark check's tolerance for `found` confirmed positives (annotator.completeness.benchmark)."""
    return _shared(options.tolerate_share, options.target)


def _fixed(tolerate: int) -> Callable[[int], int]:
    """A query's check's tolerance: `tolerate` positives whatever it has found."""
    return lambda found: tolerate


def _shared(share: int, target: float) -> Callable[[int], int]:
    """A benchmark check's tolerance at a `share`-th of the misses the target allows (the tool's rule; 0: none)."""
    return lambda found: benchmark_tolerance(found, target, share)


FLOOR_CERTAINTY = 0.9
# The floor is the run's check's (its tolerance); a clairvoyant may size its one check otherwise, so each record
# also keeps the floor at other tolerances: a query's check tolerating 0 to 3 positives (the tool's 3; 1, then 2,
# before), the benchmark's none (0) or a 20th, 10th (the tool's) or 5th of the misses the target allows.
# The least of them is the strictest yardstick and the one that does not move with the design measured.
FLOOR_TOLERANCES = (0, 1, 2, 3)
FLOOR_SHARES = (0, 20, 10, 5)
FLOOR_LEVELS = np.round(np.arange(0.80, 1.0001, 0.005), 3)


def valid_floor(runs: list[QueryRun], options: Settings, tolerate: Callable[[int], int]) -> dict[str, Any]:
    """What a valid claim costs a clairvoyant team (issue 62): each query of `runs` reviewed down its trajectory
    until a share r of its frame's true positives is judged (r the same for all), every one of them confirmed (one
    label each), and one check of the tool's size whose claim certifies with probability at least FLOOR_CERTAINTY
    at the truth (the frames' remaining positives, each sampled one lost at the looks' rate). r is the least on a
    grid of 0.005 that certifies so (a binary search: a deeper review leaves fewer positives to meet); labels:
    review + confirmations + the check's sample. A floor, not a design: the team knows the truth, its review never
    misses, and the check is drawn once. Read after _oracle (the trajectories continued)."""
    rate = miss_rate(options.design)
    confidence = tested_at(options.confidence, 1)
    frames = []
    for run in runs:
        frame = run.freeze()
        positives = run.truth.intersection(frame.tolist())
        reached = [n for n, image_id in enumerate(run.order, start=1) if image_id in positives]
        frames.append((len(frame), len(positives), reached))

    def labels_at(level: float) -> int | None:
        review = found = missing = population = 0
        for frame_size, positives, reached in frames:
            met = min(math.ceil(level * positives - 1e-9), len(reached))
            review += reached[met - 1] if met else 0
            found, missing, population = found + met, missing + positives - met, population + frame_size - met
        if not population:
            return review + found
        sample = check_size(found, population, options.target, confidence, rate, tolerate(found))
        if sample is None:
            return None
        if _certifies(found, population, sample, missing, options, confidence, rate, tolerate(found)) < FLOOR_CERTAINTY:
            return None
        return review + found + sample

    low, high = 0, len(FLOOR_LEVELS)  # the least level whose claim certifies often enough (high: none does)
    while low < high:
        middle = (low + high) // 2
        if labels_at(float(FLOOR_LEVELS[middle])) is None:
            low = middle + 1
        else:
            high = middle
    if low == len(FLOOR_LEVELS):
        return {"labels": None, "recall": None}
    level = float(FLOOR_LEVELS[low])
    return {"labels": labels_at(level), "recall": level}


def _certifies(
    found: int, population: int, size: int, missing: int, options: Settings, confidence: float, rate: float,
    tolerate: int,
) -> float:  # fmt: skip
    """P(a check of `size` certifies) when `missing` positives hide among `population`, each sampled one counted
    with probability 1 - rate: the thinned law of certify summed over the counts whose claim certifies."""
    from scipy.stats import binom, hypergeom

    counts = np.arange(0, min(size, missing) + 1)
    certifies = np.zeros(len(counts), dtype=bool)
    for met in counts.tolist():  # a claim sized for a few positives stops certifying a little past them
        certifies[met] = claim(found, population, size, met, options.target, confidence, rate).certified
        if not certifies[met] and met > max(1, tolerate) + 1:
            break
    drawn = hypergeom(population, missing, size).pmf(counts)
    counted = drawn[:, None] * binom(counts[:, None], 1 - rate).pmf(counts[None, :])
    return float(counted.sum(axis=0) @ certifies)


def _confirmed(run: QueryRun, image_id: int) -> bool:
    return image_id in run.team.first and run.team.final(image_id)


def per_query_claims(world: World, seed: int, options: Settings, dry: float = 0.05) -> list[dict[str, Any]]:
    """Each query's own claim as a team reaches it: reviewed until dry at `dry`, then its checks until one
    certifies (or `max_checks`); one record per query."""
    options = replace(options, least_judged=options.query_least_judged)  # the advice's first stretch per claim
    runs = _start(world, seed, options)
    rng = np.random.default_rng([seed, 52])
    rate = miss_rate(options.design)
    records = []
    for query_id, run in runs.items():
        run.review(dry, options)
        checks, certified = 0, False
        drawn: list[dict[str, int]] = []
        while checks < options.max_checks and not certified and len(run.order) < options.max_review:
            checks += 1  # a try: a draw, or a reading that no draw could certify (the API's team counts both)
            frame = run.frame_now()
            positives = run.confirm(frame)
            population = np.setdiff1d(frame, np.asarray(positives, dtype=np.int64))
            confidence = tested_at(options.confidence, len(drawn) + 1)  # the tool's ordinal counts its draws only
            stages = _stages(len(positives), len(population), confidence, rate, options)
            if stages is None:  # no sample can certify this frame now: the tool refuses the draw, the team labels on
                run.review(dry, options)
                continue
            run.freeze(frame)  # the draw freezes it
            (first, _), (size, _) = stages
            owner = np.full(len(population), query_id, dtype=np.int64)
            sample = population[_draw(options, rng, (seed, len(drawn) + 1), owner, population, size)]
            drawn.append({"found": len(positives), "sampled_from": len(population), "sample": size, "first": first})
            try:
                certified, seen, by_first = _look_in_stages(
                    run, sample.tolist(), (len(positives), len(population)), stages, options, rate
                )
            except NoFreshLook:  # undecided: the team has nobody left to look
                break
            if by_first:
                drawn[-1]["stage"] = 1
            if not certified:  # the tool's advice asks for as many labels as the check looked at (Settings.owed)
                owed = len(sample) if options.owed == "drawn" else seen
                run.review(dry, options, least=max(options.window, owed))
        in_frame = run.true_positives_in_frame()
        recall = run.found(run.freeze().tolist()) / in_frame if in_frame else 1.0
        spent = run.team.spent
        reviewed = len(run.order)  # the reviewer's judgments down the ranking (the oracle continues them)
        oracle = _oracle(run, options)  # continues the trajectory: read before the floors
        tolerances = sorted({*FLOOR_TOLERANCES, options.query_tolerate})
        floors = {t: valid_floor([run], options, _fixed(t))["labels"] for t in tolerances}
        records.append(
            {
                "query_id": query_id,
                "kind": world.kinds[query_id],
                "positives": len(run.truth),
                "certified": certified,
                "checks": checks,
                "recall": recall,
                "held": recall >= options.target - 1e-12,
                "labels": spent,
                "oracle": oracle,
                "floor": floors[options.query_tolerate],  # a check sized as this run's (the tool's: TOLERATE)
                "floors": floors,
                "each_check": drawn,  # the checks drawn: confirmed positives, the frame's rest, the sample
                "review": reviewed,
            }  # fmt: skip
        )
    return records


def _stages(
    found: int, population: int, confidence: float, rate: float, options: Settings
) -> tuple[tuple[int, float | None], tuple[int, float]] | None:
    """A query's check at `confidence`: ((its first stage's pairs, tested at: None where counting none certifies by
    the staged test), (its sample, tested at)); the first stage 0 pairs where the check has one stage. None where
    no sample can certify. Settings.first_stage_share (the alpha split in two, measured) before Settings.staged (the
    tool's)."""
    share = options.first_stage_share
    if share > 0:
        alpha = 1 - confidence
        first_confidence, rest = 1 - alpha * share, 1 - alpha * (1 - share)
        first = check_size(found, population, options.target, first_confidence, rate, 0)
        size = check_size(found, population, options.target, rest, rate, options.query_tolerate)
        if first is None or size is None:
            return None
        return (first, first_confidence), (max(size, first), rest)
    if options.staged:
        staged = staged_sizes(found, population, options.target, confidence, rate, options.query_tolerate)
        return None if staged is None else ((staged[0], None), (staged[1], confidence))
    size = check_size(found, population, options.target, confidence, rate, options.query_tolerate)
    return None if size is None else ((0, confidence), (size, confidence))


def _look_in_stages(
    run: QueryRun, sample: list[int], frame: tuple[int, int],
    stages: tuple[tuple[int, float | None], tuple[int, float]], options: Settings, rate: float,
) -> tuple[bool, int, bool]:  # fmt: skip
    """A query's check of `sample`, drawn from a frame of (found, population), looked at in the sample's order:
    (certified, images looked at, whether its first stage decided it). A first stage (Settings.first_stage_share)
    that meets none certifies at its own share of alpha; otherwise the whole sample decides, curtailed once it has
    counted more than it may."""
    (first, first_confidence), (_, confidence) = stages
    found, population = frame
    size = len(sample)
    check = (found, population, size)
    if first:
        met, seen = _met(run, sample[:first], options, 0)
        if not met:
            if first_confidence is None:  # Settings.staged: none counted certifies
                return True, seen, True
            return claim(found, population, first, 0, options.target, first_confidence, rate).certified, seen, True
    else:
        met, seen = 0, 0
    most = _most(options, None, check, confidence, rate)
    more, further = _met(run, sample[seen:], options, None if most is None else most - met)
    said = claim(found, population, size, met + more, options.target, confidence, rate)
    return said.certified, seen + further, False


def _met(run: QueryRun, sample: list[int], options: Settings, curtail: int | None) -> tuple[int, int]:
    """(the positives a query's check counts in `sample`, the images looked at): the benchmark's _look_at_sample over
    one query's pairs, in the sample's order until more than `curtail` are counted (None: every image)."""
    pairs = np.asarray(sample, dtype=np.int64)
    owner = np.full(len(pairs), run.query_id)
    met, _, _, seen = _look_at_sample({run.query_id: run}, np.arange(len(pairs)), owner, pairs, 0, options, curtail)
    return met.get(run.query_id, 0), seen


def _oracle(run: QueryRun, options: Settings) -> int:
    """Labels an oracle spends on the query: down the same trajectory until true recall reaches the target (the
    trajectory continued past the team's stop where it had not; call it after every other figure is read)."""
    while run.oracle is None and len(run.order) < options.max_review * 2:
        before = len(run.order)
        run.label(options.batch, options.target)
        if len(run.order) == before:
            break
    return run.oracle if run.oracle is not None else len(run.order)


def _frame_oracle(run: QueryRun, options: Settings) -> int:
    """Labels an oracle spends to reach the target over the claim's own frame: down the same trajectory until the
    target share of the frame's true positives is judged (the same promise as the claim's; read after _oracle,
    which continues the trajectory where the team stopped short)."""
    frame = run.truth.intersection(run.freeze().tolist())
    needed, met = math.ceil(options.target * len(frame) - 1e-9), 0
    for labels, image_id in enumerate(run.order, start=1):
        if met >= needed:
            return labels - 1
        met += image_id in frame
    return len(run.order)


def summarize(benchmark: list[dict[str, Any]], queries: list[dict[str, Any]], target: float) -> dict[str, Any]:
    """The benchmark claims over seeds and the per-query claims over (seed, query) runs, each with its held share and
    its 95% Clopper-Pearson interval and the labels beside the summed oracle's."""
    return {"target": target, "benchmark": _benchmark_summary(benchmark, target), "per_query": _query_summary(queries)}


def _held_share(held: int, total: int) -> dict[str, Any]:
    if not total:
        return {"held": 0, "of": 0}
    interval = binomtest(held, total).proportion_ci(confidence_level=0.95, method="exact")
    return {"held": held, "of": total, "share": round(held / total, 4),
            "interval": [round(interval.low, 4), round(interval.high, 4)]}  # fmt: skip


def _median_ratio(values: list[float]) -> float | None:
    return round(float(np.median(values)), 3) if values else None


def _ratios(
    rows: list[dict[str, Any]], top: str, bottom: str, confirming: str = "", target: float = 0.0
) -> list[float]:
    """Per row with both figures: `top` over `bottom`, plus (`confirming`) one label for each of the `target` share
    of that many positives the yardstick counts."""
    return [
        r[top] / (r[bottom] + (math.ceil(target * r[confirming]) if confirming else 0))
        for r in rows
        if r.get(top) is not None and r.get(bottom)
    ]


def _benchmark_summary(benchmark: list[dict[str, Any]], target: float) -> dict[str, Any]:
    certified = [r for r in benchmark if r["certified"]]
    return {
        "seeds": len(benchmark), "certified": len(certified),
        "held_when_certified": _held_share(sum(r["held"] for r in certified), len(certified)),
        "median_ratio_to_oracle": _median_ratio(_ratios(benchmark, "labels", "oracle")),
        "median_ratio_to_frame_oracle": _median_ratio(_ratios(benchmark, "labels", "frame_oracle")),
        "median_floor_ratio_to_oracle": _median_ratio(_ratios(benchmark, "floor", "oracle")),
        "median_ratio_to_floor": _median_ratio(_ratios(benchmark, "labels", "floor")),
        "median_ratio_to_least_floor": _median_ratio(_ratios([_with_least(r) for r in benchmark], "labels", "least")),
        # Each oracle plus its confirmations: one label for each positive it counts (a claim counts confirmed ones).
        "median_ratio_to_confirmed_oracle": _median(_ratios(benchmark, "labels", "oracle", "positives", target)),
        "median_ratio_to_confirmed_frame_oracle": _median(
            _ratios(benchmark, "labels", "frame_oracle", "in_frames", target)
        ),
        "median_checks": float(np.median([r["checks"] for r in benchmark])) if benchmark else None,
        "median_micro_recall": _median([r["micro_recall"] for r in benchmark]),
    }  # fmt: skip


def _by_seed(records: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_seed.setdefault(record["seed"], []).append(record)
    return by_seed


def _with_least(record: dict[str, Any]) -> dict[str, Any]:
    """The record with "least": the least of its floors at every tolerance measured (None where none certifies)."""
    floors = [f for f in record.get("floors", {}).values() if f]
    return {**record, "least": min(floors) if floors else None}


def _to_floor(rows: list[dict[str, Any]], floor: str = "floor") -> float:
    """The labels of the queries some valid check can certify over their floors (a query too small for one look has
    no floor)."""
    floored = [r for r in rows if r.get(floor)]
    return float(sum(r["labels"] for r in floored) / max(1, sum(r[floor] for r in floored)))


def _to_least(rows: list[dict[str, Any]], certified_only: bool = False) -> float:
    """_to_floor over each query's least floor (of the certified queries alone, `certified_only`)."""
    return _to_floor([_with_least(r) for r in rows if r["certified"] or not certified_only], "least")


def _query_summary(queries: list[dict[str, Any]]) -> dict[str, Any]:
    certified = [r for r in queries if r["certified"]]
    by_seed = _by_seed(queries)
    ratios = [sum(r["labels"] for r in rows) / max(1, sum(r["oracle"] for r in rows)) for rows in by_seed.values()]
    floors = [_to_floor(rows) for rows in by_seed.values()]
    return {
        "runs": len(queries), "certified": len(certified),
        "false_claims": _held_share(sum(not r["held"] for r in certified), len(certified)),
        "median_ratio_to_oracle": _median_ratio(ratios),
        "median_ratio_to_floor": _median_ratio(floors),
        "median_ratio_to_least_floor": _median_ratio([_to_least(rows) for rows in by_seed.values()]),
        # The same over the certified queries only: a query the team left uncertified after its tries spent less
        # than its floor (a cheap give-up, not a claim), and lowers the ratio above (issue 62, per query through
        # the API: 1.48x with them, 1.54x without, on the simulator's twelve seeds there).
        "median_ratio_to_least_floor_certified": _median_ratio([_to_least(rows, True) for rows in by_seed.values()]),
        "without_floor": sum(1 for r in queries if not r.get("floor")),
    }  # fmt: skip


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 4) if values else None


def simulate(
    worlds: Iterable[tuple[int, World]], options: Settings, progress: Callable[[int, int], None] | None = None,
    per_query: bool = True, total: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """Both claims over every (seed, world) (`total` of them, for the progress): the benchmark's once a seed, each
    query's own once a query."""
    benchmark: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for done, (seed, world) in enumerate(worlds, start=1):  # one world at a time: 250 queries' take 65 MB each
        benchmark.append(benchmark_claim(world, seed, options))
        if per_query:
            queries.extend({**record, "seed": seed} for record in per_query_claims(world, seed, options))
        if progress:
            progress(done, total)
    return {**summarize(benchmark, queries, options.target), "settings": options.__dict__, "benchmark_runs": benchmark,
            "query_runs": queries}  # fmt: skip


def format_summary(result: dict[str, Any]) -> str:
    """The two claims' figures as the command prints them."""
    target = round(100 * result["target"])
    pooled, each = result["benchmark"], result["per_query"]
    held = pooled["held_when_certified"]
    lines = [
        f"benchmark claim (micro-recall >= {target}%): {pooled['certified']}/{pooled['seeds']} seeds certified, "
        f"{held.get('held', 0)} of {held.get('of', 0)} held; median {pooled['median_checks']} checks, median "
        f"micro-recall {pooled['median_micro_recall']}, {pooled['median_ratio_to_oracle']}x the summed oracle labels "
        f"({pooled['median_ratio_to_frame_oracle']}x an oracle's to the target over the same frames; with their "
        f"confirmations {pooled.get('median_ratio_to_confirmed_oracle')}x and "
        f"{pooled.get('median_ratio_to_confirmed_frame_oracle')}x); {pooled.get('median_ratio_to_floor')}x the valid "
        f"clairvoyant floor, itself {pooled.get('median_floor_ratio_to_oracle')}x the oracle "
        f"({pooled.get('median_ratio_to_least_floor')}x the least floor over the tolerances measured)",
    ]
    if each["runs"]:
        wrong = each["false_claims"]
        lines.append(
            f"per-query claims (recall >= {target}%): {each['certified']}/{each['runs']} certified, {wrong['held']} "
            f"false ({wrong.get('share', 0):.3f}, 95% CI {wrong.get('interval', ['-', '-'])[0]}-"
            f"{wrong.get('interval', ['-', '-'])[1]}), {each['median_ratio_to_oracle']}x the summed oracle labels, "
            f"{each.get('median_ratio_to_floor')}x the valid floor of the queries that have one "
            f"({each.get('without_floor')} have none: too few positives for one look; "
            f"{each.get('median_ratio_to_least_floor')}x the least floor over the tolerances measured; "
            f"{each.get('median_ratio_to_least_floor_certified')}x over the certified queries alone)"
        )
    return "\n".join(lines)


def _per_seed_ratios(fresh: list[dict[str, Any]], two: list[dict[str, Any]]) -> list[float]:
    """Per seed of `fresh`'s per-query runs, their labels over `two`'s (NaN where `two` spent none)."""
    ratios = []
    for seed in sorted({r["seed"] for r in fresh}):
        a = sum(r["labels"] for r in fresh if r["seed"] == seed)
        b = sum(r["labels"] for r in two if r["seed"] == seed)
        ratios.append(a / b if b else float("nan"))
    return ratios


def _benchmark_comparison(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    ratios = [a["labels"] / b["labels"] for a, b in pairs if b["labels"]]
    return (
        f"benchmark claim: one fresh look costs a median {np.median(ratios):.2f}x the labels of the two looks of "
        f"before ({min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} seeds); certified "
        f"{sum(a['certified'] for a, _ in pairs)} vs {sum(b['certified'] for _, b in pairs)}, held "
        f"{sum(a['held'] for a, _ in pairs if a['certified'])} vs "
        f"{sum(b['held'] for _, b in pairs if b['certified'])}"
    )


def format_comparison(fresh: dict[str, Any], two: dict[str, Any]) -> str:
    """One line per claim: the labels one fresh look costs beside the two looks of before issue 62, same worlds and
    seeds, as medians of the per-seed ratios."""
    lines = []
    if pairs := list(zip(fresh["benchmark_runs"], two["benchmark_runs"], strict=True)):
        lines.append(_benchmark_comparison(pairs))
    if per_seed := _per_seed_ratios(fresh["query_runs"], two["query_runs"]):
        lines.append(
            f"per-query claims: one fresh look costs a median {np.median(per_seed):.2f}x the labels of the two looks "
            f"of before; certified {sum(r['certified'] for r in fresh['query_runs'])} vs "
            f"{sum(r['certified'] for r in two['query_runs'])} of {len(fresh['query_runs'])}"
        )
    return "\n".join(lines)
