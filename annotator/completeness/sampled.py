"""What the open completeness checks ask of a query's annotators, the query's own and the benchmark's: the images
still wanting a look (the labeling page's "completeness check" ranking and the API's candidates, strategy=check).
Each check is decided by the write that settles its last pair (annotator.completeness.checks.decide_if_complete).

Annotators who look at the same check at once are handed different stretches of its sample: each reads the pairs
that want a look from them, in the sample's random order, from a place of their own (`_own_stretch`): where they
left off; people who left off at the same place (two who loaded and saved the same page at once, or one who caught
up with someone) each a share of the way along the stretch ahead of it; one who joins people looking, halfway along
the longest stretch that nobody is working through; before anyone looks, their share of the query's assignees, or
asked for their share, a place of their own (`own_place`). The labeling page hands each their own stretch alone, up
to the next person's start (`share`), so people who load a page together are not shown the same pairs and a look is
not spent twice. A query's check in two stages hands out its first stage's pairs alone while any of them wants a
look (sample_progress.handed_out), then the whole sample. A check's sample is random in every stretch and it
certifies only once every pair it reads (the whole sample's, or a first stage's) has its looks (it fails early on
positives counted, whichever pairs counted them), so the order the pairs are looked in changes no decision.
"""

import zlib
from bisect import bisect_left
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.utils import timezone

from annotator.completeness import checks
from annotator.completeness.sample_progress import fresh_since, handed_out, progress_of
from annotator.labels.sealed import Writer
from annotator.models import Assignment, CompletenessCheck, Judgment, Query

# Who counts as looking at a check now: whoever saved a look at one of its pairs of the query this long ago or less.
WORKING_NOW = timedelta(minutes=15)


def candidates(query: Query, viewer: Writer, k: int, share: bool = False) -> list[int]:
    """The images of `query`'s open check, then of the open benchmark check, that still want a look and that
    `viewer` has not judged, at most `k` of them, in each the sample's random order read from the viewer's place
    (`_own_stretch`); with `share`, only the viewer's own stretch of each, up to the next person's place (the
    labeling page's: a page loaded beside a teammate's never meets it). Whether an image wants a look depends on
    how many judged it, never on what they said, so the order tells a blind judge nothing of the others' votes."""
    parts: list[tuple[CompletenessCheck, list[int], set[int]]] = []
    for check in (checks.open_check(query), checks.open_check()):
        if check is not None:
            now = progress_of(check, query)
            parts.append((check, handed_out(check, now), set(now.second) | set(now.unjudged)))
    wanting = set().union(*(wanted for _, _, wanted in parts))
    mine = Judgment.objects.filter(query=query, image_id__in=list(wanting))
    mine = mine.filter(annotator=viewer) if viewer is not None else mine.filter(annotator__isnull=True)
    judged = set(mine.values_list("image_id", flat=True))
    chosen: list[int] = []
    for check, order, wanted in parts:
        taken = set(chosen)
        open_to_viewer = [i for i in order if i in wanted and i not in judged and i not in taken]
        chosen += _own_stretch(open_to_viewer, order, check, query, viewer, share)
    return chosen[:k]


def _own_stretch(
    mine: list[int], order: list[int], check: CompletenessCheck, query: Query, viewer: Writer, share: bool
) -> list[int]:
    """`mine` (the pairs of `check`'s sample `order` that want a look from `viewer`, in that order) from the viewer's
    place among them, round to their start; with `share`, only up to the next start of another person looking now
    (WORKING_NOW), or before anyone looks, of another of the query's assignees. The viewer's place: where they left
    off, for one who has been looking (`_own_start`); halfway along the longest stretch ahead of nobody, for one
    who joins people looking; for the first to look, their share of the query's assignees (`assigned_places`), or
    with `share`, a place of their own (`own_place`), else the start. The places depend on who looked where, never
    on what anyone said, so the order tells a blind judge nothing of the others' votes."""
    if viewer is None or not mine:
        return mine
    wanted = set(mine)
    at = [n for n, image_id in enumerate(order) if image_id in wanted]
    placed = _placed(at, len(order), places(check, query, order))
    # With `share`, one the server cannot place (nobody looking, and not an assignee) starts at a place of their own:
    # a GET writes nothing, so people who open a fresh check at once are known to nobody until they save, and
    # starting each at the start would hand them all the same page.
    unplaced = own_place(check, query, viewer.pk, len(at)) if share else 0
    start, others = _start(viewer.pk, placed, at, lambda: assigned_places(query, order), unplaced)
    read = mine[start:] + mine[:start]
    if not share:
        return read
    # Up to the next person's place: the pairs past it are theirs to look at now, so two pages loaded at once do not
    # meet; they reach this viewer once the viewer has done their own stretch.
    return read[: min(((index - start) % len(mine) for index in others if index != start), default=len(mine))]


def _placed(at: list[int], size: int, where: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Each person's place in a check's order (`where`, of `size`) as a place among the pairs at `at` (the first at
    or after it), and how far behind that they left off (pairs others have looked at since lie between)."""
    placed = {}
    for person, place in where.items():
        index = bisect_left(at, place) % len(at)
        placed[person] = (index, (at[index] - place) % size)
    return placed


def _start(
    viewer_id: int,
    placed: dict[int, tuple[int, int]],
    at: list[int],
    shares: Callable[[], dict[int, int]],
    unplaced: int = 0,
) -> tuple[int, set[int]]:
    """(where the viewer starts among the pairs at `at`, the places of the others) from the places of the people
    looking now (`placed`), or where nobody is, the assignees' `shares()` (places in the check's order, read only
    then), `unplaced` for a viewer who is not among them."""
    # Everyone's start, not only their place: of people at one place, those who spread along the stretch ahead of it
    # start further on, and the one going on from there stops where they start.
    starts = {person: _own_start(person, placed, len(at)) for person in placed}
    others = {index for person, index in starts.items() if person != viewer_id}
    if viewer_id in starts:
        return starts[viewer_id], others
    if others:
        return halfway_along_the_longest_stretch(sorted(others), len(at)), others
    on_mine = {person: bisect_left(at, place) % len(at) for person, place in shares().items()}  # nobody is looking
    start = on_mine.pop(viewer_id, unplaced)
    return start, set(on_mine.values())


def own_place(check: CompletenessCheck, query: Query, viewer_id: int, size: int) -> int:
    """A place among `size` pairs of `check`'s sample of `query` for a viewer nothing else places: the same on every
    load, and spread for people nobody can tell apart yet (it depends on ids alone, never on a vote)."""
    return zlib.crc32(f"{check.pk}:{query.pk}:{viewer_id}".encode()) % size


def _own_start(viewer_id: int, placed: dict[int, tuple[int, int]], size: int) -> int:
    """Where one who has been looking goes on from, `placed` holding each person's place in a circle of `size` and
    how far behind it they left off: their place, unless others are there too. People at the same place spread
    along the stretch ahead of it up to the next person's, the i-th of g i/g of the way: first the one who left off
    nearest it (the one working there; one who has caught up with them arrives from behind), then by user id (two
    who loaded and saved the same page at once)."""
    place = placed[viewer_id][0]
    together = sorted((behind, person) for person, (index, behind) in placed.items() if index == place)
    stretch = min(((index - place) % size for index, _ in placed.values() if index != place), default=size)
    share = together.index((placed[viewer_id][1], viewer_id))
    return (place + share * stretch // len(together)) % size


def assigned_places(query: Query, order: list[int]) -> dict[int, int]:
    """Where each of the people assigned to `query` starts a check nobody is looking at yet, a place in `order`: the
    k-th of m (by user id) k/m of the way in, so a team opening a fresh check together spreads out at once (anyone
    else starts at the start)."""
    assigned = Assignment.objects.filter(query=query).order_by("annotator_id").values_list("annotator_id", flat=True)
    team = list(dict.fromkeys(assigned))  # one place each, whatever their roles
    return {person: k * len(order) // len(team) for k, person in enumerate(team)}


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
