"""What the open completeness checks ask of a query's annotators, the query's own and the benchmark's: the images
still wanting a look (the labeling page's "completeness check" ranking and the API's candidates, strategy=check).
Each check is decided by the write that settles its last pair (annotator.completeness.checks.decide_if_complete).

Annotators who look at the same check at once are handed different stretches of its sample: each reads the pairs
that want a look from them, in the sample's random order, from a place of their own (`_from_place`): where they
left off; people who left off at the same place (they loaded and saved the same page at once) each a share of the
way along the stretch ahead of it; one who caught up with someone, less than a page behind them, and one who joins
people looking, halfway along the longest stretch that nobody is working through; before anyone looks, their share
of the query's assignees. So two who load a page together are not shown the same pairs and a look is not spent
twice, once the sample has a page for each. A check's sample is random in every stretch and it certifies only once
every pair has its looks (it fails early on positives counted, whichever pairs counted them), so the order the
pairs are looked in changes no decision.
"""

from bisect import bisect_left
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from annotator.completeness import checks
from annotator.completeness.sample_progress import fresh_since, progress_of
from annotator.labels.sealed import Writer
from annotator.models import Assignment, CompletenessCheck, Judgment, Query

# Who counts as looking at a check now: whoever saved a look at one of its pairs of the query this long ago or less.
WORKING_NOW = timedelta(minutes=15)


def candidates(query: Query, viewer: Writer, k: int, page: int | None = None) -> list[int]:
    """The images of `query`'s open check, then of the open benchmark check, that still want a look and that
    `viewer` has not judged, `k` of them, in the samples' random order read from the viewer's place in each
    (`_from_place`; `page`: how many the viewer has on screen at once, `k` unless said). Whether an image wants a
    look depends on how many judged it, never on what they said, so the order tells a blind judge nothing of the
    others' votes."""
    parts: list[tuple[CompletenessCheck, list[int], set[int]]] = []
    for check in (checks.open_check(query), checks.open_check()):
        if check is not None:
            now = progress_of(check, query)
            parts.append((check, now.order, set(now.second) | set(now.unjudged)))
    wanting = set().union(*(wanted for _, _, wanted in parts))
    mine = Judgment.objects.filter(query=query, image_id__in=list(wanting))
    mine = mine.filter(annotator=viewer) if viewer is not None else mine.filter(annotator__isnull=True)
    judged = set(mine.values_list("image_id", flat=True))
    chosen: list[int] = []
    for check, order, wanted in parts:
        taken = set(chosen)
        open_to_viewer = [i for i in order if i in wanted and i not in judged and i not in taken]
        chosen += _from_place(open_to_viewer, order, check, query, viewer, page or k)
    return chosen[:k]


def _from_place(
    mine: list[int], order: list[int], check: CompletenessCheck, query: Query, viewer: Writer, page: int
) -> list[int]:
    """`mine` (the pairs of `check`'s sample `order` that want a look from `viewer`, in that order) read from the
    viewer's place among them, round to their start: for one who has been looking (WORKING_NOW), just after their
    latest look, spread from there where others are (`_own_start`); for one who joins people looking, halfway along
    the longest stretch ahead of nobody; for the first to look, their place among the query's assignees
    (`assigned_place`), or the start. The places depend on who looked where, never on what anyone said, so the
    order tells a blind judge nothing of the others' votes."""
    if viewer is None or not mine:
        return mine
    wanted = set(mine)
    at = [n for n, image_id in enumerate(order) if image_id in wanted]
    # Each person's place in `order` as a place among `mine`: the first of mine at or after it.
    on_mine = {person: bisect_left(at, place) % len(mine) for person, place in places(check, query, order).items()}
    others = {person: index for person, index in on_mine.items() if person != viewer.pk}
    if viewer.pk in on_mine:
        start = _own_start(on_mine[viewer.pk], viewer.pk, others, len(mine), page)
    elif others:
        start = halfway_along_the_longest_stretch(sorted(set(others.values())), len(mine))
    else:
        start = bisect_left(at, assigned_place(query, viewer, len(order))) % len(mine)
    return mine[start:] + mine[:start]


def _own_start(place: int, viewer_id: int, others: dict[int, int], size: int, page: int) -> int:
    """Where one who has been looking goes on from, `place` their own (just after their latest look) and `others`
    the other people's ({person: place}), in a circle of `size`: people at the same place (who loaded and saved the
    same page at once) spread along the stretch ahead of it, the i-th of g by user id i/g of the way; the one who
    stays, if someone else works less than `page` places ahead, goes halfway along the longest stretch ahead of
    nobody; else the place itself."""
    together = sorted([viewer_id, *(person for person, index in others.items() if index == place)])
    stretch = min(((index - place) % size for index in others.values() if index != place), default=size)
    if (share := together.index(viewer_id)) > 0:
        return (place + share * stretch // len(together)) % size
    if stretch < min(page, size):
        return halfway_along_the_longest_stretch(sorted(set(others.values())), size)
    return place


def assigned_place(query: Query, viewer: User, size: int) -> int:
    """Where `viewer` starts a check nobody is looking at yet: the k-th of the m people assigned to `query` (by user
    id) k/m of the way in, so a team opening a fresh check together spreads out at once; anyone else at the start."""
    team = list(Assignment.objects.filter(query=query).order_by("annotator_id").values_list("annotator_id", flat=True))
    return team.index(viewer.pk) * size // len(team) if viewer.pk in team else 0


def places(check: CompletenessCheck, query: Query, order: list[int]) -> dict[int, int]:
    """{person: the place in `order` just after their latest look at `check`'s pairs of `query`}, for the people who
    gave one in the last WORKING_NOW (reads only)."""
    since = timezone.now() - WORKING_NOW
    drawn = fresh_since(check)
    if drawn is not None and drawn > since:
        since = drawn
    pairs = check.images.filter(query=query).values("image_id")
    # When each first judged a pair, not when they last changed it: a changed vote moves nobody's place.
    recent = Judgment.objects.filter(query=query, image_id__in=pairs, created_at__gte=since, annotator__isnull=False)
    place = {image_id: n for n, image_id in enumerate(order)}
    latest: dict[int, tuple[Any, int]] = {}
    for person, image_id, when in recent.values_list("annotator_id", "image_id", "created_at"):
        mark = (when, place.get(image_id, -1))  # a batch saved at once: its last pair in the sample's order
        if person not in latest or mark > latest[person]:
            latest[person] = mark
    return {person: (at + 1) % len(order) for person, (_, at) in latest.items()}


def halfway_along_the_longest_stretch(starts: list[int], size: int) -> int:
    """The place halfway along the longest stretch between consecutive `starts` (sorted places in a circle of
    `size`), counted from the stretch's start: where one joining people who go on from `starts` meets nobody for
    longest."""
    stretches = [((starts[(n + 1) % len(starts)] - start - 1) % size + 1, start) for n, start in enumerate(starts)]
    length, start = max(stretches, key=lambda stretch: (stretch[0], -stretch[1]))
    return (start + length // 2) % size


def any_open(query: Query) -> bool:
    """Whether a check asks anything of `query`'s annotators (its own, or the benchmark's with pairs of it)."""
    pooled = checks.open_check()
    return checks.open_check(query) is not None or (pooled is not None and pooled.images.filter(query=query).exists())
