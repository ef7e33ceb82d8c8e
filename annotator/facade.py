"""The labeling app's one public door. Code outside annotator/ imports from here, or annotator.models.

    from annotator.facade import cross_fitted, ranking_by, recall_estimate

Importing it loads no model library: the model clients (lmm) load torch, transformers or openai only when a
model is asked (tests/test_architecture.py checks that a command starts without them).
"""

from annotator.completeness.advice import LEAST as ADVICE_LEAST
from annotator.completeness.advice import WINDOW as ADVICE_WINDOW
from annotator.completeness.certify import (
    check_size,
    claim,
    hiding_estimate,
    missing_at_target,
    most_positives,
    pair_miss_rate,
    staged_sizes,
    tested_at,
    tolerance_for_misses,
)
from annotator.completeness.check_requests import ADJUDICATOR, MISS_RATE, PER_LOOK
from annotator.completeness.checks import TOLERATE as QUERY_TOLERATE
from annotator.completeness.checks import TOLERATE_SHARE as BENCHMARK_TOLERATE_SHARE
from annotator.completeness.checks import benchmark_tolerance
from annotator.completeness.frames import DEFAULT_DEPTH_STEP, DEFAULT_MIN_DEPTH
from annotator.labels.visibility import of as sight_of
from annotator.methods import rerank
from annotator.methods.registry import MODEL_METHODS
from annotator.models import Query
from annotator.progress.figures import recall_estimate
from annotator.progress.stopping import DEPTH, cross_fitted
from annotator.releases.publish import BadRelease, ground_truth_files
from annotator.releases.publish import names as release_names

__all__ = [
    "ADJUDICATOR",
    "ADVICE_LEAST",
    "ADVICE_WINDOW",
    "BENCHMARK_TOLERATE_SHARE",
    "DEFAULT_DEPTH_STEP",
    "DEFAULT_MIN_DEPTH",
    "DEPTH",
    "MISS_RATE",
    "PER_LOOK",
    "QUERY_TOLERATE",
    "BadRelease",
    "MODEL_METHODS",
    "benchmark_tolerance",
    "check_size",
    "claim",
    "cross_fitted",
    "ground_truth_files",
    "hiding_estimate",
    "missing_at_target",
    "most_positives",
    "pair_miss_rate",
    "model_of",
    "ranking_by",
    "recall_estimate",
    "release_names",
    "sight_of",
    "staged_sizes",
    "tested_at",
    "tolerance_for_misses",
]


def model_of(method: str) -> str:
    """The configured model that answers a model method; ModelUnavailable where none is (annotator.methods.rerank)."""
    return rerank.model_of(method)


def ranking_by(query: Query, method: str, *, top: int, depth: int) -> list[tuple[int, float]]:
    """The head of `query`'s ranking by a model method, run in this process: annotator.methods.rerank.ranking_by."""
    return rerank.ranking_by(query, method, top=top, depth=depth)
