from dataclasses import dataclass


@dataclass(frozen=True)
class Hit:
    """One ranked image: its id, its similarity to the query (inner product of unit vectors),
    and its taxon id (-1 for none)."""

    image_id: int
    score: float
    taxon_id: int
