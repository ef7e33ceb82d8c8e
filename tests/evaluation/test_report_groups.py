"""Per-group tables (evaluation/report.py): a query added in the app without a category is in "(none)",
not in a group with no name."""

import re

from evaluation import plots
from evaluation.report import NO_GROUP, Report, format_table


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


def test_long_group_names_are_whole_in_the_table_and_the_chart_and_the_mean_row_reads_as_words():
    long = "Defensive and Survival Behavior"
    rows = [
        {"query_id": 1, "category": long, "ap": 0.5},
        {"query_id": 2, "category": "Feeding", "ap": 0.25},
    ]
    report = Report("fullrank", 50, ("ap",), rows)
    text = format_table(report, ["category"])
    assert f"{long} (1)" in text and "mean of the groups" in text and "mean_of_groups" not in text
    lines = text.split("by category:\n")[1].splitlines()
    assert len({len(line) for line in lines}) == 1, "the figures line up under a wide first column"
    chart = plots.bars({long: 0.5, "Feeding": 0.25})
    labels = re.findall(r'<text x="0"[^>]*>([^<]*)</text>', chart)
    assert labels == [long, "Feeding"]  # whole, not cut at 28 characters
    bar_x = {float(x) for x in re.findall(r'<rect x="([0-9.]+)"', chart)}
    assert len(bar_x) == 1 and bar_x.pop() >= 7 * len(long)  # the bars start after the longest label
    crowded = plots.bars({"x" * 200: 0.5})
    assert "…" in crowded and f"<title>{'x' * 200}: AP 50.0</title>" in crowded  # too long: cut, whole in its title
