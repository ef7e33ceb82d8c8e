from django.db import migrations, models
from django.utils import timezone

FAILED = (
    "Stopped when Quire began refusing a second release of one name in the making: a newer job of this name "
    "was queued after it."
)


def one_unfinished_job_per_name(apps, schema_editor):
    """Jobs left unfinished by a worker that died (before the reaper) may share a name: all but the newest fail."""
    ReleaseJob = apps.get_model("annotator", "ReleaseJob")
    newest: set[str] = set()
    for job in ReleaseJob.objects.filter(status__in=["queued", "running"]).order_by("-created_at", "-id"):
        if job.name in newest:
            ReleaseJob.objects.filter(pk=job.pk).update(status="failed", error=FAILED, finished_at=timezone.now())
        newest.add(job.name)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0020_completeness_claims")]

    operations = [
        migrations.RunPython(one_unfinished_job_per_name, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="releasejob",
            constraint=models.UniqueConstraint(
                condition=models.Q(status__in=["queued", "running"]), fields=("name",), name="one_release_job_per_name"
            ),
        ),
    ]
