import pytest
from django.contrib.auth import get_user_model

from search.models import EmbeddingFailure, EmbeddingJob, IndexBuild, JobStatus
from tests.factories import make_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    client.force_login(get_user_model().objects.create_superuser("boss", "boss@example.org", "pw"))
    return client


def test_the_admin_button_embeds_and_the_page_shows_progress_and_failures(tiny_spec, tmp_path, staff_client):
    make_collection(tmp_path / "images", 9, broken={2: "missing"})
    page = staff_client.get("/admin/search/embeddingjob/").content.decode()
    assert "Embed new images" in page and tiny_spec.name in page
    assert "random weights" in page  # the banner, in the admin too

    response = staff_client.post("/admin/search/embeddingjob/start/", follow=True)
    job = EmbeddingJob.objects.get()
    assert f"Embedding job {job.pk}: 2 chunks of 9 images sent" in response.content.decode()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 8, 1)
    page = staff_client.get("/admin/search/embeddingjob/").content.decode()
    assert "8 / 9 (100%)" in page
    assert "missing file" in staff_client.get("/admin/search/embeddingfailure/").content.decode()
    assert IndexBuild.objects.get().status == JobStatus.DONE

    again = staff_client.post("/admin/search/embeddingjob/start/", follow=True).content.decode()
    assert "Nothing to embed" in again
    rebuilt = staff_client.post("/admin/search/embeddingjob/build-index/", follow=True).content.decode()
    assert f"Index build {IndexBuild.objects.latest('created_at').pk}: done" in rebuilt


def test_a_get_or_a_non_staff_user_starts_nothing(tiny_spec, tmp_path, staff_client, client):
    make_collection(tmp_path / "images", 3)
    staff_client.get("/admin/search/embeddingjob/start/")
    assert not EmbeddingJob.objects.exists()
    client.logout()
    client.force_login(get_user_model().objects.create_user("ann", password="pw"))
    assert client.post("/admin/search/embeddingjob/start/").status_code == 302  # to the admin login
    assert not EmbeddingJob.objects.exists() and not EmbeddingFailure.objects.exists()


def test_eta_and_rate_come_from_the_job_clock(tiny_spec):
    import datetime

    from django.utils import timezone

    job = EmbeddingJob(
        total=1000,
        done=250,
        failed=0,
        status=JobStatus.RUNNING,
        started_at=timezone.now() - datetime.timedelta(seconds=50),
    )
    assert job.rate == pytest.approx(5, rel=0.05)
    assert job.eta_seconds == pytest.approx(150, rel=0.05)
    job.status = JobStatus.DONE
    assert job.eta_seconds is None
