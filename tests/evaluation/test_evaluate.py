import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evaluation import metrics as m
from evaluation.inputs import InputError, read_qrels, read_run
from evaluation.report import evaluate, format_table, two_stage

QUERIES = (
    ",query_id,query_text,supercategory,category,iconic_group\n"
    "0,1,red birds,Appearance,Color,Birds\n"
    "1,2,eating fish,Behavior,Feeding,Birds\n"
    "2,3,tall cactus,Context,Habitat,Plants\n"
)
QRELS = "query_id,image_id,image_path\n1,10,a\n1,11,b\n2,20,c\n3,30,d\n3,31,e\n3,32,f\n"
# Query 1: 10 at rank 1, 11 at rank 4. Query 2: 20 at rank 2. Query 3: nothing in the run.
RANKING = {1: [10, 99, 98, 11], 2: [97, 20, 96]}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "queries.csv").write_text(QUERIES)
    (tmp_path / "qrels.csv").write_text(QRELS)
    trec = [
        f"{q} Q0 {image} {rank} {10 - rank} mine"
        for q, images in RANKING.items()
        for rank, image in enumerate(images, 1)
    ]
    (tmp_path / "run.trec").write_text("\n".join(trec) + "\n")
    rows = [f"{q},{image},{10 - rank}" for q, images in RANKING.items() for rank, image in enumerate(images, 1)]
    (tmp_path / "run.csv").write_text("query_id,image_id,score\n" + "\n".join(reversed(rows)) + "\n")
    return tmp_path


def expected_ap():
    q1 = m.average_precision([1, 0, 0, 1], R=2, k=5)  # (1 + 2/4) / 2
    q2 = m.average_precision([0, 1, 0], R=1, k=5)
    return (q1 + q2 + 0.0) / 3


def test_trec_and_csv_runs_give_the_same_report(files):
    truth = read_qrels(files / "qrels.csv", files / "queries.csv")
    trec = evaluate(truth, read_run(files / "run.trec"), k=5)
    csv = evaluate(truth, read_run(files / "run.csv"), k=5)
    assert trec.per_query == csv.per_query
    assert trec.overall()["ap"]["mean"] == pytest.approx(expected_ap())
    assert [row["R"] for row in trec.per_query] == [2, 1, 3]
    assert "1 queries have no entries in the run and score 0: [3]" in trec.warnings[0]


def test_a_query_without_positives_gets_one_sentence_and_the_header_counts_what_is_scored(files, tmp_path):
    """Query 4 has no relevant image and is missing from the run: it is undefined (left out of the means), not also
    "scores 0"; the header counts the queries scored, as the web report does, and names the ground truth."""
    (tmp_path / "queries.csv").write_text(
        (files / "queries.csv").read_text() + "3,4,a query nobody found,Context,Habitat,Plants\n"
    )
    truth = read_qrels(files / "qrels.csv", tmp_path / "queries.csv")
    report = evaluate(truth, read_run(files / "run.trec"), k=5)
    assert report.warnings[0] == "1 queries have no entries in the run and score 0: [3]"
    assert sum("[4]" in warning for warning in report.warnings) == 1
    assert any(w.startswith("1 queries have no relevant image") and w.endswith("[4]") for w in report.warnings)
    header = format_table(report).splitlines()[0]
    assert header.startswith("fullrank @ 5: 3 queries scored (1 more have no relevant image), run ")
    assert f"against {files / 'qrels.csv'}" in header


def test_ties_follow_the_rank_column_then_the_file_order(tmp_path, files):
    (tmp_path / "tied.csv").write_text("query_id,image_id,score,rank\n1,99,1.0,2\n1,10,1.0,1\n")
    assert [image for image, _ in read_run(tmp_path / "tied.csv").ranked[1]] == [10, 99]
    (tmp_path / "tied2.csv").write_text("query_id,image_id,score\n1,99,1.0\n1,10,1.0\n")
    assert [image for image, _ in read_run(tmp_path / "tied2.csv").ranked[1]] == [99, 10]


def test_the_command_prints_tables_and_writes_json_and_csv(files):
    out = StringIO()
    call_command(
        "evaluate",
        "--qrels",
        files / "qrels.csv",
        "--queries",
        files / "queries.csv",
        "--run",
        files / "run.trec",
        "--k",
        "5",
        "--group-by",
        "supercategory",
        "--json",
        files / "report.json",
        "--csv",
        files / "report.csv",
        stdout=out,
    )
    text = out.getvalue()
    assert f"{100 * expected_ap():6.1f}" in text and "by supercategory:" in text and "Behavior (1)" in text
    report = json.loads((files / "report.json").read_text())
    assert report["protocol"] == "fullrank" and report["k"] == 5
    assert report["overall"]["ap"] == pytest.approx(expected_ap())  # raw fraction
    assert report["groups"]["supercategory"]["Behavior"]["ap"] == pytest.approx(m.average_precision([0, 1, 0], 1, 5))
    assert [row["query_id"] for row in report["per_query"]] == [1, 2, 3] and report["warnings"]
    assert (files / "report.csv").read_text().startswith("query_id,R,retrieved,ap,ndcg")


def test_rerank_protocol_uses_the_candidate_sets(tmp_path):
    (tmp_path / "rerank.csv").write_text(
        "query_id,inat24_image_id,relevant,clip_score,my_score\n"
        "1,10,1,0.9,0.1\n1,11,0,0.8,0.9\n1,12,1,0.7,0.8\n2,20,0,0.5,0.5\n2,21,1,0.4,0.6\n"
    )
    out = StringIO()
    call_command(
        "evaluate",
        "--run",
        tmp_path / "rerank.csv",
        "--protocol",
        "rerank",
        "--k",
        "100",
        "--json",
        tmp_path / "r.json",
        stdout=out,
    )
    report = json.loads((tmp_path / "r.json").read_text())
    clip_ap = (m.average_precision([1, 0, 1], 2, 100, "r") + m.average_precision([0, 1], 1, 100, "r")) / 2
    assert report["overall"]["ap"] == pytest.approx(clip_ap)
    call_command(
        "evaluate",
        "--run",
        tmp_path / "rerank.csv",
        "--protocol",
        "rerank",
        "--score-column",
        "my_score",
        "--json",
        tmp_path / "mine.json",
        "--compare",
        tmp_path / "rerank.csv",
        stdout=out,
    )
    mine = json.loads((tmp_path / "mine.json").read_text())
    assert mine["overall"]["ap"] == pytest.approx((m.average_precision([0, 1, 1], 2, 50, "r") + 1.0) / 2)
    assert mine["comparison"]["queries"] == 2


def test_two_stage_reranks_the_first_runs_top(files, tmp_path):
    first = read_run(files / "run.trec")
    (tmp_path / "second.csv").write_text("query_id,image_id,score\n1,11,5\n1,10,4\n2,20,9\n")
    combined = two_stage(first, read_run(tmp_path / "second.csv"), top=3)
    assert [image for image, _ in combined.ranked[1]] == [10, 99, 98]  # 11 was below the top 3
    assert [image for image, _ in combined.ranked[2]] == [20, 97, 96]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("bad.trec", "1 Q0 10 1 0.5\n", "line 1: a TREC run line has 6 fields"),
        (
            "dup.csv",
            "query_id,image_id,score\n1,10,0.5\n1,10,0.4\n",
            "line 3: query 1, image 10 is already ranked on line 2",
        ),
        ("nan.csv", "query_id,image_id,score\n1,10,abc\n", "line 2: score must be a number, not 'abc'"),
        ("what.csv", "a,b\n1,2\n", "not a run"),
        ("empty.csv", "", "is empty"),
        ("words.trec", "q1 Q0 10 1 0.5 x\n", "qid, docid and rank must be whole numbers"),
    ],
)
def test_bad_runs_name_the_line(files, name, content, message):
    (files / name).write_text(content)
    with pytest.raises(CommandError, match=message):
        call_command("evaluate", "--qrels", files / "qrels.csv", "--run", files / name)


def test_bad_ground_truth(files):
    (files / "none.csv").write_text("query_id,image_id,image_path,label\n1,10,a,not_relevant\n")
    with pytest.raises(InputError, match="has no relevant images"):
        read_qrels(files / "none.csv")
    (files / "noid.csv").write_text("query,image\n1,2\n")
    with pytest.raises(InputError, match="missing column.s. query_id, image_id"):
        read_qrels(files / "noid.csv")
    with pytest.raises(CommandError, match="unknown metrics wow"):
        call_command("evaluate", "--qrels", files / "qrels.csv", "--run", files / "run.csv", "--metrics", "ap,wow")


def test_run_queries_missing_from_the_ground_truth_are_reported(files, tmp_path):
    (tmp_path / "extra.csv").write_text("query_id,image_id,score\n1,10,1\n77,5,1\n")
    report = evaluate(read_qrels(files / "qrels.csv"), read_run(tmp_path / "extra.csv"), k=5)
    assert any("not in the ground truth and were ignored: [77]" in w for w in report.warnings)


def test_quire_labels_csv_keeps_negatives_and_reports_unjudged_images(tmp_path):
    (tmp_path / "labels.csv").write_text(
        "query_id,image_id,image_path,label,annotator,updated_at\n1,10,a,relevant,ann,x\n1,11,b,not_relevant,ann,x\n1,12,c,unsure,ann,x\n"
    )
    (tmp_path / "run.csv").write_text("query_id,image_id,score\n1,11,3\n1,10,2\n1,55,1\n")
    report = evaluate(read_qrels(tmp_path / "labels.csv"), read_run(tmp_path / "run.csv"), k=3)
    assert report.per_query[0]["ap"] == pytest.approx(0.5) and report.per_query[0]["R"] == 1
    assert any("1 images in the runs' top 3 were never labeled" in w for w in report.warnings)


def test_grouping_the_released_inquire_queries(inquire_dir, tmp_path):
    import csv

    with (inquire_dir / "inquire_queries_test.csv").open(encoding="utf-8") as handle:
        queries = list(csv.DictReader(handle))
    qrels = "query_id,image_id,image_path\n" + "".join(f"{q['query_id']},{i},x\n" for q in queries for i in range(3))
    (tmp_path / "qrels.csv").write_text(qrels)
    run = "query_id,image_id,score\n" + "".join(f"{q['query_id']},{n},{-n}\n" for q in queries for n in range(1, 6))
    (tmp_path / "run.csv").write_text(run)
    report = evaluate(
        read_qrels(tmp_path / "qrels.csv", inquire_dir / "inquire_queries_test.csv"), read_run(tmp_path / "run.csv")
    )
    groups = report.groups(["supercategory"])["supercategory"]
    assert sum(g["queries"] for name, g in groups.items() if name != "mean_of_groups") == len(queries) == 200
    assert {"Appearance", "Behavior", "Context", "Species"} <= set(groups)


@pytest.mark.django_db
def test_queries_without_positives_are_undefined_and_left_out_in_both_modes(tmp_path, write_json):
    """One rule whether the ground truth is a file or the database (INQUIRE: NaN, skipped by the mean)."""
    from annotator.labels import set_label
    from annotator.models import Query
    from catalog.importers import import_inat
    from evaluation.inputs import qrels_from_database, read_queries
    from evaluation.report import format_table
    from tests.factories import inat_document

    run_file = tmp_path / "run.csv"
    run_file.write_text("query_id,image_id,score\n1,1000,0.9\n1,1001,0.8\n2,1002,0.9\n")
    labels = tmp_path / "labels.csv"
    labels.write_text("query_id,image_id,image_path,label\n1,1000,a,relevant\n2,1002,b,not_relevant\n")
    queries = tmp_path / "queries.csv"
    queries.write_text(",query_id,query_text,supercategory,category,iconic_group\n0,1,a,B,c,d\n1,2,e,B,c,d\n")

    from_files = evaluate(read_qrels(labels, queries), read_run(run_file), k=50)

    import_inat(write_json(inat_document(images=5)))
    for query_id, text in ((1, "a"), (2, "e")):
        Query.objects.create(id=query_id, text=text, supercategory="B")
    set_label(query_id=1, image_id=1000, value="relevant", source="api")
    set_label(query_id=2, image_id=1002, value="not_relevant", source="api")
    truth = qrels_from_database()
    truth.queries = read_queries(queries)
    from_database = evaluate(truth, read_run(run_file), k=50)

    for report in (from_files, from_database):
        rows = {row["query_id"]: row for row in report.per_query}
        assert rows[2]["no_positives"] and rows[2]["ap"] is None
        assert rows[1]["ap"] == 1.0
        assert report.overall()["ap"]["mean"] == 1.0  # query 2 left out, not counted as 0
        assert any("1 queries have no relevant image" in w and "[2]" in w for w in report.warnings)
        assert report.as_json(["supercategory"])["groups"]["supercategory"]["B"] == {
            "queries": 1,
            **{name: rows[1][name] for name in report.metrics},
        }
        assert "ap" in report.per_query_csv().splitlines()[0] and "\n2,0,1,,," in report.per_query_csv()
        assert "overall" in format_table(report)
        # Issue 64: the report's header said "2 queries" of a ground truth where 1 was scored.
        assert (report.as_json()["queries"], report.as_json()["scored"]) == (2, 1)
    assert json.loads(json.dumps(from_files.as_json()))["per_query"][1]["ap"] is None
    from django.template.loader import render_to_string

    header = render_to_string("evaluation/report.html", {"result": from_files.as_json(), "saved": {"pk": 1}})
    assert "1 query scored (of 2: the others have no relevant image)" in header


def test_tied_scores_are_averaged_by_default_and_the_report_says_so(tmp_path):
    """An LLM-like run: scores exactly 0 or 1. By default AP follows scikit-learn (INQUIRE's numbers);
    --ties run-order keeps the file's order, and each report names its rule."""
    (tmp_path / "qrels.csv").write_text("query_id,image_id,image_path\n1,11,a\n1,12,b\n")
    (tmp_path / "run.csv").write_text("query_id,image_id,score\n1,10,1\n1,11,1\n1,12,1\n1,13,0\n")
    from sklearn.metrics import average_precision_score

    truth = read_qrels(tmp_path / "qrels.csv")
    run = read_run(tmp_path / "run.csv")
    averaged = evaluate(truth, run, k=4)
    in_order = evaluate(truth, run, k=4, ties="run-order")
    assert averaged.per_query[0]["ap"] == pytest.approx(average_precision_score([0, 1, 1, 0], [1, 1, 1, 0]))
    assert averaged.per_query[0]["ap"] == pytest.approx(2 / 3)  # one threshold: P = 2/3 for both positives
    assert in_order.per_query[0]["ap"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert averaged.per_query[0]["mrr"] == in_order.per_query[0]["mrr"] == 0.5  # MRR: the run's order

    for ties, expected in (("average", 2 / 3), ("run-order", (1 / 2 + 2 / 3) / 2)):
        out = StringIO()
        arguments = ["--qrels", tmp_path / "qrels.csv", "--run", tmp_path / "run.csv", "--k", "4"]
        arguments += ["--json", tmp_path / f"{ties}.json"] + (["--ties", ties] if ties != "average" else [])
        call_command("evaluate", *arguments, stdout=out)
        report = json.loads((tmp_path / f"{ties}.json").read_text())
        assert report["ties"] == ties and report["overall"]["ap"] == pytest.approx(expected)
        assert ("averaged, as scikit-learn" if ties == "average" else "in the run order") in out.getvalue()
    with pytest.raises(CommandError):
        call_command("evaluate", "--qrels", tmp_path / "qrels.csv", "--run", tmp_path / "run.csv", "--ties", "random")


def test_rerank_scores_every_candidate_unless_k_is_given(tmp_path):
    """INQUIRE-Rerank scores AP over all 100 candidates: with no --k, each query's k is its candidate count."""
    lines = ["query_id,inat24_image_id,relevant,clip_score"]
    lines += [f"1,{image},{int(image in (5, 70))},{1 - image / 100}" for image in range(100)]  # positives at 6, 71
    lines += [f"2,{1000 + image},{int(image == 60)},{1 - image / 100}" for image in range(80)]
    (tmp_path / "rerank.csv").write_text("\n".join(lines) + "\n")
    out = StringIO()
    call_command(
        "evaluate",
        "--run",
        tmp_path / "rerank.csv",
        "--protocol",
        "rerank",
        "--json",
        tmp_path / "all.json",
        stdout=out,
    )
    report = json.loads((tmp_path / "all.json").read_text())
    q1 = m.average_precision([int(i in (5, 70)) for i in range(100)], 2, 100, "r")
    q2 = m.average_precision([int(i == 60) for i in range(80)], 1, 80, "r")
    assert report["k"] == 100 and report["k_rule"] == "candidates"
    assert [row["k"] for row in report["per_query"]] == [100, 80]
    assert report["overall"]["ap"] == pytest.approx((q1 + q2) / 2)
    assert "rerank @ all candidates (up to 100)" in out.getvalue()
    call_command(
        "evaluate",
        "--run",
        tmp_path / "rerank.csv",
        "--protocol",
        "rerank",
        "--k",
        "50",
        "--json",
        tmp_path / "50.json",
        stdout=out,
    )
    cut = json.loads((tmp_path / "50.json").read_text())
    assert cut["k"] == 50 and cut["k_rule"] == "fixed"
    # At k = 50: query 1 keeps one positive, at rank 6 (AP 1/6, plain AP over what is inside the cut);
    # query 2's only positive is at rank 61, outside it (AP 0).
    assert cut["overall"]["ap"] == pytest.approx((1 / 6 + 0.0) / 2)


def test_the_columnar_reader_reads_what_the_line_reader_reads(tmp_path, monkeypatch):
    """pyarrow's path and the line-by-line path give the same runs and ground truth: lines out of order,
    tied scores with and without a rank column, labels with spaces."""
    import random

    from evaluation import columnar
    from evaluation.inputs import read_qrels, read_run

    rng = random.Random(0)
    rows = [
        (q, image, rng.choice([0.5, 0.25, 0.125, 1.0]), rank)
        for q in (3, 1, 2)
        for rank, image in enumerate(rng.sample(range(10_000), 40), 1)
    ]
    rng.shuffle(rows)
    (tmp_path / "run.csv").write_text(
        "query_id,image_id,score,rank\n" + "".join(f"{q},{i},{s},{r}\n" for q, i, s, r in rows)
    )
    (tmp_path / "run2.csv").write_text("query_id,image_id,score\n" + "".join(f"{q},{i},{s}\n" for q, i, s, _ in rows))
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {i} {r} {s} tag\n" for q, i, s, r in rows))
    labels = [(q, i, rng.choice(["relevant", " relevant ", "not_relevant", "unsure"])) for q, i, _, _ in rows[:60]]
    (tmp_path / "labels.csv").write_text(
        "query_id,image_id,image_path,label\n" + "".join(f"{q},{i},p,{v}\n" for q, i, v in labels)
    )
    (tmp_path / "qrels.csv").write_text(
        "query_id,image_id,image_path\n" + "".join(f"{q},{i},p\n" for q, i, _ in labels)
    )

    def read_all():
        runs = [read_run(tmp_path / name).ranked for name in ("run.csv", "run2.csv", "run.trec")]
        truths = [read_qrels(tmp_path / name) for name in ("labels.csv", "qrels.csv")]
        return runs, [(t.positives, t.judged) for t in truths]

    fast = read_all()
    calls = []
    for name in ("trec_run", "csv_run", "qrels"):
        monkeypatch.setattr(columnar, name, lambda *a, name=name: calls.append(name))  # returns None: the slow path
    slow = read_all()
    assert sorted(calls) == ["csv_run", "csv_run", "qrels", "qrels", "trec_run"]
    assert fast == slow
    assert fast[0][0] != fast[0][1]  # ties follow the rank column in one and the line order in the other


def test_files_are_scored_without_django_the_same_way(files, tmp_path):
    """`python -m evaluation` (evaluation/cli.py): the command's report, from a process that never imports
    Django (a third of the command's time on INQUIRE-sized files)."""
    import subprocess
    import sys

    arguments = ["--qrels", files / "qrels.csv", "--queries", files / "queries.csv", "--run", files / "run.trec"]
    arguments += ["--k", "5", "--group-by", "supercategory", "--compare", files / "run.csv"]
    out = StringIO()
    call_command("evaluate", *arguments, "--json", tmp_path / "command.json", stdout=out)
    probe = "import runpy, sys; sys.argv = ['evaluation', *sys.argv[1:]]\n"
    probe += "try:\n    runpy.run_module('evaluation', run_name='__main__')\n"
    probe += "finally:\n    print('django imported' if 'django' in sys.modules else 'no django', file=sys.stderr)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe, *map(str, arguments), "--json", str(tmp_path / "files.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == out.getvalue() and "vs " in done.stdout  # the comparison line too
    assert done.stderr.strip() == "no django"
    assert json.loads((tmp_path / "files.json").read_text()) == json.loads((tmp_path / "command.json").read_text())


def test_the_file_scorer_refuses_bad_input_with_a_sentence_and_exit_1(files, tmp_path):
    import subprocess
    import sys

    (tmp_path / "bad.csv").write_text("query_id,image_id,score\n1,ten,0.5\n")
    done = subprocess.run(
        [sys.executable, "-m", "evaluation", "--qrels", str(files / "qrels.csv"), "--run", str(tmp_path / "bad.csv")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: ") and "bad.csv" in done.stderr and "line 2" in done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "evaluation", "--run", str(files / "run.csv")], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "give --qrels FILE" in missing.stderr


def test_a_scoring_with_no_run_is_refused_with_a_sentence(files):
    """The file scorer and `manage.py evaluate` without --run (mypy strict found the message raised as an
    InputError without its place: a TypeError traceback instead of the sentence)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "evaluation", "--qrels", str(files / "qrels.csv")], capture_output=True, text=True
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "error: Give --run FILE (or, with manage.py evaluate, --from-model)."
    with pytest.raises(CommandError, match="Give --run FILE"):
        call_command("evaluate", "--qrels", str(files / "qrels.csv"))
