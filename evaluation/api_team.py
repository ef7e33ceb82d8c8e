"""A labeling team that does what Quire's advice says, through the REST API only (issue 62): the scripted team of
`bench/completeness_bench.py --through-api` and of tests/annotator/test_team_follows_the_advice.py.

Each round the team reads every query's advice for the claim it works toward (GET /api/queries/{id}/completeness/
?claim=benchmark, or ?claim=query for each query's own claim):

  wait    the adjudicator works every query's queue (GET .../disagreements/?pending=1, POST .../adjudicate/): the
          frames' single positives before a draw, the checks' positive looks after one. The adjudicator works it
          whenever it holds something, as a real one does beside the annotators, not only when told to wait
  label   the ranking the advice names: an open check's images ("check"), each from the first member who has not
          judged it (the reviewer, the others in order, the adjudicator last: a fresh look; with `together`, the
          annotators each load a page at once, then each saves theirs, as a team at work does), or the reviewer's next
          batch down the query's ranking ("review"; with `step`, saved a few labels at a time until the advice
          stops asking for review, as the labeling page's side pane shows it)
  check   the benchmark's claim: once every query says check or done and nothing else moved, staff draw the
          benchmark check (POST /api/completeness/benchmark/); each query's own claim: staff draw that query's
          check in the round its advice says so (POST /api/queries/{id}/completeness/), the others label on
  done    nothing

It knows the world only through its members' answers (each says relevant or not of a (query, image) pair, with its
own mistakes); everything it spends is counted here, as the simulator (evaluation/benchmark_sim.py) counts its own.
The HTTP client is the caller's (`Api`): a live server in the bench, Django's test client in the tests."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

BENCHMARK = "/api/completeness/benchmark/"
IDLE_ROUNDS = 3  # rounds of "wait" with nothing for the adjudicator before the team stops (a bug to look at)


class Api(Protocol):
    """Quire's REST API as one member sees it: JSON in and out; 409 raised as `Refused`, any other status than 2xx
    raised with its body."""

    def get(self, member: str, path: str, params: dict[str, Any]) -> Any: ...

    def post(self, member: str, path: str, body: dict[str, Any]) -> Any: ...


class Refused(Exception):
    """A 409 from the API: what was asked no longer fits the state (a queue's row decided since it was read)."""


@dataclass(frozen=True)
class Member:
    """A person of the team: `says(query_id, image_id)` is whether they call the pair relevant."""

    name: str
    says: Callable[[int, int], bool]


@dataclass
class Spent:
    """What the team spent, in the simulator's units: each judgment and each adjudication is one label."""

    review: int = 0  # the reviewer's judgments down the rankings
    looks: int = 0  # the checks' fresh looks
    adjudications: int = 0  # the adjudicator's decisions: confirmations before a draw, positive looks after
    refused: int = 0  # a queue's rows the server no longer had for the adjudicator when their decision came
    draws: int = 0
    rounds: int = 0
    first_draw: dict[str, Any] | None = None
    last_draw: dict[str, Any] | None = None
    advice: dict[int, dict[str, Any]] = field(default_factory=dict)
    stuck: int = 0  # rounds where the advice asked for labels nobody on the team could give
    by_query: dict[int, int] = field(default_factory=dict)  # the labels spent on each query, of all three kinds
    draws_by_query: dict[int, int] = field(default_factory=dict)  # each query's own checks drawn (claim "query")
    # Rounds where a query's own advice said no check could certify it yet ("certifiable": false), and the queries
    # the team left uncertified once those and its draws reached `give_up_after`.
    uncertifiable: dict[int, int] = field(default_factory=dict)
    left: set[int] = field(default_factory=set)

    def spend(self, kind: str, query_id: int, labels: int) -> None:
        """`labels` more of `kind` (review, looks or adjudications) spent on `query_id`."""
        setattr(self, kind, getattr(self, kind) + labels)
        self.by_query[query_id] = self.by_query.get(query_id, 0) + labels

    @property
    def steps(self) -> dict[int, str]:
        return {query_id: said["next"] for query_id, said in self.advice.items()}

    @property
    def labels(self) -> int:
        return self.review + self.looks + self.adjudications


def follow_the_advice(
    api: Api, queries: list[int], reviewer: Member, others: list[Member], adjudicator: Member, staff: str, *,
    strategy: str = "feedback", batch: int = 50, step: int = 0, target: float = 0.9, confidence: float = 0.95,
    max_rounds: int = 10_000, progress: Callable[[Spent], None] | None = None, claim: str = "benchmark",
    give_up_after: int = 6, together: bool = False,
) -> Spent:  # fmt: skip
    """Label, confirm, draw and look as the advice for `claim` ("benchmark" or "query": each query's own) says
    until every query says done (or `max_rounds`). `step` > 0: the reviewer saves a batch `step` labels at a time
    and reads the advice after each, as the labeling page's side pane shows it whenever saving pauses (the
    adjudicator confirming what waits first), and leaves the rest of the batch once the advice stops asking for
    review; 0: a whole batch, then the advice. A query's own claim is left uncertified once its draws and the rounds
    its advice said no check could certify it yet reach `give_up_after` (the simulator's Settings.max_checks: its
    team counts a check no sample could certify as one tried, labels a window more, and stops at six). `together`:
    a check's looks are given by the annotators at once (each loads a page of it before any saves), not one member
    at a time."""
    spent = Spent()
    lookers = [reviewer, *others, adjudicator]
    idle = 0
    advice = Advice(api, staff, claim)

    def reviewing(query_id: int) -> bool:
        _work_the_queues(api, [query_id], adjudicator, spent)
        said = advice(query_id)
        return bool(said["next"] == "label" and said.get("ranking") != "check")

    review = Review(strategy, batch, step, reviewing, together)
    while spent.rounds < max_rounds:
        spent.rounds += 1
        spent.advice = _read_advice(advice, queries, spent, give_up_after)
        steps = set(spent.steps.values())
        if steps == {"done"}:
            break
        worked, stuck = _work(advice, lookers, review, spent, {"target_recall": target, "confidence": confidence})
        spent.stuck += stuck
        if progress:
            progress(spent)
        if worked:
            idle = 0
            continue
        if stuck:  # the check waits for someone new: drawing again would not help
            break
        if "wait" in steps:  # waiting on what nobody here does: a few rounds, then the team stops
            idle += 1
            if idle >= IDLE_ROUNDS:
                break
            continue
        if claim == "query":  # each query's draws are made as its advice asks: nothing here moves any more
            break
        drawn = api.post(staff, BENCHMARK, {"target_recall": target, "confidence": confidence})
        spent.draws += 1
        spent.first_draw = spent.first_draw or drawn
        spent.last_draw = drawn
    return spent


def _work(
    advice: "Advice", lookers: list[Member], review: "Review", spent: Spent, asked: dict[str, Any]
) -> tuple[bool, bool]:
    """A round's work on what the advice said: the adjudicator's queues, the labels asked for, and (each query's own
    claim) the draws asked for. (whether anything moved, whether a check's images wait for someone new)"""
    worked = _work_the_queues(advice.api, list(spent.advice), lookers[-1], spent)
    labeled, stuck = _label_where_told(lookers, review, spent, advice)
    drawn = advice.claim == "query" and _draw_each(advice, spent, asked)
    return worked or labeled or drawn, stuck


def _read_advice(advice: "Advice", queries: list[int], spent: Spent, give_up_after: int) -> dict[int, dict[str, Any]]:
    """The advice of each query the team still works on (those left uncertified are not read again)."""
    said = {q: advice(q) for q in queries if q not in spent.left}
    for query_id, each in said.items():
        if each.get("certifiable") is False:
            spent.uncertifiable[query_id] = spent.uncertifiable.get(query_id, 0) + 1
        tried = spent.uncertifiable.get(query_id, 0) + spent.draws_by_query.get(query_id, 0)
        if tried >= give_up_after and each["next"] in ("label", "check") and each.get("ranking") != "check":
            spent.left.add(query_id)
    return {q: each for q, each in said.items() if q not in spent.left}


@dataclass(frozen=True)
class Advice:
    """A query's advice toward `claim`, read by staff: `advice(query_id)` is the answer's "advice" object."""

    api: Api
    staff: str
    claim: str

    def __call__(self, query_id: int) -> dict[str, Any]:
        answer = self.api.get(self.staff, f"/api/queries/{query_id}/completeness/", {"claim": self.claim})
        return dict(answer["advice"])

    def draw(self, query_id: int, asked: dict[str, Any]) -> dict[str, Any]:
        """Staff draw the query's own check (claim "query")."""
        return dict(self.api.post(self.staff, f"/api/queries/{query_id}/completeness/", asked))


def _draw_each(advice: Advice, spent: Spent, asked: dict[str, Any]) -> bool:
    """Each query whose own advice said "check" this round gets its check drawn (whether any was); not where it said
    so only at a lower target than the team's ("certifiable": false, a collection labeled whole: declaring a lower
    target is staff's choice, and the team's would be refused)."""
    drawn = False
    for query_id, said in spent.advice.items():
        if said["next"] == "check" and said.get("certifiable") is not False:
            drawn_now = advice.draw(query_id, asked)
            spent.first_draw = spent.first_draw or drawn_now
            spent.draws += 1
            spent.draws_by_query[query_id] = spent.draws_by_query.get(query_id, 0) + 1
            drawn = True
    return drawn


@dataclass(frozen=True)
class Review:
    """How the reviewer works down a query's ranking: `batch` candidates of `strategy` at a time, saved `step` at a
    time (0: the whole batch) with `reviewing(query_id)` asked between two steps whether the advice still says so."""

    strategy: str
    batch: int
    step: int
    reviewing: Callable[[int], bool]
    together: bool = False  # a check's looks: the annotators each load a page at once (`_look_together`)


def _label_where_told(lookers: list[Member], review: Review, spent: Spent, advice: Advice) -> tuple[bool, bool]:
    """Each query whose advice says "label" is labeled, whatever the others say: an open check's images by the first
    member who may look at them, else the reviewer's next batch (a ranking with nothing left to review counts as
    reviewed: the others decide the draw). (whether anything was labeled, whether a check's images wait for someone
    new: nobody on the team may look at them, each judged them already, and the advice still asks for them: the
    adjudications of this round may have decided the check since the round read it.)"""
    worked = stuck = False
    reviewer, api = lookers[0], advice.api
    for query_id, said in spent.advice.items():
        if said["next"] != "label":
            continue
        if said.get("ranking") == "check":
            look = _look_together if review.together else _look
            looked = look(api, query_id, lookers, review.batch, spent)
            stuck = stuck or (not looked and _still_asks_for_looks(advice, query_id))
            worked = looked or worked
        else:
            worked = _review(api, query_id, reviewer, review, spent) or worked
    return worked, stuck


def _still_asks_for_looks(advice: Advice, query_id: int) -> bool:
    said = advice(query_id)
    return bool(said["next"] == "label" and said.get("ranking") == "check")


def _work_the_queues(api: Api, queries: list[int], adjudicator: Member, spent: Spent) -> bool:
    """The adjudicator decides every pending image of every query (one page of each queue a round). A row the server
    refuses to decide (409: a decision on the page before it ended the check it waited in, so two agreeing looks
    are no longer an adjudicator's to decide) is passed over, as the page shows its sentence, and counted apart."""
    worked = False
    for query_id in queries:
        queue = api.get(adjudicator.name, f"/api/queries/{query_id}/disagreements/", {"pending": 1, "limit": 1000})
        for row in queue["results"]:
            value = "relevant" if adjudicator.says(query_id, row["image"]) else "not_relevant"
            try:
                api.post(
                    adjudicator.name, f"/api/queries/{query_id}/adjudicate/", {"image": row["image"], "value": value}
                )
            except Refused:
                spent.refused += 1
                continue
            spent.spend("adjudications", query_id, 1)
            worked = True
    return worked


def _look(api: Api, query_id: int, lookers: list[Member], batch: int, spent: Spent) -> bool:
    """An open check's images for the first member who has any to look at (False: nobody has)."""
    for member in lookers:
        looks = _candidates(api, member, query_id, "check", batch)
        if looks:
            _judge(api, member, query_id, looks)
            spent.spend("looks", query_id, len(looks))
            return True
    return False


def _look_together(api: Api, query_id: int, lookers: list[Member], batch: int, spent: Spent) -> bool:
    """An open check's images for the annotators at once: each loads a page before anyone saves (their own stretch,
    `share=1`, as the labeling page loads it: what the server hands each of them is all that keeps two from judging
    the same pairs), then each saves theirs; the adjudicator looks, as in `_look`, only where no annotator has
    anything left (False: nobody has)."""
    pages = [(member, _candidates(api, member, query_id, "check", batch, share=True)) for member in lookers[:-1]]
    pages = [(member, looks) for member, looks in pages if looks]
    for member, looks in pages:
        _judge(api, member, query_id, looks)
        spent.spend("looks", query_id, len(looks))
    return bool(pages) or _look(api, query_id, lookers[-1:], batch, spent)


def _review(api: Api, query_id: int, reviewer: Member, review: Review, spent: Spent) -> bool:
    """The reviewer's next batch down the query's ranking, or its steps until the advice stops asking for review
    (False: the ranking has nothing left)."""
    shown = _candidates(api, reviewer, query_id, review.strategy, review.batch)
    step = review.step or len(shown) or 1
    for start in range(0, len(shown), step):
        if start and not review.reviewing(query_id):
            break
        _judge(api, reviewer, query_id, shown[start : start + step])
        spent.spend("review", query_id, len(shown[start : start + step]))
    return bool(shown)


def _candidates(api: Api, member: Member, query_id: int, strategy: str, k: int, share: bool = False) -> list[int]:
    """`k` candidates of `strategy` for `member` (`share`: a check's, the member's own stretch alone, as the labeling
    page shows them)."""
    asked = {"strategy": strategy, "k": k, **({"share": 1} if share else {})}
    answer = api.get(member.name, f"/api/queries/{query_id}/candidates/", asked)
    return [int(row["image_id"]) for row in answer["results"]]


def _judge(api: Api, member: Member, query_id: int, image_ids: list[int]) -> None:
    """One labels request with the member's judgment of each image (none when there is nothing to judge)."""
    if image_ids:
        labels = [{"image": i, "value": "relevant" if member.says(query_id, i) else "not_relevant"} for i in image_ids]
        api.post(member.name, f"/api/queries/{query_id}/labels/", {"labels": labels})
