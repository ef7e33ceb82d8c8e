"""Blind until the adjudicator decides (issue 63): an overlap image stays sealed after its judgments until an
adjudicator decides it or staff open the sample, and each judge's first judgment given blind is kept as their vote.

Samples drawn before keep what their judges saw: images that already had their judgments were open to everyone,
so they are opened now; on those still waiting, each judge's present judgment is the best record of their vote."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.db.models import Count

OPENED_HELP = "When staff opened the sample (annotator.team.overlap.open_sample)."
VALUES = [("relevant", "Relevant"), ("not_relevant", "Not relevant"), ("unsure", "Unsure")]


def keep_what_was_seen(apps, schema_editor):
    OverlapImage = apps.get_model("annotator", "OverlapImage")
    Judgment = apps.get_model("annotator", "Judgment")
    BlindVote = apps.get_model("annotator", "BlindVote")
    now = django.utils.timezone.now()
    judged = {
        (row["query_id"], row["image_id"]): row["n"]
        for row in Judgment.objects.values("query_id", "image_id").annotate(n=Count("id"))
    }
    opened, waiting = [], []
    for row in OverlapImage.objects.select_related("query").iterator():
        complete = judged.get((row.query_id, row.image_id), 0) >= row.query.judgments_wanted
        (opened if complete else waiting).append(row)
    OverlapImage.objects.filter(pk__in=[row.pk for row in opened]).update(opened_at=now)
    for row in waiting:
        BlindVote.objects.bulk_create(
            [
                BlindVote(query_id=row.query_id, image_id=row.image_id, annotator_id=j.annotator_id, value=j.value)
                for j in Judgment.objects.filter(query_id=row.query_id, image_id=row.image_id, annotator__isnull=False)
            ],
            ignore_conflicts=True,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0022_fresh_looks"),
        ("catalog", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="overlapimage",
            name="opened_at",
            field=models.DateTimeField(blank=True, help_text=OPENED_HELP, null=True),
        ),
        migrations.CreateModel(
            name="BlindVote",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("value", models.CharField(choices=VALUES, max_length=16)),
                ("given_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "annotator",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
                (
                    "image",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="+", to="catalog.image"
                    ),
                ),
                (
                    "query",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="annotator.query"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("query", "image", "annotator"), name="blind_vote_once")
                ],
            },
        ),
        migrations.RunPython(keep_what_was_seen, migrations.RunPython.noop),
    ]
