"""What a ranking is asked: one value through the facade, the engine and the backends' filters.

The facade's functions keep their keywords (what callers write), build a RankingRequest once, and the engine
reads everything from it: the strategy and what it ranks from (a text, labeled images, example images of
the collection, uploaded images or their vectors) and which images may come back (species, excluded ids).
Page and breadth are not part of it: the same request is asked for many pages and batches.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .spec import ClipSpec

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage


@dataclass(frozen=True)
class RankingRequest:
    """A ranking by `strategy` (search/strategies.py) of the images of `taxon_ids` (None: every species)
    but `exclude_image_ids`, under the model `spec` (None: the configured one). Ids are image ids."""

    strategy: str = "text"
    text: str | None = None
    relevant_ids: tuple[int, ...] = ()
    not_relevant_ids: tuple[int, ...] = ()
    example_ids: tuple[int, ...] = ()
    example_images: tuple["PILImage", ...] = ()
    example_vectors: tuple[np.ndarray, ...] = ()
    taxon_ids: tuple[int, ...] | None = None
    exclude_image_ids: frozenset[int] = frozenset()
    spec: ClipSpec | None = None

    @classmethod
    def of(
        cls,
        *,
        strategy: str = "text",
        text: str | None = None,
        relevant_ids: Iterable[int] = (),
        not_relevant_ids: Iterable[int] = (),
        example_ids: Iterable[int] = (),
        example_images: Iterable["PILImage"] = (),
        example_vectors: Sequence[npt.ArrayLike] = (),
        taxon_ids: Iterable[int] | None = None,
        exclude_image_ids: Iterable[int] | None = None,
        spec: ClipSpec | None = None,
    ) -> "RankingRequest":
        """A request from what callers hold (lists, sets, querysets' ids, numpy ids); labeled ids keep
        their order (the feedback fit reads them in order)."""
        return cls(
            strategy=strategy,
            text=text,
            relevant_ids=tuple(int(i) for i in relevant_ids),
            not_relevant_ids=tuple(int(i) for i in not_relevant_ids),
            example_ids=tuple(int(i) for i in example_ids),
            example_images=tuple(example_images),
            example_vectors=tuple(np.asarray(vector, dtype=np.float32) for vector in example_vectors),
            taxon_ids=None if taxon_ids is None else tuple(int(i) for i in taxon_ids),
            exclude_image_ids=frozenset(int(i) for i in exclude_image_ids or ()),
            spec=spec,
        )

    @property
    def taxa(self) -> list[int] | None:
        """The species filter as the backends take it."""
        return None if self.taxon_ids is None else list(self.taxon_ids)

    @property
    def labeled_or_excluded(self) -> set[int]:
        """Images a batch to label never proposes: the labeled ones and the excluded ones."""
        return {*self.exclude_image_ids, *self.relevant_ids, *self.not_relevant_ids}
