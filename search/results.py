from dataclasses import dataclass


@dataclass(frozen=True)
class Hit:
    """One ranked image: its id, its similarity to the query (inner product of unit vectors), its taxon id (-1: none)."""

    image_id: int
    score: float
    taxon_id: int
