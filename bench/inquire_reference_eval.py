"""The baseline for `manage.py evaluate`: INQUIRE's own evaluation, driven as its scripts drive it.

INQUIRE's src/eval_fullrank.py reads the queries and annotations with pandas, selects each query's
annotations with a boolean mask, and scores the top k with src/metrics.py's compute_retrieval_metrics
(scikit-learn's average_precision_score and ndcg_score). Its run comes from a model in memory; here it
is read from the same CSV file `manage.py evaluate` reads, with pandas. The metric formulas below are
INQUIRE's (cited beside each), written out again so that this script runs here without torch or their
data layout. Prints mean AP@k and nDCG@k x100.

Usage: python bench/inquire_reference_eval.py QRELS QUERIES RUN_CSV [--k 50]
"""

import argparse

import numpy as np
import pandas as pd
import sklearn.metrics


def ap_at_k(y_true, y_pred, count_pos, k):
    # INQUIRE src/metrics.py ap_at_k: sklearn AP over the top k, times r / min(count_pos, k).
    unnormalized = sklearn.metrics.average_precision_score(y_true[:k], y_pred[:k]) if sum(y_true[:k]) > 0 else 0
    return unnormalized * y_true[:k].sum() / np.amin([count_pos, k])


def ndcg_at_k(y_true, y_pred, count_pos, k):
    # INQUIRE src/metrics.py ndcg_at_k: the positives not retrieved appended at score -100.
    unknown = count_pos - sum(y_true)
    return sklearn.metrics.ndcg_score([y_true.tolist() + [1] * unknown], [y_pred.tolist() + [-100] * unknown], k=k)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("qrels")
    parser.add_argument("queries")
    parser.add_argument("run")
    parser.add_argument("--k", type=int, default=50)
    args = parser.parse_args()
    queries_df = pd.read_csv(args.queries)
    annotations_df = pd.read_csv(args.qrels)
    run_df = pd.read_csv(args.run).sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
    by_query = dict(tuple(run_df.groupby("query_id")))
    results = []
    for query_row in queries_df.iloc:
        annotations = annotations_df[annotations_df["query_id"] == query_row["query_id"]]
        positives = set(annotations["image_id"].values)
        top = by_query[query_row["query_id"]].head(args.k)
        y_pred = top["score"].to_numpy()
        y_true = np.asarray([image in positives for image in top["image_id"].to_numpy()])
        results.append(
            {
                "ap": 100 * ap_at_k(y_true, y_pred, len(positives), args.k),
                "ndcg": 100 * ndcg_at_k(y_true, y_pred, len(positives), args.k),
            }
        )
    print(pd.DataFrame(results).mean().to_string())


if __name__ == "__main__":
    main()
