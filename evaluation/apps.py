from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Benchmark metrics (AP@k, nDCG, MRR) from relevance CSVs and ranked runs."""

    name = "evaluation"
