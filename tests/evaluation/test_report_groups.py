"""Per-group tables (evaluation/report.py): a query added in the app without a category is in "(none)",
not in a group with no name."""

from evaluation.report import NO_GROUP, Report


def test_queries_without_a_category_are_grouped_as_none():
    rows = [
        {"query_id": 1, "category": "Feeding", "ap": 0.5},
        {"query_id": 2, "category": "", "ap": 0.25},
        {"query_id": 3, "category": None, "ap": 0.75},
        {"query_id": 4, "category": "  ", "ap": 1.0},
    ]
    table = Report("fullrank", 50, ("ap",), rows).groups(["category"])["category"]
    assert set(table) == {"Feeding", NO_GROUP, "mean_of_groups"}
    assert table[NO_GROUP]["queries"] == 3
    assert table[NO_GROUP]["ap"] == 2.0 / 3
