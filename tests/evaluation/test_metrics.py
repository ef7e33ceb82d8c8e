import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, ndcg_score

from evaluation import metrics as m


def test_the_inquire_appendix_worked_example():
    # R = 2, k = 5: (1,0,0,0,0) gives 0.5 and (1,0,0,0,1) gives 0.7.
    assert m.average_precision([1, 0, 0, 0, 0], R=2, k=5) == pytest.approx(0.5)
    assert m.average_precision([1, 0, 0, 0, 1], R=2, k=5) == pytest.approx(0.7)


def test_the_three_normalisers():
    rel = [0, 1, 0, 1, 0, 0]
    # P@2 = 1/2, P@4 = 2/4: the sum is 1.0
    assert m.average_precision(rel, R=5, k=6, normaliser="min") == pytest.approx(1.0 / 5)
    assert m.average_precision(rel, R=5, k=6, normaliser="r") == pytest.approx(1.0 / 2)
    assert m.average_precision(rel, R=10, k=6, normaliser="R") == pytest.approx(1.0 / 10)
    assert m.average_precision(rel, R=10, k=6, normaliser="min") == pytest.approx(1.0 / 6)
    assert m.average_precision([0, 0, 0], R=0, k=3) == 0.0
    with pytest.raises(ValueError, match="normaliser is one of"):
        m.average_precision(rel, R=5, k=6, normaliser="max")


def test_ndcg_mrr_precision_recall_hit_oracle_by_hand():
    rel = [0, 1, 0, 1]
    dcg = 1 / np.log2(3) + 1 / np.log2(5)
    assert m.ndcg(rel, R=3, k=4) == pytest.approx(dcg / (1 + 1 / np.log2(3) + 1 / np.log2(4)))
    assert m.ndcg(rel, R=1, k=4) == pytest.approx(dcg / 1.0)  # IDCG over min(k, R) = 1 image
    assert m.reciprocal_rank(rel, k=4) == pytest.approx(0.5)
    assert m.reciprocal_rank(rel, k=1) == 0.0
    assert m.precision(rel, k=4) == 0.5
    assert m.recall(rel, R=8, k=4) == 0.25
    assert m.hit(rel, k=1) == 0.0 and m.hit(rel, k=2) == 1.0
    assert m.oracle_average_precision(rel, R=3, k=4) == pytest.approx(2 / 3)
    assert m.average_precision([1, 1, 0, 0], R=3, k=4) == pytest.approx(2 / 3)  # the oracle's reranking


def test_a_short_run_is_scored_as_if_padded_with_non_relevant():
    assert m.average_precision([1], R=2, k=50) == pytest.approx(0.5)
    assert m.ndcg([], R=2, k=5) == 0.0


def test_ties_keep_the_runs_order():
    order = m.rank([0.5, 0.9, 0.5, 0.9])
    assert order.tolist() == [1, 3, 0, 2]


relevance_lists = st.lists(st.integers(0, 1), min_size=1, max_size=80)


@settings(max_examples=300, deadline=None)
@given(relevance_lists, st.integers(1, 60), st.integers(0, 40))
def test_ap_with_min_normaliser_stays_in_0_1(rel, k, extra):
    R = sum(rel) + extra
    assert 0.0 <= m.average_precision(rel, R, k) <= 1.0 + 1e-12


@settings(max_examples=300, deadline=None)
@given(relevance_lists, st.integers(1, 60), st.integers(0, 40), st.data())
def test_moving_a_relevant_image_up_into_the_top_k_never_lowers_ap(rel, k, extra, data):
    R = sum(rel) + extra
    relevant_below = [i for i, value in enumerate(rel) if value and i >= k]
    non_relevant_above = [i for i, value in enumerate(rel[:k]) if not value]
    if not relevant_below or not non_relevant_above:
        return
    low, high = data.draw(st.sampled_from(relevant_below)), data.draw(st.sampled_from(non_relevant_above))
    moved = list(rel)
    moved[low], moved[high] = moved[high], moved[low]
    assert m.average_precision(moved, R, k) > m.average_precision(rel, R, k)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=2, max_size=120), st.integers(1, 100), st.integers(0, 20))
def test_equal_to_the_released_inquire_evaluation_with_scikit_learn(rel, k, missed):
    """INQUIRE's code: AP@k = sklearn AP over the top k * r / min(k, R); nDCG = sklearn ndcg_score
    with the missed positives appended at score -100. Distinct scores (no ties), and runs at least k
    deep as INQUIRE's are (in a shorter run, scikit-learn would rank the appended positives inside the top k)."""
    k = min(k, len(rel))
    scores = np.linspace(1.0, -1.0, len(rel))  # strictly decreasing: the run's order, no ties
    rel = np.array(rel)
    R = int(rel.sum()) + missed
    top_rel, top_scores = rel[:k], scores[:k]
    r = int(top_rel.sum())
    expected_ap = average_precision_score(top_rel, top_scores) * r / min(k, R) if r > 0 else 0.0
    assert m.average_precision(rel, R, k) == pytest.approx(expected_ap, abs=1e-9)
    positives_not_in_run = R - int(rel.sum())
    y_true = np.concatenate([rel, np.ones(positives_not_in_run)])
    y_score = np.concatenate([scores, np.full(positives_not_in_run, -100.0)])
    if R > 0:
        assert m.ndcg(rel, R, k) == pytest.approx(ndcg_score([y_true], [y_score], k=k), abs=1e-9)


def test_means_come_with_a_standard_error_and_a_bootstrap_interval():
    summary = m.mean_with_uncertainty([0.2, 0.4, 0.6, 0.8])
    assert summary["mean"] == pytest.approx(0.5)
    assert summary["se"] == pytest.approx(np.std([0.2, 0.4, 0.6, 0.8], ddof=1) / 2)
    assert 0.2 <= summary["ci95"][0] < 0.5 < summary["ci95"][1] <= 0.8


def test_the_permutation_test_tells_a_real_difference_from_none():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=60)
    assert m.paired_permutation_test(a, a) == 1.0
    assert m.paired_permutation_test(a + 0.2, a) < 0.001
    assert m.paired_permutation_test(a + rng.normal(0, 0.01, 60), a) > 0.05


def inquire_ap_at_k(top_rel, top_scores, R, k):
    """INQUIRE's released ap_at_k (src/metrics.py): scikit-learn's AP over the run's top k, times r / min(R, k)."""
    r = int(np.sum(top_rel))
    return average_precision_score(top_rel, top_scores) * r / min(R, k) if r > 0 else 0.0


tied_runs = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4)), min_size=2, max_size=100)


@settings(max_examples=300, deadline=None)
@given(tied_runs, st.integers(1, 100), st.integers(0, 20))
def test_tied_scores_are_averaged_as_scikit_learn_and_inquire_do(entries, k, missed):
    """Integer scores, as an LLM judge gives: many ties. With ties="average" AP@k and nDCG@k equal
    INQUIRE's code (scikit-learn's average_precision_score and ndcg_score), whatever order the tied
    entries come in."""
    entries.sort(key=lambda entry: -entry[1])  # a run comes sorted by score; tied entries in file order
    rel = np.array([value for value, _ in entries], dtype=float)
    scores = np.array([score for _, score in entries], dtype=float)
    k = min(k, len(rel))
    R = int(rel.sum()) + missed
    if R == 0:
        return
    assert m.average_precision(rel, R, k, scores=scores) == pytest.approx(
        inquire_ap_at_k(rel[:k], scores[:k], R, k), abs=1e-12
    )
    padded_true = np.concatenate([rel[:k], np.ones(R - int(rel[:k].sum()))])
    padded_scores = np.concatenate([scores[:k], np.full(R - int(rel[:k].sum()), -100.0)])
    if len(padded_true) > 1:  # scikit-learn refuses a single document
        assert m.ndcg(rel, R, k, scores=scores) == pytest.approx(
            ndcg_score([padded_true], [padded_scores], k=k), abs=1e-12
        )
    # Inside the top k, the order of tied entries does not matter (it would with ties="run-order").
    straddles = len(rel) > k and scores[k] == scores[k - 1]
    if not straddles:
        reversed_ties = np.lexsort((-np.arange(len(rel)), -scores))
        for metric in (m.average_precision, m.ndcg):
            assert metric(rel[reversed_ties], R, k, scores=scores[reversed_ties]) == pytest.approx(
                metric(rel, R, k, scores=scores), abs=1e-12
            )


def test_a_block_of_ties_is_one_threshold():
    # Three tied entries, one relevant, then a relevant one: sklearn gives the tied positive P = 1/3.
    rel, scores = [0, 1, 0, 1], [1.0, 1.0, 1.0, 0.5]
    assert m.average_precision(rel, R=2, k=4, scores=scores) == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert m.average_precision(rel, R=2, k=4) == pytest.approx((1 / 2 + 2 / 4) / 2)  # run order
    discounts = 1 / np.log2(np.arange(2, 6))
    tied_dcg = (1 / 3) * discounts[:3].sum() + discounts[3]
    assert m.ndcg(rel, R=2, k=4, scores=scores) == pytest.approx(tied_dcg / discounts[:2].sum())
    assert m.score_query(rel, 2, 4, ("ap",), scores=scores, ties="run-order") == {"ap": pytest.approx(0.5)}
    with pytest.raises(ValueError, match="ties are average or run-order"):
        m.score_query(rel, 2, 4, ties="random")
    with pytest.raises(ValueError, match="4 relevance values but 3 scores"):
        m.average_precision(rel, 2, 4, scores=scores[:3])
