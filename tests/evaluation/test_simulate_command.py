"""manage.py simulate_labeling: the oracle annotator over the synthetic world and over the collection."""

import json
from xml.etree import ElementTree

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command

from evaluation import simulation
from evaluation.models import SavedSimulation
from search.facade import search

pytestmark = pytest.mark.django_db


def test_the_synthetic_world_shows_feedback_winning_where_the_text_misses(tmp_path):
    out, plot = tmp_path / "sim.json", tmp_path / "sim.svg"
    call_command(
        "simulate_labeling", "--synthetic", "--synthetic-queries", "4", "--max-labels", "3000",
        "--json", str(out), "--plot", str(plot), "--name", "world",
    )  # fmt: skip
    result = json.loads(out.read_text())
    medians = result["medians"]
    assert medians["hard"]["feedback"]["median_ratio"] < 0.6  # the text finds the species, not the behaviour
    assert medians["easy"]["feedback"]["median_ratio"] < 1.2
    assert {row["strategy"] for row in result["queries"]} == {"text", "feedback"} and len(result["queries"]) == 8
    assert all(row["estimate_error"] is not None for row in result["queries"])
    svg = ElementTree.fromstring(plot.read_text())
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == 2
    saved = SavedSimulation.objects.get()
    assert saved.name == "world" and saved.result["medians"] == medians


def test_the_team_world_with_a_fallible_annotator_puts_the_worst_queries_first(tmp_path, capsys):
    out = tmp_path / "sim.json"
    call_command(
        "simulate_labeling", "--team-world", "--kinds", "tiny,crowd,easy", "--per-kind", "1", "--noise", "0.05",
        "--strategy", "text", "--strategy", "feedback", "--max-labels", "3000", "--no-estimate", "--json", str(out),
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["settings"]["noise"] == 0.05 and "wrong 5% of the time" in result["source"]
    versus = result["versus"]
    assert [row["kind"] for row in versus] != [] and {row["kind"] for row in versus} == {"tiny", "crowd", "easy"}
    worst = [row["worst_ratio"] for row in versus]
    assert worst == sorted(worst, reverse=True)  # failures first
    medians = result["medians"]
    assert set(medians) == {"all", "tiny", "crowd", "easy"}
    assert medians["all"]["feedback"]["worst_ratio"] == max(worst)
    assert medians["crowd"]["feedback"]["median_ratio"] < 0.6
    printed = capsys.readouterr().out
    assert "worst" in printed.splitlines()[0] and "crowd" in printed


def text_finds_both_feedback_neither(strategy, relevant, not_relevant, exclude, k, recent=()):
    """Query 1's ranking: the text order starts with its two positives, feedback never proposes them."""
    order = [1, 2, *range(3, 50)] if strategy == "text" else list(range(3, 50))
    return [image for image in order if image not in set(exclude)][:k]


def test_a_strategy_that_never_gets_there_counts_with_its_budget():
    rank = text_finds_both_feedback_neither
    result = simulation.simulate({1: {1, 2}}, {1: (rank, None)}, ["text", "feedback"], batch=5, max_labels=20)
    (row,) = result["versus"]
    assert row["feedback"] is None and row["feedback_missed"] and row["feedback_ratio"] == 10.0  # 20 / 2, at least
    figures = result["medians"]["all"]["feedback"]
    assert figures["median_labels"] == 20 and figures["missed"] == 1 and figures["worst_ratio"] == 10.0


def test_the_per_query_page_says_which_strategy_never_got_there(client, tmp_path):
    rank = text_finds_both_feedback_neither
    result = simulation.simulate({1: {1, 2}}, {1: (rank, None)}, ["text", "feedback"], batch=5, max_labels=20)
    saved = SavedSimulation.objects.create(name="never", ground_truth="test", result=result)
    staff = User.objects.create_user("researcher", password="pw")
    staff.user_permissions.add(Permission.objects.get(codename="evaluate_runs"))
    client.force_login(staff)
    page = client.get(f"/evaluation/simulations/{saved.pk}/").content.decode()
    assert "<strong>never</strong>" in page and "≥ 10.0" in page
    assert page.index("Per query, worst first") < page.index("Medians and worst cases")
    assert "<th>kind</th>" not in page  # no kinds in this world: no empty column
    assert "relevant when the ground truth, test, says so" in page


def test_the_baseline_missing_its_target_is_never_too_and_the_ratios_are_bounds_or_none(client):
    """Query 1: only feedback finds its positives; query 2: only the text order; query 3: neither. Every cell says
    what happened: "never" for either strategy, "≤" where only the baseline missed, "≥" where only the strategy
    did, no ratio where both did; no "≥ –"."""

    def rank(strategy, relevant, not_relevant, exclude, k, recent=()):
        finds = {("text", 2), ("feedback", 1)}
        order = [1, 2, *range(3, 50)] if (strategy, ranking_query[0]) in finds else list(range(3, 50))
        return [image for image in order if image not in set(exclude)][:k]

    ranking_query = [0]

    def for_query(query_id):
        def ranked(*arguments, **keywords):
            ranking_query[0] = query_id
            return rank(*arguments, **keywords)

        return ranked

    truth = {1: {1, 2}, 2: {1, 2}, 3: {60, 61}}
    rankings = {q: (for_query(q), None) for q in truth}
    result = simulation.simulate(truth, rankings, ["text", "feedback"], batch=5, max_labels=20)
    rows = {row["query_id"]: row for row in result["versus"]}
    assert rows[1]["text_missed"] and not rows[1]["feedback_missed"]
    assert rows[1]["feedback_ratio"] == pytest.approx(2 / 20) and rows[1]["feedback_bound"] == "<="  # 2 of a budget
    assert rows[2]["feedback_missed"] and rows[2]["feedback_bound"] == ">=" and rows[2]["feedback_ratio"] == 10.0
    assert rows[3]["text_missed"] and rows[3]["feedback_missed"] and rows[3]["feedback_ratio"] is None
    saved = SavedSimulation.objects.create(name="bounds", ground_truth="test", result=result)
    staff = User.objects.create_user("researcher", password="pw")
    staff.user_permissions.add(Permission.objects.get(codename="evaluate_runs"))
    client.force_login(staff)
    page = client.get(f"/evaluation/simulations/{saved.pk}/").content.decode()
    table = page.split('id="per-query"')[1].split("</table>")[0]
    assert "≥ –" not in table and "≤ 0.1" in table and "≥ 10.0" in table
    assert table.count("<strong>never</strong>") == 4  # text on 1 and 3, feedback on 2 and 3


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--team-world", "--noise", "0.6"], "--noise is the annotator's error rate"),
        (["--team-world", "--kinds", "tiny,huge"], "--kinds: world kinds are"),
        (["--synthetic", "--strategy", "image"], "--strategy takes text, feedback, rocchio, alpha_qe, not image"),
        (["--synthetic", "--batch", "0"], "--batch must be 1 to 1,000"),
        (["--synthetic", "--target", "1.5"], "--target must be a share"),
        (["--synthetic", "--synthetic-queries", "500"], "need more than 20000 images"),
        (["--qrels", "/nonexistent/qrels.csv"], "qrels.csv"),
    ],
)
def test_bad_arguments_say_what_to_fix_and_keep_nothing(arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("simulate_labeling", *arguments)
    assert not SavedSimulation.objects.exists()


def test_the_collection_replay_uses_the_real_index_and_the_query_texts(labeling, tmp_path):
    query = labeling["query"]
    ranking = [hit.image_id for hit in search(text=query.text, k=120)]
    positives = ranking[30:120:9]  # ten positives spread down the text ranking
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("query_id,image_id\n" + "".join(f"{query.pk},{image}\n" for image in positives))
    out = tmp_path / "sim.json"
    call_command(
        "simulate_labeling", "--qrels", str(qrels), "--strategy", "text", "--strategy", "feedback",
        "--batch", "10", "--max-labels", "120", "--json", str(out), "--no-save",
    )  # fmt: skip
    rows = {row["strategy"]: row for row in json.loads(out.read_text())["queries"]}
    # The text strategy walks the text ranking in batches of 10; 95% of ten positives is all ten.
    assert rows["text"]["labels_to_95"] == ranking.index(positives[-1]) + 1 == 112
    assert rows["feedback"]["labels_to_95"] is not None and rows["feedback"]["positives"] == 10
    assert not SavedSimulation.objects.exists()


def test_the_evaluation_pages_show_a_simulation(client, tmp_path):
    call_command("simulate_labeling", "--synthetic", "--synthetic-queries", "2", "--no-estimate", "--name", "small")
    saved = SavedSimulation.objects.get()
    user = User.objects.create_user("researcher", password="pw-research-1")
    user.user_permissions.add(Permission.objects.get(codename="evaluate_runs"))
    client.force_login(user)
    index = client.get("/evaluation/").content.decode()
    assert f"/evaluation/simulations/{saved.pk}/" in index and "small" in index
    page = client.get(f"/evaluation/simulations/{saved.pk}/").content.decode()
    assert 'id="medians"' in page and "<polyline" in page and 'id="per-query"' in page
    svg = client.get(f"/evaluation/simulations/{saved.pk}/download.svg")
    assert svg["Content-Type"] == "image/svg+xml" and b"<polyline" in svg.content
    assert client.get(f"/evaluation/simulations/{saved.pk}/download.exe").status_code == 404
    assert client.get("/evaluation/simulations/99999/").status_code == 404
