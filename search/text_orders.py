"""The text order's best candidates, remembered between batches.

Every batch of a ranking that learns also asks for the text order's next candidates (search/batches.py:
its floor and its probes). They depend only on the text, the species filter and which images are
labeled, and between two batches the labeled images only grow: one search DEPTH deep serves the batches
after it, each taking the candidates still unlabeled, so a batch costs one search of the collection (the
learned ranking's) instead of two. A label undone since (an image excluded then, no longer) or a batch
that needs deeper than what is left searches again.

The labeling grid's pages of a text's ranking (nothing excluded) are kept the same way, with their scores
(`page`): a text searches wide (search/index.py: a quarter of the lists, 10,000 candidates re-scored, for
recall across the modality gap), so its first page pays for one search DEPTH deep and the pages after it,
and the next visit, read the remembered ranking.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from .results import Hit

# Candidates kept per text: at 45 text-order images a batch (the text order leading), twenty batches.
DEPTH = 1000
# Texts remembered per loaded index: the queries a team labels at once, with room to spare.
TEXTS = 256


class TextOrders:
    """Remembered text orders, per key (the text's vector and the species filter), least recently used
    forgotten first. Thread-safe: web workers' threads share one per loaded index."""

    def __init__(self, texts: int = TEXTS, depth: int = DEPTH) -> None:
        self.texts, self.depth = texts, depth
        # key -> (the order, the images excluded when it was searched (an array: 8 bytes an id, where a
        # query's 20,000 labels as a set would be a megabyte), whether it holds every image there is)
        self._orders: OrderedDict[Hashable, tuple[list[int], np.ndarray, bool]] = OrderedDict()
        self._pages: OrderedDict[Hashable, list[Hit]] = OrderedDict()  # key -> the first `depth` hits
        self._lock = threading.Lock()

    def top(
        self, key: Hashable, depth: int, exclude: set[int], search: Callable[[int, set[int]], list[int]]
    ) -> list[int]:
        """The `depth` best images under `key`'s text order, none of `exclude`. `search(depth, exclude)`
        searches the collection (best first) when what is remembered does not answer."""
        with self._lock:
            remembered = self._orders.get(key)
            if remembered is not None:
                self._orders.move_to_end(key)
        if remembered is not None:
            order, excluded_then, whole = remembered
            now = np.fromiter(exclude, dtype=np.int64, count=len(exclude))
            if np.isin(excluded_then, now).all():  # nothing excluded then is shown again now
                still = [image_id for image_id in order if image_id not in exclude]
                if len(still) >= depth or whole:
                    return still[:depth]
        wanted = max(depth, self.depth)
        order = search(wanted, exclude)
        with self._lock:
            # `whole`: the search gave fewer than asked, so it holds every image the filter leaves.
            excluded = np.fromiter(exclude, dtype=np.int64, count=len(exclude))
            self._orders[key] = (order, excluded, len(order) < wanted)
            self._orders.move_to_end(key)
            while len(self._orders) > self.texts:
                self._orders.popitem(last=False)
        return order[:depth]

    def page(self, key: Hashable, offset: int, k: int, search: Callable[[int, int], list[Hit]]) -> list[Hit]:
        """Hits offset .. offset+k-1 of `key`'s text order, nothing excluded. `search(k, offset)` searches
        the collection; within the first `depth` hits, one search that deep answers every page."""
        if offset + k > self.depth:
            return search(k, offset)
        with self._lock:
            hits = self._pages.get(key)
            if hits is not None:
                self._pages.move_to_end(key)
        if hits is None:
            hits = search(self.depth, 0)
            with self._lock:
                self._pages[key] = hits
                while len(self._pages) > self.texts:
                    self._pages.popitem(last=False)
        return hits[offset : offset + k]
