"""Exact ranking with the collection's vectors held on a card (a CUDA GPU), in torch.

Why torch, not faiss-gpu's flat index: on an H100 torch's fp16 matmul and topk rank 5M x 1024 in 3.6 ms, 94%
of the card's memory-bandwidth floor (bench/RESULTS.md), so there is nothing left for another kernel to win; a
species' or a lasso's rows are gathered on the card and ranked by the same lines (faiss-gpu's flat index takes
no ID selector outside its cuVS indexes); torch is installed wherever Quire embeds; and the same functions run on
a CPU device, where the tests drive them (tests/search/test_card.py).

Exact, not "close": two passes. The first scores every row in fp16 (the card's fast path: the query rounded to
fp16, each product summed in fp32 and the sum rounded to fp16) and keeps the best `wanted + margin`. The second
re-scores those candidates exactly: the stored fp16 numbers and the fp32 query, summed in fp64 and rounded to fp32.
A row the first pass left out scored at most the cut c there, so its exact score is at most c + ERROR; where the
wanted-th best exact score is above that, no left-out row can enter the answer. Otherwise (near-duplicates and ties
at the cut) the margin grows fourfold until it holds or every row is a candidate. The answer is then the CPU's:
same ids, same order, ties by image id. The CPU's FAISS scan sums the same products in fp32, so the scores agree
to about 1e-7, and the two orders can differ only between images whose scores are that close (near-duplicates),
which neither order can tell apart.

ERROR: for stored rows x (unit length, fp16) and a unit query q, rounding q to fp16 moves the score by at most
2^-11 * sum|x_i q_i| <= 2^-11 (Cauchy-Schwarz); rounding the sum to fp16 by half an ulp, 2^-11 below 1; summing
1,024 products in fp32 by about d * 2^-24 = 6e-5. 2^-8 bounds the three with room. cuBLAS may otherwise reduce a
split fp16 sum in fp16 (PyTorch's allow_fp16_reduced_precision_reduction, on by default), which this bound does
not cover: it is turned off for the process when vectors go to a card.
"""

import logging
import math
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from .backends import FaissVectors
from .index import Searcher
from .results import Hit

ERROR = 2.0**-8
MARGIN = 64  # candidates beyond those wanted in the first pass; ties at the cut widen it
# Queries x rows scored at once in the first pass (fp16): 256 MiB of scores. A batch of 250 queries over 5M
# rows is scored in about 500 slices of rows, each merged into the running best.
SCORES_AT_ONCE = 2**27
# The card keeps this share of its free memory for everything else (the model, the scores, other processes).
HEADROOM = 0.25

logger = logging.getLogger(__name__)


def fits(count: int, dim: int, device: torch.device) -> bool:
    """Whether `count` x `dim` fp16 vectors fit the card's free memory with HEADROOM to spare."""
    if device.type != "cuda":
        return True
    free, _ = torch.cuda.mem_get_info(device)
    return count * dim * 2 <= (1 - HEADROOM) * free


def exact_fp16_sums() -> None:
    """fp16 products summed in fp32, never in fp16 (cuBLAS may otherwise reduce in fp16 for speed): ERROR's bound
    on a first-pass score assumes it. torch keeps this flag for the whole process; it is set here, where vectors go
    on a card, once and on purpose, and it only ever makes an fp16 product more exact (the CLIP embedder's too)."""
    if torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction:
        logger.info("fp16 matrix products now sum in fp32 in this process (search/card.py: the ranking's error bound)")
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False


class CardRanker:
    """The store's vectors on `device` (fp16, store row order) and exact rankings of them, single or batched."""

    def __init__(self, vectors: np.ndarray, image_ids: np.ndarray, device: torch.device | str) -> None:
        self.device = torch.device(device)
        if self.device.type == "cuda":
            exact_fp16_sums()
        self.vectors = _to_device(vectors, self.device)
        self.image_ids = np.asarray(image_ids, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def rank(
        self,
        queries: np.ndarray,
        wanted: int,
        *,
        rows: np.ndarray | None = None,
        excluded_rows: Sequence[np.ndarray] = (),
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query (float32, (n, dim), unit rows): the `wanted` best store rows by exact inner product,
        as (rows, fp32 scores), best first, ties by image id. `rows`: rank only these store rows (a species, a
        lasso); `excluded_rows`: per query, rows left out (its labeled images)."""
        queries = self._checked(queries)
        chosen, vectors = self._ranked_set(rows)
        count = int(vectors.shape[0])
        skip = [self._positions(excluded, chosen) for excluded in _per_query(excluded_rows, len(queries))]
        wanted = min(wanted, count)
        nothing = (np.empty(0, np.int64), np.empty(0, np.float32))
        answers = [nothing] * len(queries)
        if wanted <= 0 or count == 0:
            return answers
        ids = self.image_ids if chosen is None else self.image_ids[chosen]
        pending = list(range(len(queries)))
        margin = MARGIN
        while pending:
            take = min(count, wanted + margin + max(len(skip[i]) for i in pending))
            cut, candidates = self._first_pass(vectors, queries[pending], take, [skip[i] for i in pending])
            all_positions, all_scores = self._second_pass(vectors, queries[pending], candidates)
            still = []
            for slot, number in enumerate(pending):
                positions, scores = _best_first(all_positions[slot], all_scores[slot], ids, skip[number])
                positions, scores = positions[:wanted], scores[:wanted]
                if _settled(scores, wanted, float(cut[slot]), every_row=take >= count):
                    answers[number] = (positions if chosen is None else chosen[positions], scores)
                else:
                    still.append(number)
            pending, margin = still, 4 * margin + wanted
        return answers

    def _ranked_set(self, rows: np.ndarray | None) -> tuple[np.ndarray | None, torch.Tensor]:
        """The store rows ranked (None: all of them) and their vectors on the card."""
        if rows is None:
            return None, self.vectors
        chosen = np.asarray(rows, dtype=np.int64)
        return chosen, self.vectors.index_select(0, torch.as_tensor(chosen, device=self.device))

    def _checked(self, queries: np.ndarray) -> np.ndarray:
        """The query vectors as float32 rows; ValueError when their dimension is not the card's vectors'."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        dim = int(self.vectors.shape[1])
        if queries.ndim != 2 or queries.shape[1] != dim:
            raise ValueError(f"the query vectors have {queries.shape[-1]} dimensions, the vectors on the card {dim}")
        return queries

    def _positions(self, excluded: np.ndarray | None, rows: np.ndarray | None) -> np.ndarray:
        """Positions (in the ranked set) of excluded store rows."""
        if excluded is None or not len(excluded):
            return np.empty(0, np.int64)
        excluded = np.asarray(excluded, dtype=np.int64)
        if rows is None:
            return np.unique(excluded)
        rows = np.asarray(rows, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        at = np.minimum(np.searchsorted(rows, excluded, sorter=order), len(rows) - 1)
        return np.unique(order[at][rows[order[at]] == excluded])

    def _first_pass(
        self, vectors: torch.Tensor, queries: np.ndarray, take: int, skip: list[np.ndarray]
    ) -> tuple[np.ndarray, torch.Tensor]:
        """fp16 scores of every row for each query; the `take` best positions per query and the lowest fp16 score
        among them (the cut). Rows are scored in slices, each slice's best merged into the running best."""
        q16 = torch.as_tensor(queries, device=self.device).to(torch.float16)
        count = int(vectors.shape[0])
        step = max(take, SCORES_AT_ONCE // max(1, len(queries)))
        best_scores = torch.empty((len(queries), 0), dtype=torch.float16, device=self.device)
        best_positions = torch.empty((len(queries), 0), dtype=torch.int64, device=self.device)
        # Only the queries that leave rows out: an evaluation's 250 queries leave none, and a loop over them all
        # would launch thousands of empty kernels.
        device = self.device
        skip_on_card = [(slot, torch.as_tensor(gone, device=device)) for slot, gone in enumerate(skip) if len(gone)]
        for start in range(0, count, step):
            scores = q16 @ vectors[start : start + step].T
            for slot, skipped in skip_on_card:
                inside = skipped[(skipped >= start) & (skipped < start + step)] - start
                if len(inside):
                    scores[slot].index_fill_(0, inside, -math.inf)
            top = torch.topk(scores, min(take, scores.shape[1]), dim=1)
            best_scores = torch.cat([best_scores, top.values], dim=1)
            best_positions = torch.cat([best_positions, top.indices + start], dim=1)
            if best_scores.shape[1] > take:
                keep = torch.topk(best_scores, take, dim=1)
                best_scores, best_positions = keep.values, torch.gather(best_positions, 1, keep.indices)
        cut = best_scores.min(dim=1).values.float().cpu().numpy()
        return cut, best_positions

    def _second_pass(
        self, vectors: torch.Tensor, queries: np.ndarray, candidates: torch.Tensor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores of each query's `candidates` (positions in `vectors`, one row per query), as numpy arrays
        of the same shape. In fp64, rounded to fp32: each is the correctly rounded sum, so identical rows (copies
        of an image) score alike wherever they sit, and their ties fall to the image id. In groups of queries,
        each group's candidate rows gathered once (at most SCORES_AT_ONCE fp64 numbers)."""
        query64 = torch.as_tensor(queries, device=self.device).double()
        group = max(1, SCORES_AT_ONCE // 2 // max(1, candidates.shape[1] * vectors.shape[1]))
        scores = []
        for start in range(0, len(queries), group):
            rows = vectors[candidates[start : start + group]].double()  # (group, candidates, dim)
            scores.append(torch.bmm(rows, query64[start : start + group, :, None])[:, :, 0].float())
        return candidates.cpu().numpy(), torch.cat(scores).cpu().numpy()


def _settled(scores: np.ndarray, wanted: int, cut: float, *, every_row: bool) -> bool:
    """Whether a query's best `wanted` are final: every row was a candidate, or no row left out of the first pass
    can beat the last one kept (the module's bound: its fp16 score is under the cut, its true one within ERROR)."""
    return every_row or (len(scores) == wanted and float(scores[-1]) > cut + ERROR)


def _best_first(
    positions: np.ndarray, scores: np.ndarray, ids: np.ndarray, skip: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`positions` by score, best first, ties by image id (`ids`, by position), the skipped ones left out."""
    if len(skip):
        keep = ~np.isin(positions, skip)
        positions, scores = positions[keep], scores[keep]
    order = np.lexsort((ids[positions], -scores))
    return positions[order], scores[order]


def _per_query(excluded_rows: Sequence[np.ndarray], count: int) -> list[np.ndarray | None]:
    return [excluded_rows[i] if i < len(excluded_rows) else None for i in range(count)]


def _to_device(vectors: np.ndarray, device: torch.device) -> torch.Tensor:
    """The fp16 store on `device`, copied a block at a time (the store is a memory map: 10 GB at 5M x 1024)."""
    count, dim = vectors.shape
    out = torch.empty((count, dim), dtype=torch.float16, device=device)
    block = 65_536  # 128 MiB of host memory at a time
    for start in range(0, count, block):
        out[start : start + block] = torch.from_numpy(np.array(vectors[start : start + block], copy=True))
    return out


class CardVectors(FaissVectors):
    """The FAISS backend with its rankings on a card: the same loaded index and store (fetches, samples and the
    page cache are the store's), every search exact on the card, batches of queries ranked together."""

    described = "the search index, on the GPU"

    def __init__(self, searcher: Searcher, device: torch.device | str) -> None:
        super().__init__(searcher)
        self.ranker = CardRanker(searcher.embeddings.vectors, searcher.embeddings.image_ids, device)

    def search(
        self,
        vector: np.ndarray,
        *,
        k: int = 50,
        offset: int = 0,
        taxon_ids: Iterable[int] | None = None,
        exclude_image_ids: Iterable[int] | None = None,
        wide: bool = False,
    ) -> list[Hit]:
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.dim:
            raise ValueError(f"the query vector has {vector.shape[0]} dimensions, the index {self.dim}")
        return self.search_many(
            vector[None, :], k=k, offset=offset, taxon_ids=taxon_ids, exclude_image_ids=[exclude_image_ids or ()]
        )[0]

    def search_many(
        self,
        vectors: np.ndarray,
        *,
        k: int = 50,
        offset: int = 0,
        taxon_ids: Iterable[int] | None = None,
        exclude_image_ids: Sequence[Iterable[int]] = (),
    ) -> list[list[Hit]]:
        """One ranking per row of `vectors` (unit, float32), ranked together: hits offset .. offset+k-1 each,
        as `search` answers them. `exclude_image_ids`: per query (or none)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if k <= 0 or offset < 0:
            return [[] for _ in vectors]
        rows = None if taxon_ids is None else np.sort(self.searcher.rows_of_taxa(taxon_ids))
        excluded = [
            self.searcher.rows_of_ids(np.asarray(sorted({int(i) for i in ids}), dtype=np.int64))
            for ids in exclude_image_ids
        ]
        answers = self.ranker.rank(vectors, offset + k, rows=rows, excluded_rows=excluded)
        embeddings = self.searcher.embeddings
        return [
            [
                Hit(int(embeddings.image_ids[row]), float(score), int(embeddings.taxon_ids[row]))
                for row, score in zip(found[offset:], scores[offset:], strict=True)
            ]
            for found, scores in answers
        ]

    def score(self, image_ids: np.ndarray, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """fp32 scores on the card of those of `image_ids` in the store (a lasso's images): (scores, found)."""
        rows, found = self.searcher.locate(np.asarray(image_ids, dtype=np.int64))
        chosen = torch.as_tensor(rows[found], device=self.ranker.device)
        query = torch.as_tensor(np.asarray(vector, dtype=np.float32), device=self.ranker.device).double()
        scores = self.ranker.vectors.index_select(0, chosen).double() @ query
        return scores.float().cpu().numpy(), found


def on_card(searcher: Searcher, device: torch.device | str = "cuda") -> CardVectors | None:
    """The searcher's store moved to the card, or None (with a log line) where it does not fit: searches then
    stay on the CPU's index."""
    count, dim = searcher.embeddings.vectors.shape
    if not fits(count, dim, torch.device(device)):
        logger.warning(
            "%s x %s vectors (%.1f GB) do not fit the GPU's free memory: searches stay on the CPU's index",
            f"{count:,}",
            dim,
            count * dim * 2 / 1e9,
        )
        return None
    return CardVectors(searcher, device)
