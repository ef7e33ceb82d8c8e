"""Stopping rules measured against the truth: does each rule's "done" hold, and what does it cost?

A team labels a query of a synthetic world (evaluation/worlds.py: near-duplicate crowds, tiny R, scattered
positives) down the learned ranking (the labeling page's batch rules), every annotator wrong on a `noise` share of
the images (each on their own images: the mistakes of two annotators are independent). Three rules watch the same
labeling and say when to stop:

  check      Quire's completeness check (annotator.completeness.checks), run as the tool ran it for issue 51's
             figures (evaluation/benchmark_sim.py follows the tool's advice of now): when the last
             200 labels look dry (at most 10% judged relevant; after a failed check, no sooner than as many labels
             as it sampled), draw a check over the frame (the top `depth` of the text and learned rankings): a
             sample of its images that are not its positives, each judged before getting a second blind look;
             the frame's positives confirmed by a second blind judgment (the adjudicator's where two disagree),
             every sampled image looked at twice and adjudicated where a look says relevant, the claim tested at
             the looks' miss-rate bound and the k-th check at its share of alpha (certify.tested_at); not
             certified: label on and check again later.
  estimate   the old point estimate (annotator/progress/stopping.py), stopping when it first says the target
  inquire    INQUIRE's rule: 100 not-relevant labels in a row

Per run: each rule's true recall where it stopped (the check's over its frame; the others' over the collection,
which is what they speak of) and its labels spent (the check's include its samples, second judgments and
adjudications), beside an oracle that stops the moment true recall reaches the target.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binomtest

from annotator.facade import (
    ADJUDICATOR,
    DEFAULT_DEPTH_STEP,
    DEFAULT_MIN_DEPTH,
    MISS_RATE,
    PER_LOOK,
    check_size,
    claim,
    pair_miss_rate,
    tested_at,
)
from search.facade import strategy_vector

from .simulation import annotator_mistakes, world_estimator, world_ranker
from .worlds import World

DRY_WINDOW = 200  # labels a check looks back over before it is drawn
DRY_YIELD = 0.10  # at most this share of them judged relevant
INQUIRE_RUN = 100


class NoFreshLook(Exception):
    """A sampled image everyone on the team has judged: no look after the draw can be fresh, so the tool's check
    waits for someone new (annotator.completeness.checks); a simulated check stops there, undecided."""


@dataclass
class Team:
    """Who judged what: the reviewer's judgment of every labeled image, the second annotator's of the confirmed
    ones, the adjudicator's where those two disagree. Each answers relevant when the truth says so, unless it is
    one of their mistakes."""

    truth: set[int]
    mistaken: tuple[Callable[[int], bool] | None, ...]
    first: dict[int, bool] = field(default_factory=dict)
    second: dict[int, bool] = field(default_factory=dict)
    third: dict[int, bool] = field(default_factory=dict)
    # Looks at re-checked pairs the reviewer and the second annotator had both judged (look_fresh): from the further
    # annotators (mistaken[3:]) in turn, then the adjudicator (mistaken[2]); and the decisions of pairs decided
    # before (a re-check's positive look is decided again, as the tool's queue asks).
    later: dict[int, set[int]] = field(default_factory=dict)
    later_adjudications: int = 0

    def _later_lookers(self) -> list[int]:
        return [*range(3, len(self.mistaken)), 2]

    def _says(self, who: int, image_id: int) -> bool:
        wrong = self.mistaken[who]
        return (image_id in self.truth) != bool(wrong and wrong(image_id))

    def judge(self, image_id: int) -> bool:
        self.first[image_id] = self._says(0, image_id)
        return self.first[image_id]

    def confirm(self, image_id: int) -> None:
        """A second, blind judgment; the adjudicator's where it disagrees with the first."""
        if image_id in self.second:
            return
        self.second[image_id] = self._says(1, image_id)
        if self.second[image_id] != self.first[image_id]:
            self.third[image_id] = self._says(2, image_id)

    def look_twice(self, image_id: int) -> bool:
        """A sampled image as checks drawn before issue 62 saw it: two blind looks (the review's, if it judged the
        image, is the first), and the adjudicator's decision wherever a look said relevant. Whether it counts."""
        if image_id not in self.first:
            self.judge(image_id)
        if image_id not in self.second:
            self.second[image_id] = self._says(1, image_id)
        if self.first[image_id] or self.second[image_id]:
            self.third[image_id] = self._says(2, image_id)
            return self.third[image_id]
        return False

    def look_fresh(self, image_id: int) -> bool:
        """A sampled image as a check sees it now (issue 62; annotator.completeness.checks): one look given after the
        draw by an annotator who had not judged it (the review's judgment is not counted: a positive still missing
        is one a look already missed), and the adjudicator's decision where it says relevant. Whether it counts."""
        if image_id not in self.first:
            said = self.judge(image_id)
        elif image_id not in self.second:  # the reviewer judged it: the second annotator's look
            said = self.second[image_id] = self._says(1, image_id)
        else:  # both judged it (a re-check's pair an earlier check sampled): the next who has not, as the tool asks
            who = next((w for w in self._later_lookers() if image_id not in self.later.setdefault(w, set())), None)
            if who is None:
                raise NoFreshLook(f"everyone on the team has judged image {image_id}")
            self.later[who].add(image_id)
            said = self._says(who, image_id)
        if said:
            self.later_adjudications += image_id in self.third  # decided before: a second decision, counted
            self.third[image_id] = self._says(2, image_id)  # the final label, as the tool's adjudication sets it
            return self.third[image_id]
        return False

    def adjudicate(self, image_id: int) -> bool:
        """A positive one judgment calls so, confirmed (or overturned) by the adjudicator, as the tool's queue does."""
        if image_id not in self.third:
            self.third[image_id] = self._says(2, image_id)
        return self.third[image_id]

    def final(self, image_id: int) -> bool:
        if image_id in self.third:
            return self.third[image_id]
        return self.first[image_id]

    @property
    def spent(self) -> int:
        later = sum(len(images) for images in self.later.values()) + self.later_adjudications
        return len(self.first) + len(self.second) + len(self.third) + later

    def found(self, within: Iterable[int] | None = None) -> int:
        """True positives whose final label is relevant (within `within`, else anywhere)."""
        pool = self.truth if within is None else self.truth.intersection(within)
        return sum(1 for image_id in pool if image_id in self.first and self.final(image_id))


@dataclass
class Settings:
    noise: float = 0.05
    target: float = 0.9
    confidence: float = 0.95
    depth: int = 0  # 0: the tool's default frame for the query (annotator.completeness.frames.default_spec)
    expert_noise: float = 0.0  # the adjudicator's share of mistakes
    batch: int = 50
    max_review: int = 3000
    estimate: bool = True
    design: str = "fresh"  # DESIGNS: how a check looks at its sample


# How a check looks at its sampled images: "fresh", one look given after the draw (the tool since issue 62), tested at
# the per-look bound with the adjudicator's allowance; "two", the check before issue 62, two looks of which the
# review's judgment was one, tested at 0.5%.
DESIGNS = ("fresh", "two")


def look(team: Team, image_id: int, design: str) -> bool:
    """A sampled image looked at as `design` does it: whether it counts as a positive."""
    return team.look_fresh(image_id) if design == "fresh" else team.look_twice(image_id)


def miss_rate(design: str) -> float:
    """The share of sampled positives `design`'s test takes its looks to lose."""
    return pair_miss_rate(PER_LOOK, 1, ADJUDICATOR) if design == "fresh" else MISS_RATE


def _frame(world: World, query_id: int, team: Team, depth: int) -> np.ndarray:
    """The top `depth` of the text ranking and of the learned one, as the tool's `top` frame."""
    relevant = [i for i in team.first if team.final(i)]
    not_relevant = [i for i in team.first if not team.final(i)]
    text = world.texts[query_id]
    learned = strategy_vector("feedback", text, world.vectors[relevant], world.vectors[not_relevant])
    ids = []
    for vector in (text, learned):
        scores = world.vectors @ np.asarray(vector, dtype=np.float32)
        ids.append(np.argpartition(-scores, depth - 1)[:depth])
    return np.unique(np.concatenate(ids))


def default_depth(judged: int) -> int:
    """The tool's default frame depth for a query with `judged` images judged (frames.default_spec)."""
    depth = -(-2 * judged // DEFAULT_DEPTH_STEP) * DEFAULT_DEPTH_STEP
    return max(DEFAULT_MIN_DEPTH, depth)


def default_frame(world: World, query_id: int, team: Team) -> np.ndarray:
    """The tool's default frame (frames.default_spec, kind `reviewed`): the images judged and the top
    default_depth(judged) of the text and learned rankings."""
    top = _frame(world, query_id, team, default_depth(len(team.first)))
    return np.union1d(top, np.asarray(list(team.first), dtype=np.int64))


def _check(
    world: World, query_id: int, team: Team, ordinal: int, options: Settings, rng: np.random.Generator,
    frame: np.ndarray,
) -> dict[str, Any]:  # fmt: skip
    """One completeness check as the tool draws and decides it (annotator.completeness.checks) over the query's frozen
    `frame`: its single-judgment positives confirmed by the adjudicator first and counted found; a sample of the
    rest sized to certify on one positive, every sampled image looked at as `options.design` says and decided by
    the adjudicator wherever a look says relevant; the claim tested at the looks' miss-rate bound."""
    found_at_draw = _confirmed_in(team, frame)
    population = sorted(set(frame.tolist()) - set(found_at_draw))
    confidence = tested_at(options.confidence, ordinal)
    rate = miss_rate(options.design)
    size = check_size(len(found_at_draw), len(population), options.target, confidence, rate, tolerate=1)
    sample = rng.permutation(np.asarray(population, dtype=np.int64))[:size].tolist() if size else []
    positives = _looked_positives(team, sample, options.design)
    in_frame = len(team.truth.intersection(frame.tolist()))
    decided = (
        claim(len(found_at_draw), len(population), len(sample), positives, options.target, confidence, rate)
        if positives is not None and size is not None  # None: no sample could certify, or nobody could look
        else None
    )
    positives = positives or 0
    return {
        "certified": bool(decided and decided.certified),
        "bound": decided.recall_lower_bound if decided else None,
        "frame_positives": in_frame,
        "frame_recall": team.found(frame.tolist()) / in_frame if in_frame else 1.0,
        "sample": len(sample),
        "positives": positives,
        "found": len(found_at_draw),
    }


def _confirmed_in(team: Team, frame: np.ndarray) -> list[int]:
    """The frame's single-judgment positives, confirmed by the adjudicator first: the positives found at the draw."""
    for image_id in frame.tolist():
        if image_id in team.first and team.final(image_id):
            team.adjudicate(image_id)
    return [int(i) for i in frame if int(i) in team.first and team.final(int(i))]


def _looked_positives(team: Team, sample: list[int], design: str) -> int | None:
    """The sample's positives as its looks count them; None when this team cannot decide the check (NoFreshLook)."""
    try:
        return sum(1 for image_id in sample if look(team, image_id, design))
    except NoFreshLook:
        return None


def run(world: World, query_id: int, seed: int, options: Settings) -> dict[str, Any]:
    """One (query, seed): the labeling, and where each rule stopped with its true recall and labels spent."""
    noises = (options.noise, options.noise, options.expert_noise)
    mistaken = tuple(annotator_mistakes(noise, query_id, seed * 3 + who) for who, noise in enumerate(noises))
    labeling = _Labeling(world, query_id, Team(world.positives[query_id], mistaken), options, seed)
    while len(labeling.order) < options.max_review and not _all_stopped(labeling.stops, options):
        labeling.label_a_batch()
        labeling.watch_the_rules()
        labeling.check_when_dry()
    truth = world.positives[query_id]
    return {"query_id": query_id, "seed": seed, "kind": world.kinds[query_id], "positives": len(truth),
            "stops": labeling.stops}  # fmt: skip


class _Labeling:
    """One query's labeling as `run` drives it: the review's order, each rule's stop, and the checks."""

    def __init__(self, world: World, query_id: int, team: Team, options: Settings, seed: int) -> None:
        self.world, self.query_id, self.team, self.options = world, query_id, team, options
        self.rank = world_ranker(world, query_id)
        self.estimate = world_estimator(world, query_id) if options.estimate else None
        self.rng = np.random.default_rng([seed, query_id])
        self.order: list[int] = []  # the review's labels in order
        self.stops: dict[str, Any] = {}
        self.frame: np.ndarray | None = None  # frozen at the first check
        self.checks, self.next_check = 0, DRY_WINDOW

    def label_a_batch(self) -> None:
        """The next batch down the learned ranking (the labeling page's batch rules), each judged once."""
        team = self.team
        relevant = [i for i in team.first if team.final(i)]
        not_relevant = [i for i in team.first if not team.final(i)]
        recent = [(i, team.first[i]) for i in self.order[-20:]]
        batch = self.rank("feedback", relevant, not_relevant, list(team.first), self.options.batch, recent=recent)
        for image_id in batch:
            team.judge(image_id)
            self.order.append(image_id)

    def watch_the_rules(self) -> None:
        """Stop the oracle, INQUIRE's run and the old estimate where each first says the target is reached."""
        team, stops = self.team, self.stops
        recall = team.found() / len(team.truth)
        stop = {"labels": team.spent, "recall": recall}
        if "oracle" not in stops and recall >= self.options.target:
            stops["oracle"] = dict(stop)
        if "inquire" not in stops and _run_of_not_relevant(team, self.order) >= INQUIRE_RUN:
            stops["inquire"] = dict(stop)
        if "estimate" not in stops and self._estimate_reached():
            stops["estimate"] = dict(stop)

    def _estimate_reached(self) -> bool:
        """Whether the old recall estimate (when it is watched) says the target is reached."""
        if self.estimate is None:
            return False
        team = self.team
        said = self.estimate([i for i in team.first if team.final(i)], [i for i in team.first if not team.final(i)])
        return said is not None and said >= self.options.target

    def check_when_dry(self) -> None:
        """Draw a check when the ranking looks dry (or the review is over), over the frame frozen at the first."""
        dry = len(self.order) >= self.next_check and _yield(self.team, self.order) <= DRY_YIELD
        if "check" in self.stops or not (dry or len(self.order) >= self.options.max_review):
            return
        self.checks += 1
        if self.frame is None:  # frozen at the first check: the tool's default, or the depth asked for
            depth = self.options.depth
            team = self.team
            self.frame = (
                _frame(self.world, self.query_id, team, depth)
                if depth
                else default_frame(self.world, self.query_id, team)
            )
        result = _check(self.world, self.query_id, self.team, self.checks, self.options, self.rng, self.frame)
        # After a failed check, label on at least as many images as it sampled before checking again: a check that
        # meets positives says the ranking still holds some, and checking at once would pay again.
        self.next_check = len(self.order) + max(DRY_WINDOW, result["sample"])
        if result["certified"]:
            self.stops["check"] = {"labels": self.team.spent, "recall": result["frame_recall"], "checks": self.checks,
                                   **result}  # fmt: skip


def _all_stopped(stops: dict[str, Any], options: Settings) -> bool:
    wanted = {"oracle", "inquire", "check"} | ({"estimate"} if options.estimate else set())
    return wanted <= set(stops)


def _yield(team: Team, order: list[int]) -> float:
    return sum(team.first[i] for i in order[-DRY_WINDOW:]) / DRY_WINDOW


def _run_of_not_relevant(team: Team, order: list[int]) -> int:
    run = 0
    for image_id in reversed(order):
        if team.first[image_id]:
            break
        run += 1
    return run


def summary(runs: list[dict[str, Any]], options: Settings) -> dict[str, Any]:
    """Per rule: how many runs it stopped, the share whose true recall held the target (with its 95% Clopper-Pearson
    interval), the median and lowest true recall at the stop, median labels and the median ratio to the oracle's."""
    rules: dict[str, Any] = {}
    for rule in ("check", "estimate", "inquire", "oracle"):
        stopped = [r for r in runs if rule in r["stops"]]
        if not stopped:
            rules[rule] = {"runs": len(runs), "stopped": 0}
            continue
        recalls = np.array([r["stops"][rule]["recall"] for r in stopped])
        held = int(np.sum(recalls >= options.target - 1e-12))
        interval = binomtest(held, len(stopped)).proportion_ci(confidence_level=0.95, method="exact")
        ratios = [
            r["stops"][rule]["labels"] / r["stops"]["oracle"]["labels"] for r in stopped if "oracle" in r["stops"]
        ]
        rules[rule] = {
            "runs": len(runs),
            "stopped": len(stopped),
            "held": held,
            "held_share": round(held / len(stopped), 4),
            "held_interval": [round(interval.low, 4), round(interval.high, 4)],
            "median_recall": round(float(np.median(recalls)), 4),
            "lowest_recall": round(float(recalls.min()), 4),
            "median_labels": float(np.median([r["stops"][rule]["labels"] for r in stopped])),
            "median_ratio_to_oracle": round(float(np.median(ratios)), 3) if ratios else None,
        }
    return {"settings": options.__dict__, "rules": rules}


def simulate(
    worlds: Iterable[tuple[int, World]], options: Settings, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Every query of every (seed, world): the runs and their summary."""
    chosen = list(worlds)
    total = sum(len(world.positives) for _, world in chosen)
    runs = []
    for seed, world in chosen:
        for query_id in sorted(world.positives):
            runs.append(run(world, query_id, seed, options))
            if progress:
                progress(len(runs), total)
    return {**summary(runs, options), "runs": runs}


def format_summary(result: dict[str, Any]) -> str:
    target = round(100 * result["settings"]["target"])
    lines = [
        f"{'rule':<9} {'stopped':>8} {f'held {target}%':>9} {'share (95% CI)':>22} {'median recall':>14} "
        f"{'lowest':>7} {'labels':>7} {'vs oracle':>10}"
    ]
    for rule, row in result["rules"].items():
        if not row["stopped"]:
            lines.append(f"{rule:<9} {'0/' + str(row['runs']):>8}")
            continue
        low, high = row["held_interval"]
        ratio = row["median_ratio_to_oracle"]
        stopped = f"{row['stopped']}/{row['runs']}"
        share = f"{row['held_share']:.3f} ({low:.3f}-{high:.3f})"
        lines.append(
            f"{rule:<9} {stopped:>8} {row['held']:>9} {share:>22} {row['median_recall']:>14.3f} "
            f"{row['lowest_recall']:>7.3f} {row['median_labels']:>7.0f} {'' if ratio is None else f'{ratio:.2f}':>10}"
        )
    return "\n".join(lines)
