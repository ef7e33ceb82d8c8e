"""The text order remembered between batches (search/text_orders.py): one search serves the batches after
it, and what it answers is what a fresh search would."""

from search.results import Hit
from search.text_orders import TextOrders

COLLECTION = list(range(100))  # image ids, best first under the one text of these tests


class Searches:
    def __init__(self):
        self.calls = []

    def __call__(self, depth, exclude):
        self.calls.append((depth, frozenset(exclude)))
        return [image_id for image_id in COLLECTION if image_id not in exclude][:depth]


def fresh(depth, exclude):
    return [image_id for image_id in COLLECTION if image_id not in exclude][:depth]


def test_one_search_serves_the_batches_while_the_labels_grow():
    orders, search = TextOrders(depth=40), Searches()
    labeled = set()
    for _ in range(5):
        assert orders.top("text", 5, labeled, search) == fresh(5, labeled)
        labeled |= set(fresh(5, labeled))  # the annotator labels the batch
    assert len(search.calls) == 1 and search.calls[0][0] == 40  # searched once, deeper than asked


def test_it_searches_again_when_a_label_is_undone_or_what_is_left_is_too_short():
    orders, search = TextOrders(depth=20), Searches()
    orders.top("text", 5, {0, 1, 2}, search)
    assert orders.top("text", 5, {0, 1}, search) == [2, 3, 4, 5, 6]  # 2's label undone: it is back
    assert len(search.calls) == 2
    labeled = set(range(18))
    assert orders.top("text", 5, labeled, search) == fresh(5, labeled)  # 2 left of 20: search deeper
    assert len(search.calls) == 3


def test_a_short_order_holds_the_whole_collection_and_is_not_searched_again():
    orders, calls = TextOrders(depth=500), []

    def search(depth, exclude):
        calls.append(depth)
        return fresh(depth, exclude)

    assert orders.top("text", 50, set(), search) == COLLECTION[:50]
    assert orders.top("text", 200, set(range(90)), search) == list(range(90, 100))
    assert calls == [500]


def test_each_text_has_its_own_order_and_the_least_recently_used_is_forgotten():
    orders, search = TextOrders(texts=2, depth=10), Searches()
    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        orders.top(key, 5, set(), search)
    assert len(search.calls) == 3
    orders.top("a", 5, set(), search)
    assert len(search.calls) == 3
    orders.top("b", 5, set(), search)
    assert len(search.calls) == 4


def test_a_texts_pages_are_read_from_one_search_inside_the_depth():
    ranking = [Hit(image_id, 1.0 - image_id / 1000, 0) for image_id in range(1, 200)]
    calls = []

    def search(k, offset):
        calls.append((k, offset))
        return ranking[offset : offset + k]

    orders = TextOrders(texts=2, depth=100)
    assert orders.page("a", 0, 50, search) == ranking[:50]
    assert orders.page("a", 50, 50, search) == ranking[50:100]
    assert orders.page("a", 90, 20, search) == ranking[90:110]  # past the depth: searched as asked
    assert calls == [(100, 0), (20, 90)]
    orders.page("b", 0, 10, search)
    orders.page("c", 0, 10, search)  # two texts remembered: "a" is forgotten
    orders.page("a", 0, 10, search)
    assert calls[-1] == (100, 0) and len(calls) == 5
