"""evaluation.api_team's bookkeeping for each query's own claim, without a server: the advice read from a stand-in
API that answers as the tool's would for a query no check can certify yet ("certifiable": false) and for one that
certifies at its first check."""

from evaluation.api_team import Member, Refused, Spent, _work_the_queues, follow_the_advice

NEVER, SOON = 1, 2


class StandIn:
    """Query NEVER: its ranking dry and too few confirmed positives for any check; its reviewer's batches find none.
    Query SOON: a check once 60 labels are in; certified when its sample's 3 images are looked at."""

    def __init__(self, never_says="label"):
        self.never_says = never_says  # "check": a collection labeled whole, a lower target claimable (not drawn)
        self.labeled = {NEVER: 0, SOON: 0}
        self.drawn = self.looked = 0
        self.posts = []

    def get(self, member, path, params):
        query_id = int(path.split("/")[3])
        if path.endswith("/completeness/"):
            return {"advice": self.advice(query_id)}
        if path.endswith("/disagreements/"):
            return {"results": []}
        if params["strategy"] == "check":
            left = 3 - self.looked if self.drawn and member == "second" else 0
            return {"results": [{"image_id": 1000 + i} for i in range(left)]}
        start = self.labeled[query_id]
        return {"results": [{"image_id": start + i} for i in range(params["k"])]}

    def advice(self, query_id):
        if query_id == NEVER and self.never_says == "check":
            return {"next": "check", "certifiable": False, "claimable_target": 0.8, "reason": "Draw 80%."}
        if query_id == NEVER:
            return {"next": "label", "ranking": "review", "certifiable": False, "reason": "No sample can certify."}
        if self.drawn and self.looked >= 3:
            return {"next": "done", "reason": "Done."}
        if self.drawn:
            return {"next": "label", "ranking": "check", "reason": "Looks left."}
        if self.labeled[SOON] >= 60:
            return {"next": "check", "reason": "Dry."}
        return {"next": "label", "ranking": "review", "reason": "Yields."}

    def post(self, member, path, body):
        self.posts.append(path)
        query_id = int(path.split("/")[3])
        if path.endswith("/completeness/"):
            self.drawn += 1
            return {"status": "checking"}
        if member == "second":
            self.looked += len(body["labels"])
        else:
            self.labeled[query_id] += len(body["labels"])
        return {}


def test_a_query_no_check_can_certify_is_left_after_six_tries_and_the_other_is_drawn_and_certified():
    api = StandIn()
    people = [Member(name, lambda q, i: False) for name in ("reviewer", "second", "boss")]
    spent = follow_the_advice(
        api, [NEVER, SOON], people[0], people[1:2], people[2], "boss", batch=30, claim="query", give_up_after=6
    )
    assert spent.left == {NEVER} and spent.uncertifiable == {NEVER: 6}
    assert spent.draws_by_query == {SOON: 1} and api.drawn == 1
    assert not any(path.startswith(f"/api/queries/{NEVER}/completeness") for path in api.posts)  # never drawn
    assert api.labeled == {NEVER: 5 * 30, SOON: 60}  # five batches between the six tries; SOON's review until dry
    assert spent.by_query == {NEVER: 150, SOON: 63} and spent.labels == 213
    assert spent.steps == {SOON: "done"}


def test_a_check_said_only_at_a_lower_target_is_not_drawn_at_the_teams_and_the_query_stays_uncertified():
    """Where the collection is labeled whole the advice says "check" with "certifiable": false and the lower target a
    check could certify: the scripted team, whose claim is its own target, draws nothing there (it would be refused)
    and stops once nothing else moves, the query uncertified."""
    api = StandIn(never_says="check")
    people = [Member(name, lambda q, i: False) for name in ("reviewer", "second", "boss")]
    spent = follow_the_advice(
        api, [NEVER, SOON], people[0], people[1:2], people[2], "boss", batch=30, claim="query", give_up_after=6
    )
    assert NEVER not in spent.draws_by_query and spent.uncertifiable[NEVER] >= 1
    assert not any(path.startswith(f"/api/queries/{NEVER}/") for path in api.posts)  # neither drawn nor labeled
    assert spent.steps == {NEVER: "check", SOON: "done"} and spent.draws_by_query == {SOON: 1}


class TwoInTheQueue:
    """A queue of two rows where deciding the first ends the check the second waited in: the server refuses the
    second with 409, as Quire does once two agreeing looks are no longer an adjudicator's to decide."""

    def __init__(self):
        self.decided = []

    def get(self, member, path, params):
        return {"results": [{"image": 7}, {"image": 8}] if not self.decided else []}

    def post(self, member, path, body):
        if self.decided:
            raise Refused("Image 8 has no disagreement to decide for query 1: its judgments agree.")
        self.decided.append(body["image"])
        return {}


def test_a_queue_row_the_server_no_longer_has_is_passed_over_and_counted_apart():
    api, spent = TwoInTheQueue(), Spent()
    assert _work_the_queues(api, [1], Member("boss", lambda q, i: True), spent)
    assert api.decided == [7] and spent.adjudications == 1 and spent.refused == 1
