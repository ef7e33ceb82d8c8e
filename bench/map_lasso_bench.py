"""Benchmark: does the map's lasso find a query's other clusters sooner than the feedback ranking alone?

A simulated annotator labels a query whose relevant images lie in several clusters: every image of SPECIES
species, of different genera (--spread genera: a context shared by unrelated species, "animals tangled in
fishing line") or of one genus (--spread genus: sister species, "a heron with a fish"). The text query is about
the first species (bench/realistic.py's text-like queries: across the
modality gap), so the ranking starts in one cluster. The annotator labels pages of 50 and is wrong 5% of the time.

  feedback   each page is the feedback ranking's best 50 unlabeled images (SeeSaw's logistic regression on every
             label so far, held to the text: search.facade.strategy_vector), the labeling page's learning ranking.
  + lasso    the same, but when two pages in a row bring under 20% relevant (the ranking has flattened), the
             annotator looks at the map (search/layout.py on this world: t-SNE on a sample, the rest placed) and
             lassoes the unlabeled cluster nearest the relevant images found (the map's regions: k-means on the
             2-D positions, one region per 400 images; "unlabeled": none of its images labeled yet), then labels
             inside it in the same ranking's order (the grid's `within=` filter) until a page brings under 10%.

Reports, over several queries (seeds), the labels each needs to reach 95% recall of the true relevant set (not
the annotator's labels), median and per seed; a run stops at --cap labels.

Usage: .venv/bin/python bench/map_lasso_bench.py [--n 100000] [--seeds 5] [--cap 20000]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realistic  # noqa: E402

from search import layout  # noqa: E402
from search.facade import strategy_vector  # noqa: E402

SPECIES = 4
PAGE = 50
WRONG = 0.05
REGION_SIZE = 400
REFIT_EVERY = 2  # pages
BUDGETS = (500, 1000, 2000, 4000)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def choose_query(
    world: realistic.World, taxa: np.ndarray, rng: np.random.Generator, spread: str
) -> tuple[np.ndarray, int]:
    """(the relevant species, the species the text is about): SPECIES species with 60 to 1,500 images each (a
    concept with a few hundred to a few thousand relevant images), of one genus ("genus": sister species, near
    each other) or of SPECIES different genera ("genera": a context shared across unrelated species, "animals
    eating plastic")."""
    sizes = np.bincount(taxa, minlength=len(world.species_genus))
    fitting = (sizes >= 60) & (sizes <= 1500)
    if spread == "genera":
        genera = rng.choice(np.unique(world.species_genus[fitting]), size=SPECIES, replace=False)
        chosen = np.array([rng.choice(np.flatnonzero(fitting & (world.species_genus == g))) for g in genera])
        return chosen, int(chosen[0])
    genera = [g for g in np.unique(world.species_genus) if np.sum(fitting & (world.species_genus == g)) >= SPECIES]
    genus = genera[rng.integers(len(genera))]
    candidates = np.flatnonzero(fitting & (world.species_genus == genus))
    chosen = rng.choice(candidates, size=SPECIES, replace=False)
    return chosen, int(chosen[0])


def regions_of(xy: np.ndarray, seed: int) -> np.ndarray:
    """What an annotator sees as the map's clusters: k-means regions of the 2-D positions."""
    from sklearn.cluster import MiniBatchKMeans  # only this bench groups the map

    k = max(2, len(xy) // REGION_SIZE)
    return MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=4096).fit_predict(xy)


def run(
    vectors: np.ndarray,
    truth: np.ndarray,
    text: np.ndarray,
    xy: np.ndarray | None,
    regions: np.ndarray | None,
    rng: np.random.Generator,
    cap: int,
) -> dict:
    """Labels until 95% of `truth` is labeled (whatever the annotator answered), or `cap`: {"labels": how many
    (None past the cap), "recall_at": {budget: recall}, "lassos": regions lassoed}."""
    count = len(vectors)
    labeled = np.zeros(count, dtype=bool)
    answer = np.zeros(count, dtype=bool)  # what the annotator said: relevant?
    target = int(np.ceil(0.95 * truth.sum()))
    flat_pages, inside, visited = 0, None, set()
    recall_at: dict[int, float] = {}
    vector = text
    pages = 0
    while labeled.sum() < cap:
        done = int(labeled.sum())
        for budget in BUDGETS:
            if budget not in recall_at and done >= budget:
                recall_at[budget] = float((labeled & truth).sum() / truth.sum())
        relevant, not_relevant = vectors[labeled & answer], vectors[labeled & ~answer]
        if pages % REFIT_EVERY == 0:  # the page re-ranks every 25 labels; refitting every 100 keeps this bench short
            vector = strategy_vector("feedback", text, relevant, not_relevant) if len(relevant) else text
        pages += 1
        scores = vectors @ vector
        pool = ~labeled if inside is None else (~labeled & inside)
        order = np.flatnonzero(pool)
        page = order[np.argsort(-scores[order])[:PAGE]]
        if not len(page):
            if inside is None:
                break  # everything labeled
            inside = None
            continue
        labeled[page] = True
        said = truth[page] ^ (rng.random(len(page)) < WRONG)
        answer[page] = said
        if (labeled & truth).sum() >= target:
            final = float((labeled & truth).sum() / truth.sum())  # at least this at every larger budget
            recall_at |= {budget: final for budget in BUDGETS if budget not in recall_at}
            return {"labels": int(labeled.sum()), "recall_at": recall_at, "lassos": len(visited)}
        share = said.mean()
        if inside is not None:
            if share < 0.10:
                inside = None  # the region is done: back to the whole ranking
            continue
        flat_pages = flat_pages + 1 if share < 0.20 else 0
        if xy is not None and regions is not None and flat_pages >= 2:
            inside = nearest_unlabeled_region(xy, regions, labeled, answer, visited)
            flat_pages = 0
    return {"labels": None, "recall_at": recall_at, "lassos": len(visited)}


def nearest_unlabeled_region(
    xy: np.ndarray, regions: np.ndarray, labeled: np.ndarray, answer: np.ndarray, visited: set[int]
) -> np.ndarray | None:
    """The images of the region nearest (on the map) to a relevant image found, among regions nobody has labeled
    in; None when there is none. The annotator sees this on the map: green points, and grey clusters beside."""
    found = xy[labeled & answer]
    if not len(found):
        return None
    touched = set(np.unique(regions[labeled]).tolist()) | visited
    best, best_distance = None, np.inf
    for region in np.unique(regions):
        if int(region) in touched:
            continue
        centre = xy[regions == region].mean(axis=0)
        distance = float(np.min(np.linalg.norm(found - centre, axis=1)))
        if distance < best_distance:
            best, best_distance = int(region), distance
    if best is None:
        return None
    visited.add(best)
    members: np.ndarray = regions == best
    return members


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--cap", type=int, default=6_000)
    parser.add_argument("--sample", type=int, default=20_000)
    parser.add_argument("--workdir", default="/tmp/quire-map-bench")
    parser.add_argument("--spread", choices=["genus", "genera"], default="genera")
    args = parser.parse_args()
    world = realistic.World.make(args.n, 1024, seed=0, shape="clip")
    stored, taxa = realistic.stored(world, Path(args.workdir) / f"clip-{args.n}")
    vectors = np.asarray(stored, dtype=np.float32)
    started = time.perf_counter()
    fitted = layout.fit(vectors, np.arange(args.n), sample=args.sample)
    xy = np.concatenate([layout.place(fitted, vectors[s : s + 50_000]) for s in range(0, args.n, 50_000)])
    log(f"map of {args.n:,} images in {time.perf_counter() - started:.0f} s")
    rows = []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        species, about = choose_query(world, taxa, rng, args.spread)
        truth = np.isin(taxa, species)
        text = world.text_query_for(about, seed=seed)
        regions = regions_of(xy, seed)
        row = {
            "seed": seed,
            "relevant": int(truth.sum()),
            "species_sizes": [int(np.sum(taxa == s)) for s in species],
            "feedback": run(vectors, truth, text, None, None, np.random.default_rng([seed, 1]), args.cap),
            "feedback_and_lasso": run(vectors, truth, text, xy, regions, np.random.default_rng([seed, 1]), args.cap),
        }
        log(json.dumps(row))
        rows.append(row)

    def median(key: str) -> float | None:
        values = [row[key]["labels"] for row in rows if row[key]["labels"] is not None]
        return statistics.median(values) if len(values) == len(rows) else None

    def recall(key: str, budget: int) -> float | None:
        values = [row[key]["recall_at"].get(budget) for row in rows]
        return statistics.median(values) if None not in values else None

    result = {
        "n": args.n,
        "cap": args.cap,
        "spread": args.spread,
        "rows": rows,
        "median_labels_to_95": {key: median(key) for key in ("feedback", "feedback_and_lasso")},
        "median_recall_at": {
            key: {budget: recall(key, budget) for budget in BUDGETS} for key in ("feedback", "feedback_and_lasso")
        },
    }
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"map_lasso_{args.spread}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
