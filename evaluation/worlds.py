"""Synthetic worlds with known answers, for the oracle replay (evaluation/simulation.py), its tests and
bench/: collections shaped like CLIP's where a ranking that learns can win or do harm.

`team_world` holds the query kinds a real team meets, in a collection shaped like real embeddings:

  hard      the text finds the species, not the behaviour: 30 to 90 positives scattered through a crowd
            of 1,500 look-alikes of the same species ("Black Skimmer performing skimming")
  easy      the text says it: the positives rank near the top, in a crowd of 300
  tiny      5 positives behind 300 near-duplicates of one photo (a burst, a camera trap)
  clusters  20 positives in two separate clusters (two ways of showing the behaviour) behind 400
            near-duplicates
  crowd     1,200 near-identical negatives above every one of 40 positives

The collection: species centres in an anisotropic space (a few directions carry most of the variance,
as in CLIP's), photos spread around them, and the text vectors offset from the images' by a shared
modality gap (CLIP's text and image embeddings lie in two separate cones: Liang et al. 2022, "Mind the
Gap"), so a text's best similarity is about 0.3, not 1.
"""

from dataclasses import dataclass

import numpy as np

KINDS = ("hard", "easy", "tiny", "clusters", "crowd")
# Cosine between two photos of a near-duplicate crowd: bursts and re-uploads of one photo sit above 0.95
# under CLIP ViT-H (search.strategies.NEAR_DUPLICATE).
_DUPLICATE_SPREAD = 0.012
# The two cones' mean directions (orthogonal): matching text-to-image cosines of about 0.4 to 0.5, random
# image pairs at about 0.3, and each text leaning a little toward some images whatever they show.
_IMAGE_CONE, _TEXT_CONE = 0.7, 1.0


@dataclass
class World:
    vectors: np.ndarray  # (N, dim) unit rows, float32
    texts: dict[int, np.ndarray]  # query id -> its text vector
    positives: dict[int, set[int]]
    hard: dict[int, bool]
    kinds: dict[int, str]


def unit(rows: np.ndarray) -> np.ndarray:
    unit_rows: np.ndarray = rows / np.linalg.norm(rows, axis=-1, keepdims=True)
    return unit_rows


def _variance(dim: int) -> float:
    """The summed variance of the anisotropic scales over `dim` directions."""
    return float(np.sum(1 / (1 + np.arange(dim) / 8)))


class _Builder:
    """Places each query's images in free rows of the collection."""

    def __init__(self, images: int, dim: int, species: int, rng: np.random.Generator) -> None:
        self.rng, self.dim = rng, dim
        # Anisotropy: direction j has scale 1/sqrt(1 + j/8), so the first tenth of the directions carry
        # about half the variance.
        self.scale = 1 / np.sqrt(1 + np.arange(dim) / 8)
        self.centres = unit(rng.normal(size=(species, dim)) * self.scale)
        # A photo's spread around its species keeps one length whatever the dimension (as at 64, where
        # photos of one species sit at cosines of 0.6 to 0.93 and under 7% of images have a look-alike
        # above 0.95), so a 1,024-d world is shaped like a 64-d one and not a crowd of near-duplicates.
        self.spread = 1.1 / 8 * np.sqrt(_variance(64) / _variance(dim))
        self.vectors = self.around(self.centres[rng.integers(0, species, size=images)], self.spread)
        image_cone = self.direction()
        self.image_cone = image_cone * _IMAGE_CONE
        self.text_cone = self.direction(image_cone) * _TEXT_CONE
        self.free = rng.permutation(images)
        self.cursor = 0

    def around(self, centres: np.ndarray, spread: float) -> np.ndarray:
        """Unit rows scattered around `centres`; `spread` is per direction at dimension 64's scale."""
        return unit(centres + spread * self.rng.normal(size=centres.shape) * self.scale)

    def direction(self, *away_from: np.ndarray) -> np.ndarray:
        """A random unit direction orthogonal to `away_from`."""
        vector = self.rng.normal(size=self.dim)
        for other in away_from:
            vector -= (vector @ other) * other
        return unit(vector)

    def place(self, rows: np.ndarray) -> np.ndarray:
        """Put `rows` (image-side concepts) in free rows of the collection, in the image cone."""
        ids = self.free[self.cursor : self.cursor + len(rows)]
        if len(ids) < len(rows):
            raise ValueError("the queries need more images than the collection has: give more images or fewer queries")
        self.cursor += len(rows)
        self.vectors[ids] = rows
        return ids

    def text(self, concept: np.ndarray) -> np.ndarray:
        return unit(concept + self.text_cone)

    def query(self, kind: str, count: int | None = None) -> tuple[np.ndarray, set[int]]:
        """The text vector and the positives of one query of `kind`, its images placed; `count` positives where
        given, else the kind's own."""
        centre = unit(self.centres[self.rng.integers(len(self.centres))] + 0.5 * self.direction())
        behaviour = self.direction(centre)
        if kind in ("hard", "easy"):
            hint, crowd, own = (0.15, 1500, int(self.rng.integers(30, 90))) if kind == "hard" else (1.0, 300, 40)
            count = count or own
            concept = unit(centre + hint * behaviour + 0.2 * self.direction())
            self.place(self.around(np.repeat([centre], crowd, axis=0), self.spread))
            positives = self.place(self.around(np.repeat([unit(centre + 0.4 * behaviour)], count, axis=0), self.spread))
            return self.text(concept), set(positives.tolist())
        # The other kinds: a near-duplicate crowd the text ranks above the positives.
        crowd = {"tiny": 300, "clusters": 400, "crowd": 1200}[kind]
        concept = unit(centre + 0.1 * self.direction(centre, behaviour))
        duplicate_spread = _DUPLICATE_SPREAD * np.sqrt(_variance(64) / _variance(self.dim))
        self.place(self.around(np.repeat([concept], crowd, axis=0), duplicate_spread))
        if kind == "clusters":
            second = self.direction(centre, behaviour)
            means = [unit(centre + 0.5 * behaviour), unit(centre + 0.5 * second)]
            half = (count or 20) // 2
            sizes = (half, (count or 20) - half)
            rows = np.vstack(
                [self.around(np.repeat([m], n, axis=0), self.spread) for m, n in zip(means, sizes, strict=True)]
            )
        else:
            own, separation = (5, 0.6) if kind == "tiny" else (40, 0.7)
            rows = self.around(np.repeat([unit(centre + separation * behaviour)], count or own, axis=0), self.spread)
        return self.text(concept), set(self.place(rows).tolist())


def team_world(
    *,
    kinds: tuple[str, ...] = KINDS,
    per_kind: int = 2,
    images: int = 60_000,
    dim: int = 64,
    species: int = 300,
    seed: int = 0,
) -> World:
    """A collection of `images` with `per_kind` queries of each of `kinds` (ids 1, 2, ... in that order)."""
    if unknown := [kind for kind in kinds if kind not in KINDS]:
        raise ValueError(f"world kinds are {', '.join(KINDS)}, not {', '.join(unknown)}")
    builder = _Builder(images, dim, species, np.random.default_rng(seed))
    texts: dict[int, np.ndarray] = {}
    positives: dict[int, set[int]] = {}
    hard: dict[int, bool] = {}
    kind_of: dict[int, str] = {}
    for kind in kinds:
        for _ in range(per_kind):
            query_id = len(texts) + 1
            texts[query_id], positives[query_id] = builder.query(kind)
            hard[query_id], kind_of[query_id] = kind != "easy", kind
    vectors = unit(builder.vectors + builder.image_cone).astype(np.float32)
    return World(vectors, texts, positives, hard, kind_of)


# The crowd each kind of query hides its positives in (Builder.query).
CROWDS = {"hard": 1500, "easy": 300, "tiny": 300, "clusters": 400, "crowd": 1200}


def inquire_world(
    *, queries: int = 250, median_positives: float = 46, spread: float = 1.0, dim: int = 64, seed: int = 0
) -> World:
    """A benchmark shaped like INQUIRE's: `queries` queries of the five kinds in turn, each with a number of
    positives drawn from a lognormal law of median `median_positives` (INQUIRE's median is 46; `spread` its
    sigma), at least 1 and at most 1,500, each in its kind's crowd; the collection a quarter larger than what the
    queries place, the rest photos of the species."""
    rng = np.random.default_rng(seed)
    counts = np.clip(np.round(rng.lognormal(np.log(median_positives), spread, size=queries)), 1, 1500).astype(int)
    kinds = [KINDS[n % len(KINDS)] for n in range(queries)]
    needed = sum(CROWDS[kind] + int(count) for kind, count in zip(kinds, counts, strict=True))
    builder = _Builder(int(needed * 1.25), dim, max(300, queries * 2), rng)
    texts: dict[int, np.ndarray] = {}
    positives: dict[int, set[int]] = {}
    for query_id, (kind, count) in enumerate(zip(kinds, counts, strict=True), start=1):
        texts[query_id], positives[query_id] = builder.query(kind, int(count))
    vectors = unit(builder.vectors + builder.image_cone).astype(np.float32)
    kind_of = dict(enumerate(kinds, start=1))
    return World(vectors, texts, positives, {q: k != "easy" for q, k in kind_of.items()}, kind_of)


def synthetic_world(
    *,
    images: int = 20_000,
    dim: int = 64,
    species: int = 200,
    queries: int = 20,
    separation: float = 0.4,
    noise: float = 1.0,
    seed: int = 0,
) -> World:
    """A collection shaped like INQUIRE's hard queries ("Black Skimmer performing skimming"): the text
    finds the species, not the behaviour.

    Images sit around species centres (`noise`: spread per image). Each query has a species s and a
    behaviour direction b orthogonal to it. Its species' images form the crowd (right species, wrong
    picture) around s; its positives sit around s + `separation` * b. The query's text vector is
    s + h b plus a little noise: on hard queries (even ids) the text barely says the behaviour (h = 0.15)
    and the species has a large crowd (1,500 images), so the text ranks the positives scattered
    through the crowd; on easy ones (odd ids) the text says it (h = 1) and the crowd is small (300).
    A ranking that learns b from a few positives wins on the hard queries and should not lose on the
    easy ones. `separation` sets how far the expert's meaning is from the crowd; bench/RESULTS.md
    shows the result at several values.
    """
    rng = np.random.default_rng(seed)
    centres = unit(rng.normal(size=(species, dim)))
    spread = noise / np.sqrt(dim)
    vectors = unit(centres[rng.integers(0, species, size=images)] + spread * rng.normal(size=(images, dim)))
    texts, positives, hard = {}, {}, {}
    free = rng.permutation(images)
    cursor = 0
    for query_id in range(1, queries + 1):
        is_hard = query_id % 2 == 0
        centre = unit(rng.normal(size=dim))
        behaviour = unit(rng.normal(size=dim))
        behaviour = unit(behaviour - (behaviour @ centre) * centre)
        hint = 0.15 if is_hard else 1.0
        text = unit(centre + hint * behaviour + 0.2 * unit(rng.normal(size=dim)))
        count = int(rng.integers(30, 90))
        crowd = 1500 if is_hard else 300
        members = free[cursor : cursor + count + crowd]
        cursor += count + crowd
        if cursor > images:
            raise ValueError(f"{queries} queries need more than {images} images; give more images or fewer queries")
        vectors[members[:count]] = unit(centre + separation * behaviour + spread * rng.normal(size=(count, dim)))
        vectors[members[count:]] = unit(centre + spread * rng.normal(size=(crowd, dim)))
        texts[query_id], positives[query_id], hard[query_id] = text, set(members[:count].tolist()), is_hard
    kinds = {query_id: "hard" if is_hard else "easy" for query_id, is_hard in hard.items()}
    return World(vectors.astype(np.float32), texts, positives, hard, kinds)
