"""Checks count only looks given after their draw (issue 62): how many each sampled image gets, and the per-look
bound the test used. Checks drawn before keep 0, the rule they were drawn under (two judgments in all)."""

from django.db import migrations, models

LOOKS_HELP = (
    "Fresh looks (judgments given after the draw) each sampled image gets; 0: a check drawn before issue 62, whose "
    "images wanted two judgments in all."
)
PER_LOOK_HELP = "The per-look bound the test used (annotator.progress.looks)."


class Migration(migrations.Migration):
    dependencies = [("annotator", "0021_release_job_names")]

    operations = [
        migrations.AddField(
            model_name=model,
            name="looks",
            field=models.PositiveSmallIntegerField(default=0, help_text=LOOKS_HELP),
        )
        for model in ("completenesscheck", "benchmarkcheck")
    ] + [
        migrations.AddField(
            model_name=model,
            name="per_look_miss_rate",
            field=models.FloatField(blank=True, null=True, help_text=PER_LOOK_HELP),
        )
        for model in ("completenesscheck", "benchmarkcheck")
    ]
