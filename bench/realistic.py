"""Embeddings shaped like a real CLIP space, for every search figure beside the easy generator.

The easy generator (`bench/search_bench.py`: 10,000 evenly sized, isotropic species) hid what users meet:
an independent check found recall@50 of the default index at 0.69 for image queries and 0.26 for text
queries on data shaped like this (issue 25). What this world has, and the published property it stands for:

  a common mean        every image leans the same way: random pairs of images have a clearly positive
                       cosine (the "cone effect", Liang et al., "Mind the Gap", NeurIPS 2022), and the
                       similarity to the modality mean is what Levi & Gilboa ("The Double-Ellipsoid Geometry
                       of CLIP", ICML 2025) call conformity.
  anisotropy           variance falls off along a power-law spectrum in a random basis, so a few hundred
                       directions hold most of it (CLIP spaces have a low effective rank); each genus has
                       its own few long axes and its own spread, so clusters differ in shape and size.
  long-tailed sizes    1,000 genera whose sizes follow a Zipf law, the largest about 300 times the
                       smallest (iNat24's species counts are long-tailed too); species inside each.
  near-duplicates      3% of images are a copy of another image of their genus with a little noise
                       (bursts of photos of one animal).
  a modality gap       text queries live around their own mean: the distance between the two modalities'
                       centroids is about 0.8 (Liang et al. report 0.82 for CLIP), and a text query's best
                       images sit at cosine about 0.3 (typical CLIP text-image scores, which CLIPScore
                       rescales by 2.5 for that reason).

`describe()` measures these on a sample; `bench/realistic_check.py` prints them beside the targets.
Everything is seeded: the same arguments give the same vectors, chunk by chunk, in the store's layout
(rows ordered by taxon, as `EmbeddingStore.consolidate` leaves them).
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GENERA = 1000
SPECIES_PER_GENUS = (2, 30)  # each genus has this many species, drawn uniformly
AXES = 6  # each genus's own long axes


@dataclass(frozen=True)
class Shape:
    """What makes one world unlike another: how genus sizes fall, how variance spreads over directions, how
    far apart and how tight things are, and where a text query's own variation lies. The scales are in the
    latent space; `clip` was tuned with describe() against the targets in the module docstring, the others
    against `describe()` too, to stay in CLIP's ranges (a text's best image at cosine 0.2 to 0.35) while
    differing in what an index is sensitive to."""

    size_law: str = "zipf"  # "zipf": sizes ~ rank^-size_exponent; "lognormal": sizes ~ exp(N(0, size_sigma))
    size_exponent: float = 0.83  # Zipf: the largest genus about 300x the smallest over 1,000 genera
    size_sigma: float = 1.2  # log-normal: a heavy middle, fewer giants than Zipf
    spectrum_exponent: float = 1.2  # the d-th direction's variance ~ (1 + d / spectrum_knee)^-exponent
    spectrum_knee: float = 16
    duplicates: float = 0.03  # the share of images that copy another of their genus with a little noise
    image_mean: float = 1.2  # length of the image modality's mean
    genus_spread: float = 0.55
    species_spread: float = 0.35
    axis_spread: float = 0.35
    noise: float = 0.45
    text_mean: float = 1.0  # text queries: their modality's mean ...
    text_concept: float = 0.3  # ... and how far towards their concept
    text_noise: float = 0.25  # variation shared with images: it moves a text query's ranking
    text_own: float = 0.9  # variation of the text side alone (wording) ...
    text_own_in_tail: bool = True  # ... where images hardly vary (lowers cosines only), or along their spectrum


# Named shapes, for choosing defaults across worlds rather than for one (issue 41). `clip` is issue 25's.
SHAPES = {
    "clip": Shape(),
    # Log-normal genus sizes, a flat spectrum (effective rank about twice clip's), looser genera, no
    # near-duplicates, and a text's own variation along the images' directions, with little of its concept: a
    # text's ranking is mostly set by its wording, so its best images scatter over many genera and lists, as
    # for a vague query or another model's text encoder. Issue 41's world unlike issue 25's (built for 512-d).
    "lognormal-flat": Shape(
        size_law="lognormal",
        spectrum_exponent=0.5,
        spectrum_knee=64,
        duplicates=0.0,
        genus_spread=0.4,
        noise=0.6,
        text_concept=0.1,
        text_noise=0.3,
        text_own=1.0,
        text_own_in_tail=False,
    ),
    # A steep spectrum (a few dozen directions hold most variance), tight species, many near-duplicates and a
    # wide gap: a text's best images sit lower than in `clip` (median cosine 0.29 at 1M, against 0.33).
    "steep-gap": Shape(
        spectrum_exponent=1.6,
        spectrum_knee=8,
        duplicates=0.1,
        species_spread=0.25,
        noise=0.35,
        text_mean=1.3,
        text_concept=0.22,
        text_noise=0.2,
        text_own=1.2,
    ),
}


def unit(rows: np.ndarray) -> np.ndarray:
    norms: np.ndarray = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / norms


@dataclass
class World:
    """The fixed parts of one seeded world: basis, spectrum, means, genera and species."""

    dim: int
    count: int
    seed: int
    basis: np.ndarray  # (dim, dim) orthonormal: latent coordinates -> embedding coordinates
    scale: np.ndarray  # (dim,) standard deviation per latent coordinate (the power-law spectrum)
    image_mean: np.ndarray  # (dim,) latent
    text_mean: np.ndarray  # (dim,) latent
    genus_sizes: np.ndarray  # (GENERA,) images per genus, summing to count
    genus_spread: np.ndarray  # (GENERA,) each genus's own spread factor
    axes: np.ndarray  # (GENERA, AXES, dim) each genus's long axes, latent
    species_genus: np.ndarray  # (species,) the genus of each species
    species_centres: np.ndarray  # (species, dim) latent
    shape: Shape = SHAPES["clip"]

    @classmethod
    def make(cls, count: int, dim: int = 1024, seed: int = 0, shape: Shape | str = "clip") -> "World":
        shape = SHAPES[shape] if isinstance(shape, str) else shape
        rng = np.random.default_rng(seed)
        basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        # Power law: the d-th direction's variance ~ (1 + d / knee)^-exponent, normalised to unit total variance.
        variance = (1 + np.arange(dim) / shape.spectrum_knee) ** -shape.spectrum_exponent
        scale = np.sqrt(variance / variance.sum()).astype(np.float32)
        image_mean = unit(rng.standard_normal(dim)).astype(np.float32) * shape.image_mean
        # The text mean is a mostly separate direction (the gap vector is nearly orthogonal to both
        # modalities' spread: "Is the Modality Gap a Bug or a Feature?", 2026).
        text_mean = unit(0.35 * unit(image_mean) + unit(rng.standard_normal(dim))).astype(np.float32) * shape.text_mean
        weights = 1.0 / np.arange(1, GENERA + 1) ** shape.size_exponent
        genus_sizes = _apportion(count, rng.permutation(weights))
        if shape.size_law == "lognormal":  # its own stream: the rest of the world is drawn as for Zipf
            weights = np.exp(np.random.default_rng([seed, 4]).normal(0, shape.size_sigma, GENERA))
            genus_sizes = _apportion(count, weights)
        genus_spread = np.exp(rng.normal(0, 0.35, GENERA)).astype(np.float32)
        # Unit directions shaped by the spectrum, each with its own length (a genus is long along some).
        axes = unit(rng.standard_normal((GENERA, AXES, dim)).astype(np.float32) * scale)
        axes *= np.exp(rng.normal(0, 0.5, (GENERA, AXES, 1))).astype(np.float32)
        genus_centres = rng.standard_normal((GENERA, dim)).astype(np.float32) * scale * shape.genus_spread
        species_counts = rng.integers(SPECIES_PER_GENUS[0], SPECIES_PER_GENUS[1] + 1, GENERA)
        species_genus = np.repeat(np.arange(GENERA), species_counts)
        species_centres = genus_centres[species_genus] + (
            rng.standard_normal((len(species_genus), dim)).astype(np.float32) * scale * shape.species_spread
        )
        return cls(
            dim=dim,
            count=count,
            seed=seed,
            basis=basis.astype(np.float32),
            scale=scale,
            image_mean=image_mean,
            text_mean=text_mean,
            genus_sizes=genus_sizes,
            genus_spread=genus_spread,
            axes=axes,
            species_genus=species_genus,
            species_centres=species_centres,
            shape=shape,
        )

    def _latent_images(self, genus: int, species: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        spread = self.genus_spread[genus]
        along = rng.standard_normal((len(species), AXES)).astype(np.float32) * self.shape.axis_spread
        noise = rng.standard_normal((len(species), self.dim)).astype(np.float32) * self.scale * self.shape.noise
        latent: np.ndarray = (
            self.image_mean + self.species_centres[species] + spread * (along @ self.axes[genus] + noise)
        )
        return latent

    def _embed(self, latent: np.ndarray) -> np.ndarray:
        return unit(latent @ self.basis.T).astype(np.float32)

    def _species_of(self, genus: int, size: int, rng: np.random.Generator) -> np.ndarray:
        members = np.flatnonzero(self.species_genus == genus)
        shares = rng.dirichlet(np.full(len(members), 0.7))
        return np.sort(members[np.minimum(np.searchsorted(np.cumsum(shares), rng.random(size)), len(members) - 1)])

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(unit float32 vectors, taxon ids) genus by genus, in taxon order; `count` rows in all."""
        for genus, size in enumerate(self.genus_sizes.tolist()):
            rng = np.random.default_rng([self.seed, 1, genus])
            species = self._species_of(genus, size, rng)
            vectors = self._embed(self._latent_images(genus, species, rng))
            copies = np.flatnonzero(rng.random(size) < self.shape.duplicates)
            if len(copies) and size > 1:
                originals = rng.integers(0, size, len(copies))
                jitter = rng.standard_normal((len(copies), self.dim)).astype(np.float32) * (0.1 / np.sqrt(self.dim))
                vectors[copies] = unit(vectors[originals] + jitter)
            yield vectors, species

    def image_queries(self, count: int, seed: int = 1) -> np.ndarray:
        """Fresh images drawn like the collection's (a genus by its size): "more like this image"."""
        rng = np.random.default_rng([self.seed, 2, seed])
        genera = rng.choice(GENERA, size=count, p=self.genus_sizes / self.genus_sizes.sum())
        rows = [self._latent_images(g, self._species_of(g, 1, rng), rng) for g in genera.tolist()]
        return self._embed(np.concatenate(rows))

    def text_queries(self, count: int, seed: int = 1) -> np.ndarray:
        """Text-like queries: a concept inside a genus (a species, and a point along the genus's own axes:
        "a heron with a fish") seen from the text side of the gap. Most of a text's own variation (wording)
        lies where images hardly vary (the tail of their spectrum): the gap and the text side's spread are
        nearly orthogonal to the images' ("Is the Modality Gap a Bug or a Feature?", 2026), so it lowers a
        text's cosines without scrambling its ranking. Genera drawn by the square root of their size, so
        small ones are asked about too (INQUIRE's queries cover rare species)."""
        rng = np.random.default_rng([self.seed, 3, seed])
        weights = np.sqrt(self.genus_sizes)
        genera = rng.choice(GENERA, size=count, p=weights / weights.sum())
        latent = [self._text_latent(genus, self._species_of(genus, 1, rng)[0], rng) for genus in genera.tolist()]
        return self._embed(np.stack(latent))

    def text_query_for(self, species: int, seed: int = 1) -> np.ndarray:
        """One text-like query about `species` (as text_queries makes them): what a query about it looks like."""
        rng = np.random.default_rng([self.seed, 4, seed])
        return self._embed(self._text_latent(int(self.species_genus[species]), species, rng)[None])[0]

    def _text_latent(self, genus: int, species: int, rng: np.random.Generator) -> np.ndarray:
        shape = self.shape
        along = rng.standard_normal(AXES).astype(np.float32) * shape.axis_spread
        concept = self.species_centres[species] + self.genus_spread[genus] * (along @ self.axes[genus])
        noise = rng.standard_normal(self.dim).astype(np.float32) * self.scale * shape.text_noise
        own_scale = self.scale[::-1] if shape.text_own_in_tail else self.scale
        own = unit(rng.standard_normal(self.dim).astype(np.float32) * own_scale) * shape.text_own
        latent: np.ndarray = self.text_mean + shape.text_concept * unit(concept) * shape.image_mean + noise + own
        return latent


def _apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Integer sizes proportional to `weights`, at least 1 each, summing to `total`."""
    raw = weights / weights.sum() * total
    sizes = np.maximum(1, np.floor(raw).astype(np.int64))
    short = total - int(sizes.sum())
    order = np.argsort(-(raw - np.floor(raw)))
    for i in order[: max(0, short)]:
        sizes[i] += 1
    while sizes.sum() > total:  # only when `total` is under a few thousand
        sizes[np.argmax(sizes)] -= 1
    return sizes


def generate(
    count: int, dim: int = 1024, seed: int = 0, shape: Shape | str = "clip"
) -> tuple[np.ndarray, np.ndarray, World]:
    """The whole world in memory (for tests and small benches): (float16 vectors, taxon ids, world)."""
    world = World.make(count, dim, seed, shape)
    vectors = np.empty((count, dim), dtype=np.float16)
    taxa = np.empty(count, dtype=np.int64)
    row = 0
    for chunk, species in world.chunks():
        vectors[row : row + len(chunk)] = chunk
        taxa[row : row + len(chunk)] = species
        row += len(chunk)
    return vectors, taxa, world


def stored(world: World, folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """The world as an embedding store's arrays under `folder` (float16 vectors memory-mapped, taxon ids),
    written once and read back on later runs of the same world."""
    return write_store(world.chunks(), world.count, world.dim, folder)


def write_store(
    chunks: Iterator[tuple[np.ndarray, np.ndarray]], count: int, dim: int, folder: Path
) -> tuple[np.ndarray, np.ndarray]:
    """`chunks` of (vectors, taxon ids), `count` rows in all, as float16 `vectors.npy` (memory-mapped) and
    `taxon_ids.npy` under `folder`; written only when `folder` does not hold them for `count` rows yet."""
    folder.mkdir(parents=True, exist_ok=True)
    vectors_path, taxa_path = folder / "vectors.npy", folder / "taxon_ids.npy"
    if not (vectors_path.exists() and taxa_path.exists() and len(np.load(taxa_path, mmap_mode="r")) == count):
        out = np.lib.format.open_memmap(vectors_path, mode="w+", dtype=np.float16, shape=(count, dim))
        taxa, row = np.empty(count, dtype=np.int64), 0
        for vectors, species in chunks:
            out[row : row + len(vectors)] = vectors
            taxa[row : row + len(vectors)] = species
            row += len(vectors)
        out.flush()
        del out
        np.save(taxa_path, taxa)
    return np.load(vectors_path, mmap_mode="r"), np.load(taxa_path)


def describe(vectors: np.ndarray, world: World, sample: int = 4000, seed: int = 0) -> dict[str, float]:
    """The statistics the module docstring names, measured on a sample of `vectors` (unit rows)."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(vectors), size=min(sample, len(vectors)), replace=False))
    images = np.asarray(vectors[rows], dtype=np.float32)
    texts = world.text_queries(min(sample, 500), seed=99)
    pairs = images[: len(images) // 2] * images[len(images) // 2 : 2 * (len(images) // 2)]
    image_cosine = float(pairs.sum(axis=1).mean())
    gap = float(np.linalg.norm(images.mean(axis=0) - texts.mean(axis=0)))
    centred = images - images.mean(axis=0)
    eigen = np.clip(np.linalg.eigvalsh(centred.T @ centred / len(centred))[::-1], 0, None)
    participation = float(eigen.sum() ** 2 / (eigen**2).sum())
    top_tenth = float(eigen[: world.dim // 10].sum() / eigen.sum())
    best = np.full(200, -np.inf, dtype=np.float32)  # each text's best image in the whole collection
    for start in range(0, len(vectors), 200_000):
        block = np.asarray(vectors[start : start + 200_000], dtype=np.float32)
        best = np.maximum(best, (texts[:200] @ block.T).max(axis=1))
    text_image = float((texts[:200] @ images.T).mean())
    return {
        "image_image_cosine": image_cosine,
        "image_conformity": float((images @ unit(images.mean(axis=0))).mean()),
        "modality_gap": gap,
        "text_best_image_cosine": float(np.median(best)),
        "text_random_image_cosine": text_image,
        "participation_ratio": participation,
        "variance_in_top_tenth": top_tenth,
        "largest_genus": int(world.genus_sizes.max()),
        "smallest_genus": int(world.genus_sizes.min()),
    }
