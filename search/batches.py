"""The next batch to label under a ranking that learns: what keeps it helpful when the annotator makes
mistakes and the collection is full of near-duplicates, and never much worse than the plain text order.

Pure functions over numpy arrays and a small Collection interface (the engine's index or the simulator's
exact scores), so the labeling page, the candidates API and `simulate_labeling` run the same code.

Two rules on top of the learned ranking (search/strategies.py):

* **Near-duplicate stacks.** Candidates near-identical (cosine >= NEAR_DUPLICATE) to a better one form a
  stack behind it. Once the annotator has called a stack's look-alikes not relevant (at least as often as
  relevant), the stack gives one image a batch and the rest waits: a crowd of 1,200 look-alikes above
  every positive then costs one batch and one label a batch after, not 1,200 labels (labeling negatives
  moves a fitted vector very little, since they are nearly one point). Any other stack comes whole, as
  the plain ranking has it. Waiting images stay unlabeled and ranked: postponed, never hidden; the
  labeling page shows them as a stack that one key labels.

* **The text order as a floor.** The text order's frontier is the score of its best unlabeled image: the
  labeled images above it are where the text order alone would be by now, and its last WINDOW of them
  say what it yields there. The annotator's last answers on images below the frontier say what the
  learned ranking yields on its own. While that is more, the learned ranking gets the batch but a
  PROBE_SHARE for the text order; otherwise (a tie included, as when neither has found anything for a
  while) the text order gets all but a PROBE_SHARE. Cost: PROBE_SHARE of the labels while the learned
  ranking is the better one; when it is the worse, the text order still advances at 1 - PROBE_SHARE of
  its pace, so in steady state a learned ranking costs about 1 / (1 - PROBE_SHARE) = 1.11 times the text
  order's labels, plus the batches it takes to notice (bench/RESULTS.md measures both). The ranking
  with the larger share picks first, exactly as it would alone; the other takes its share from what is
  left (else a learned ranking agreeing with the text order would take the text order's next positives
  for its small share and push the text order's share deeper); before any label the batch is the text
  order's alone.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

from . import lookalikes

# Cosine similarity above which two images are near-duplicates, by default: the collection's own rule is
# search/lookalikes.py's (the engine passes it as `threshold`).
NEAR_DUPLICATE = lookalikes.NEAR_DUPLICATE
PROBE_SHARE = 0.1
WINDOW = 100
# Candidates examined per image of the batch before looking deeper (x4 each time, up to MAX_DEPTH).
DEPTH_PER_PICK = 4
MAX_DEPTH = 10_000
# Look-alikes named behind one image of a batch at most (one key on the labeling page labels them all).
STACK_LIMIT = 200
LEARNED, TEXT = "learned", "text"


class Collection(Protocol):
    def top(self, vector: np.ndarray, depth: int, exclude: set[int]) -> list[int]:
        """The `depth` best images for `vector` (inner product), best first, none of `exclude`."""

    def vectors(self, image_ids: Sequence[int]) -> np.ndarray:
        """The vectors of `image_ids`, one row each, in that order (float32, unit rows)."""


@dataclass
class Pick:
    """An image of the batch, the ranking that proposed it, and its near-duplicates that wait behind it."""

    image_id: int
    source: str
    stack: list[int] = field(default_factory=list)


def yield_of(answers: Sequence[bool]) -> float:
    """The relevant share of `answers`, smoothed toward 1/2 by one answer each way (the Beta(1, 1) posterior
    mean), so that two answers do not read as certainty."""
    return (sum(answers) + 1) / (len(answers) + 2)


def learned_share(learned_answers: Sequence[bool], text_answers: Sequence[bool]) -> float:
    """The share of the batch the learned ranking gets: all but the probe while its own last answers
    (images the text order has not reached) yield more than the text order's last ones, only the probe
    otherwise. Before any answer the annotator's choice leads; a tie after (no relevant found either way,
    as behind a crowd of look-alikes) goes to the text order."""
    if not learned_answers and not text_answers:
        return 1 - PROBE_SHARE
    return 1 - PROBE_SHARE if yield_of(learned_answers) > yield_of(text_answers) else PROBE_SHARE


def near_duplicate_stacks(vectors: np.ndarray, *, leaders_wanted: int, threshold: float = NEAR_DUPLICATE) -> np.ndarray:
    """For each row (candidates best first), the row of its stack's leader: the first better row it is
    near-identical to, else itself. Greedy leader clustering (one pass, leaders only: no chains of
    near-near-duplicates). Stops once `leaders_wanted` leaders are found; rows after are -1."""
    leader_of = np.full(len(vectors), -1, dtype=np.int64)
    leaders: list[int] = []
    block = 256
    for start in range(0, len(vectors), block):
        rows = vectors[start : start + block]
        to_known = rows @ vectors[leaders].T if leaders else np.empty((len(rows), 0), dtype=np.float32)
        within = rows @ rows.T
        new: list[int] = []  # leaders found in this block, as offsets in it
        for offset in range(len(rows)):
            if to_known.shape[1] and to_known[offset].max() >= threshold:
                leader_of[start + offset] = leaders[int(to_known[offset].argmax())]
                continue
            match = next((j for j in new if within[offset, j] >= threshold), None)
            if match is not None:
                leader_of[start + offset] = start + match
                continue
            leader_of[start + offset] = start + offset
            new.append(offset)
            if len(leaders) + len(new) >= leaders_wanted:
                return leader_of
        leaders.extend(start + offset for offset in new)
    return leader_of


def held_back(leaders: np.ndarray, relevant: np.ndarray, not_relevant: np.ndarray, threshold: float) -> np.ndarray:
    """For each stack leader (rows), whether its stack waits: the annotator has called its labeled
    look-alikes (cosine >= threshold) not relevant at least as often as relevant, and at least once."""
    if not len(leaders) or not len(not_relevant):
        return np.zeros(len(leaders), dtype=bool)
    no = np.count_nonzero(leaders @ not_relevant.T >= threshold, axis=1)
    yes = np.count_nonzero(leaders @ relevant.T >= threshold, axis=1) if len(relevant) else 0
    held: np.ndarray = (no >= 1) & (no >= yes)
    return held


def stacked_picks(
    collection: Collection,
    vector: np.ndarray,
    wanted: int,
    exclude: set[int],
    relevant: np.ndarray,
    not_relevant: np.ndarray,
    source: str = LEARNED,
    threshold: float = NEAR_DUPLICATE,
    first: list[int] | None = None,
) -> list[Pick]:
    """The next `wanted` images of the ranking by `vector`, none of `exclude`, best first. A stack the
    annotator has called not relevant (held_back) gives one image, its other candidates waiting behind it;
    any other stack comes whole. Looks deeper (x4) while the candidates examined hold too few; past
    MAX_DEPTH, the waiting images fill the batch in rank order."""
    if wanted <= 0:
        return []
    depth = wanted * DEPTH_PER_PICK
    while True:
        # `first`: the ranking's best candidates, searched by the caller; used when they reach this deep.
        if first is not None and len(first) >= min(depth, MAX_DEPTH):
            ids = first[: min(depth, MAX_DEPTH)]
        else:
            ids = collection.top(vector, min(depth, MAX_DEPTH), exclude)
        first = None
        picks, waiting = _stacked(collection, ids, wanted, relevant, not_relevant, source, threshold)
        if len(picks) >= wanted or len(ids) < min(depth, MAX_DEPTH) or depth >= MAX_DEPTH:
            picks = picks[:wanted]
            filling = waiting[: wanted - len(picks)]  # shown on their own now, so no longer behind a stack
            for pick in picks:
                pick.stack = [image_id for image_id in pick.stack if image_id not in set(filling)]
            return picks + [Pick(image_id, source) for image_id in filling]
        depth *= 4


def _stacked(
    collection: Collection, ids: list[int], wanted: int, relevant: np.ndarray, not_relevant: np.ndarray, source: str,
    threshold: float,
) -> tuple[list[Pick], list[int]]:  # fmt: skip
    """The ranked `ids` as picks, each stack's look-alikes behind its leader where the annotator called the stack
    not relevant (held_back), and those waiting images in rank order."""
    rows = collection.vectors(ids)
    leader_of = near_duplicate_stacks(rows, leaders_wanted=wanted, threshold=threshold)
    examined = leader_of[leader_of >= 0]
    stacked = np.unique(examined[examined != np.flatnonzero(leader_of >= 0)])  # leaders with look-alikes
    waits = dict(zip(stacked.tolist(), held_back(rows[stacked], relevant, not_relevant, threshold), strict=True))
    picks: list[Pick] = []
    by_leader: dict[int, Pick] = {}
    waiting: list[int] = []
    for row, leader in enumerate(examined.tolist()):
        if waits.get(leader, False) and leader != row:
            if len(by_leader[leader].stack) < STACK_LIMIT:
                by_leader[leader].stack.append(ids[row])
            waiting.append(ids[row])
            continue
        pick = Pick(ids[row], source)
        picks.append(pick)
        by_leader.setdefault(leader, pick)
    return picks, waiting


def compose(
    collection: Collection,
    *,
    learned: np.ndarray,
    text: np.ndarray | None,
    k: int,
    exclude: set[int],
    relevant: np.ndarray,
    not_relevant: np.ndarray,
    recent: Sequence[tuple[int, bool]],
    threshold: float = NEAR_DUPLICATE,
) -> list[Pick]:
    """The next `k` images to label: the learned ranking's and the text order's (stacked_picks) (the same
    stack rule), interleaved in the shares learned_share sets. `exclude`: the labeled images and any others
    not to show; `relevant`, `not_relevant`: the labeled images' vectors (rows, any order); `recent`: the
    annotator's last answers on this query, (image id, relevant), oldest first.
    With no text (a ranking from examples only) the batch is the learned ranking's alone."""
    if text is None:
        return stacked_picks(collection, learned, k, exclude, relevant, not_relevant, threshold=threshold)
    text = text.astype(np.float32)
    text_order = collection.top(text, k * DEPTH_PER_PICK, exclude)  # one search: the frontier and the probes
    if not text_order:
        return []
    if float(learned @ text) >= (1 - 1e-6) * float(np.linalg.norm(learned) * np.linalg.norm(text)):
        # Nothing learned yet (no labels, no examples): the two rankings are one, the text order.
        return stacked_picks(
            collection, text, k, exclude, relevant, not_relevant, TEXT, threshold=threshold, first=text_order
        )
    share = _share_now(collection, text, text_order, relevant, not_relevant, recent)
    from_text = max(1, round(k * (1 - share))) if k > 1 else 0
    # The ranking with the larger share picks first, exactly as it ranks alone; the other takes its share
    # from what is left (asked for a whole batch, so that it fills in if the first runs out).
    lead, other = _Share(learned, LEARNED, k - from_text), _Share(text, TEXT, from_text, text_order)
    if other.wanted > lead.wanted:
        lead, other = other, lead
    first = stacked_picks(
        collection, lead.vector, lead.wanted, exclude, relevant, not_relevant, lead.source, threshold,
        first=lead.searched,
    )  # fmt: skip
    taken = {pick.image_id for pick in first} | {image_id for pick in first for image_id in pick.stack}
    searched = None if other.searched is None else [i for i in other.searched if i not in taken]
    second = stacked_picks(
        collection, other.vector, k, exclude | taken, relevant, not_relevant, other.source, threshold, first=searched
    )
    batch = interleave(first, second[: other.wanted])
    return batch + second[other.wanted : other.wanted + k - len(batch)]  # the first ran out: the second fills


def _share_now(
    collection: Collection, text: np.ndarray, text_order: list[int], relevant: np.ndarray, not_relevant: np.ndarray,
    recent: Sequence[tuple[int, bool]],
) -> float:  # fmt: skip
    """The learned ranking's share of the next batch (learned_share), from the answers on each side of the text
    order's frontier: the score of its best unlabeled image. Every labeled image above it is where the text order
    alone would have been by now; those below, the learned ranking's own finds."""
    frontier = float(collection.vectors(text_order[:1])[0] @ text)
    scores = np.vstack([relevant, not_relevant]) @ text
    answers = [True] * len(relevant) + [False] * len(not_relevant)
    prefix = np.flatnonzero(scores >= frontier)
    text_answers = [answers[i] for i in prefix[np.argsort(-scores[prefix], kind="stable")][-WINDOW:]]
    recent = list(recent)[-WINDOW:]  # the annotator's last WINDOW answers (the simulator passes as many)
    recent_scores = collection.vectors([image_id for image_id, _ in recent]) @ text if recent else np.empty(0)
    learned_answers = [answer for (_, answer), score in zip(recent, recent_scores, strict=True) if score < frontier]
    return learned_share(learned_answers[-WINDOW:], text_answers)


class _Share(NamedTuple):
    """One ranking's part of a batch: its vector, its name, how many images it gets, and its candidates
    when already searched (the text order's, best first)."""

    vector: np.ndarray
    source: str
    wanted: int
    searched: list[int] | None = None


def interleave(first: list[Pick], second: list[Pick]) -> list[Pick]:
    """The two lists merged, each in its own order, the shorter one's items spread evenly through the
    longer's (item j at position 1 + j * total / len(shorter)): the longer's best opens the batch and the
    shorter's best follows it, so an annotator who stops part-way has seen the best of both in their
    shares, and a ranking with a small share shows its best at once rather than half a share in."""
    major, minor = (first, second) if len(first) >= len(second) else (second, first)
    total = len(major) + len(minor)
    places = {min(total - 1, 1 + int(j * total / len(minor))) for j in range(len(minor))} if minor else set()
    rest_major, rest_minor = iter(major), iter(minor)
    return [next(rest_minor) if position in places else next(rest_major) for position in range(total)]
