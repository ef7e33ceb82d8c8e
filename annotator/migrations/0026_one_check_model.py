"""One check model (issue 65): a query's completeness check becomes a check of one stratum, in the table and the
models the benchmark's checks had (so their ids, which the API shows, stay as they were); the query's checks move in
with their frames as strata and their samples as pairs, keeping their ordinals, times and decisions, and the
benchmark's models then take the names CompletenessCheck, CheckStratum and CheckImage. The claims and
reports read the same after it, and every row is as it was after migrating back (tests/test_migrations.py, on rows
made at 0025 through the API)."""

import django.db.models.deletion
from django.db import migrations, models

ROWS = 5000
# What a query's check keeps as it moves between the two models (its frame goes to and from its stratum).
KEPT = (
    "query_id", "ordinal", "target_recall", "confidence", "tested_at", "miss_rate", "sampled_from", "found_at_draw",
    "second_judgments", "status", "found", "positives", "recall_lower_bound", "p_value", "missing_point",
    "missing_low", "missing_high", "looks", "per_look_miss_rate", "drawn_by_id", "created_at", "decided_at",
)  # fmt: skip


def move_query_checks(apps, schema_editor):
    """Each query check (oldest first) into the one model: the check, its frame as its one stratum, its sample as
    (query, image) pairs in the same order."""
    Before = apps.get_model("annotator", "CompletenessCheck")
    BeforeImage = apps.get_model("annotator", "CheckImage")
    Check = apps.get_model("annotator", "BenchmarkCheck")
    Stratum = apps.get_model("annotator", "BenchmarkQuery")
    Pair = apps.get_model("annotator", "BenchmarkImage")
    for old in Before.objects.order_by("pk").iterator():
        check = Check.objects.create(
            claim="query", scope=f"query {old.query_id}", **{name: getattr(old, name) for name in KEPT}
        )
        Stratum.objects.create(
            benchmark=check, query_id=old.query_id, frame_kind=old.frame_kind, frame_depth=old.frame_depth,
            frame_taxa=old.frame_taxa, frame_size=old.frame_size, frame_ids=old.frame_ids, found_ids=old.found_ids,
            sampled_from=old.sampled_from,
        )  # fmt: skip
        sample = BeforeImage.objects.filter(completeness_check=old).order_by("position")
        Pair.objects.bulk_create(
            (
                Pair(benchmark=check, query_id=old.query_id, image_id=row.image_id, position=row.position)
                for row in sample.iterator()
            ),
            batch_size=ROWS,
        )
    if schema_editor.connection.vendor == "postgresql":
        # The rows' foreign keys are checked now, not at the commit: PostgreSQL alters no table with checks pending.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def move_query_checks_back(apps, schema_editor):
    """Back to two models (a rollback of the upgrade): each query check into its own model again, its one stratum
    as its frame, its pairs as its images; a benchmark check decided since counts its positives confirmed after the
    draw in `found` again, as the old model did."""
    Before = apps.get_model("annotator", "CompletenessCheck")
    BeforeImage = apps.get_model("annotator", "CheckImage")
    Check = apps.get_model("annotator", "BenchmarkCheck")
    Stratum = apps.get_model("annotator", "BenchmarkQuery")
    Pair = apps.get_model("annotator", "BenchmarkImage")
    frame = ("frame_kind", "frame_depth", "frame_taxa", "frame_size", "frame_ids", "found_ids")
    for check in Check.objects.filter(claim="query").order_by("pk").iterator():
        stratum = Stratum.objects.get(benchmark=check)
        old = Before.objects.create(
            **{name: getattr(check, name) for name in KEPT}, **{name: getattr(stratum, name) for name in frame}
        )
        sample = Pair.objects.filter(benchmark=check).order_by("position")
        BeforeImage.objects.bulk_create(
            (BeforeImage(completeness_check_id=old.pk, image_id=row.image_id, position=row.position) for row in sample),
            batch_size=ROWS,
        )
    Check.objects.filter(claim="query").delete()  # their strata and pairs with them
    for check in Check.objects.filter(found_since__gt=0):
        check.found = (check.found or 0) + check.found_since
        check.save(update_fields=["found"])
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0025_help_texts_name_the_completeness_room"),
    ]

    operations = [
        # The benchmark's models lose the constraints a query's checks would break, and gain what a query's check had.
        migrations.RemoveConstraint("benchmarkcheck", "benchmark_check_ordinal_once"),
        migrations.RemoveConstraint("benchmarkcheck", "benchmark_check_one_open"),
        migrations.RemoveConstraint("benchmarkquery", "benchmark_query_once"),
        migrations.RemoveConstraint("benchmarkimage", "benchmark_image_once"),
        migrations.RemoveIndex("benchmarkimage", "benchmark_image_pair"),
        # What a query's check had that the benchmark's had not.
        migrations.AddField(
            model_name="benchmarkcheck",
            name="claim",
            field=models.CharField(
                choices=[
                    ("query", "one query's recall"),
                    ("benchmark", "the benchmark's micro-recall over its queries' frames"),
                ],
                default="benchmark",
                help_text="Which claim the check tests.",
                max_length=12,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="benchmarkcheck",
            name="query",
            field=models.ForeignKey(
                blank=True,
                help_text="A query's check: its query (a benchmark check names its queries in its strata).",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",  # completeness_checks once the old model is gone
                to="annotator.query",
            ),
        ),
        migrations.AddField(
            model_name="benchmarkcheck",
            name="second_judgments",
            field=models.BooleanField(
                default=True, help_text="Positives (the frames' and the sample's) get a second blind judgment first."
            ),
        ),
        migrations.AddField(
            model_name="benchmarkcheck",
            name="found_since",
            field=models.PositiveIntegerField(
                blank=True, help_text="The frames' positives confirmed since the draw, outside the sample.", null=True
            ),
        ),
        migrations.AddField(
            model_name="benchmarkcheck", name="missing_point", field=models.FloatField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="benchmarkcheck",
            name="missing_low",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="benchmarkcheck",
            name="missing_high",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="benchmarkquery",
            name="frame_taxa",
            field=models.JSONField(blank=True, default=list, help_text="`taxa` frames: the taxa as given."),
        ),
        # The query's checks move in; their models go (with their tables' indexes, whose names the new ones take).
        migrations.RunPython(move_query_checks, move_query_checks_back),
        migrations.DeleteModel("CheckImage"),
        migrations.DeleteModel("CompletenessCheck"),
        # The benchmark's models take the one model's names.
        migrations.RenameModel("BenchmarkCheck", "CompletenessCheck"),
        migrations.RenameModel("BenchmarkQuery", "CheckStratum"),
        migrations.RenameModel("BenchmarkImage", "CheckImage"),
        migrations.RenameField("checkstratum", "benchmark", "completeness_check"),
        migrations.RenameField("checkimage", "benchmark", "completeness_check"),
        migrations.AlterField(
            model_name="completenesscheck",
            name="query",
            field=models.ForeignKey(
                blank=True,
                help_text="A query's check: its query (a benchmark check names its queries in its strata).",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="completeness_checks",
                to="annotator.query",
            ),
        ),
        # The one model's options, help texts, constraints and index.
        migrations.AlterModelOptions(
            name="checkimage",
            options={"ordering": ["completeness_check", "position"]},
        ),
        migrations.AlterModelOptions(
            name="checkstratum",
            options={"ordering": ["completeness_check", "query"]},
        ),
        migrations.AlterModelOptions(
            name="completenesscheck",
            options={"ordering": ["claim", "query", "-ordinal"]},
        ),
        migrations.AlterField(
            model_name="checkstratum",
            name="found_ids",
            field=models.BinaryField(help_text="The frame's confirmed positives at the draw, packed."),
        ),
        migrations.AlterField(
            model_name="checkstratum",
            name="frame_depth",
            field=models.PositiveIntegerField(blank=True, help_text="`top` frames: ranks per ranking.", null=True),
        ),
        migrations.AlterField(
            model_name="checkstratum",
            name="frame_ids",
            field=models.BinaryField(help_text="The frame's image ids, packed (annotator.completeness.frames)."),
        ),
        migrations.AlterField(
            model_name="completenesscheck",
            name="confidence",
            field=models.FloatField(help_text="The claim's, over all of the query's (or the benchmark's) checks."),
        ),
        migrations.AlterField(
            model_name="completenesscheck",
            name="found",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="The frames' confirmed positives at the draw still relevant at the decision (a benchmark check decided before annotator 0026: with those confirmed since the draw).",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="completenesscheck",
            name="miss_rate",
            field=models.FloatField(
                default=0.0, help_text="The bound the test assumes on the share of sampled positives its looks lose."
            ),
        ),
        migrations.AlterField(
            model_name="completenesscheck",
            name="ordinal",
            field=models.PositiveIntegerField(
                help_text="The query's (or the benchmark's) 1st, 2nd... check (each spends its share of the error)."
            ),
        ),
        migrations.AlterField(
            model_name="completenesscheck",
            name="sampled_from",
            field=models.PositiveIntegerField(
                help_text="The pairs the sample was drawn from: all but the frames' confirmed positives (with second judgments off, only those nobody had judged)."
            ),
        ),
        migrations.AlterField(
            model_name="completenesscheck",
            name="scope",
            field=models.CharField(help_text="Which queries: one, all, a split, or a list, in words.", max_length=200),
        ),
        migrations.AddIndex(
            model_name="checkimage",
            index=models.Index(fields=["query", "image"], name="check_image_pair"),
        ),
        migrations.AddConstraint(
            model_name="checkimage",
            constraint=models.UniqueConstraint(fields=("completeness_check", "query", "image"), name="check_pair_once"),
        ),
        migrations.AddConstraint(
            model_name="checkstratum",
            constraint=models.UniqueConstraint(fields=("completeness_check", "query"), name="check_stratum_once"),
        ),
        migrations.AddConstraint(
            model_name="completenesscheck",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("claim", "query"), ("query__isnull", False)),
                    models.Q(("claim", "benchmark"), ("query__isnull", True)),
                    _connector="OR",
                ),
                name="check_names_its_query_alone",
            ),
        ),
        migrations.AddConstraint(
            model_name="completenesscheck",
            constraint=models.UniqueConstraint(
                condition=models.Q(("claim", "query")), fields=("query", "ordinal"), name="check_ordinal_once_a_query"
            ),
        ),
        migrations.AddConstraint(
            model_name="completenesscheck",
            constraint=models.UniqueConstraint(
                condition=models.Q(("claim", "benchmark")), fields=("ordinal",), name="check_ordinal_once_a_benchmark"
            ),
        ),
        migrations.AddConstraint(
            model_name="completenesscheck",
            constraint=models.UniqueConstraint(
                condition=models.Q(("claim", "query"), ("status", "checking")),
                fields=("query",),
                name="check_one_open_a_query",
            ),
        ),
        migrations.AddConstraint(
            model_name="completenesscheck",
            constraint=models.UniqueConstraint(
                condition=models.Q(("claim", "benchmark"), ("status", "checking")),
                fields=("claim",),
                name="check_one_open_benchmark",
            ),
        ),
    ]
