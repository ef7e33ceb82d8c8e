"""A ranked image as every ranking returns it (Hit)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Hit:
    """One ranked image: its id, its similarity to the query (inner product of unit vectors),
    and its taxon id (-1 for none). In a batch to label (search.facade.next_batch): which ranking
    proposed it ("learned" or "text") and its near-duplicates that wait behind it (search/batches.py)."""

    image_id: int
    score: float
    taxon_id: int
    source: str = ""
    stack: tuple[int, ...] = ()
