import pytest
from django.contrib.auth import get_user_model

from common import background
from search.models import EmbeddingFailure, EmbeddingJob, IndexBuild, JobStatus
from tests.factories import make_collection

# transaction=True: the admin's jobs run in a background thread, on its own database connection.
pytestmark = pytest.mark.django_db(transaction=True)


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
    # The request only recorded the job (embedded mode: no broker) and answered; a background thread embeds.
    assert f"Embedding job {job.pk} started: 2 chunks of 9 images" in response.content.decode()
    background.wait_for_all(timeout=120)
    job.refresh_from_db()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 8, 1)
    page = staff_client.get("/admin/search/embeddingjob/").content.decode()
    assert "8 / 9 (100%)" in page
    assert "missing file" in staff_client.get("/admin/search/embeddingfailure/").content.decode()
    assert IndexBuild.objects.get().status == JobStatus.DONE

    again = staff_client.post("/admin/search/embeddingjob/start/", follow=True).content.decode()
    assert "Nothing to embed" in again
    rebuilt = staff_client.post("/admin/search/embeddingjob/build-index/", follow=True).content.decode()
    build = IndexBuild.objects.latest("created_at")
    assert f"Index build {build.pk} started" in rebuilt
    background.wait_for_all(timeout=120)
    build.refresh_from_db()
    assert build.status == JobStatus.DONE and build.vectors == 8


def test_the_admin_buttons_answer_before_the_job_runs(tiny_spec, tmp_path, staff_client, monkeypatch):
    """The request records the job and returns; the work waits for the background thread (held here)."""
    import threading

    from search import jobs

    make_collection(tmp_path / "images", 3)
    release = threading.Event()
    real_enqueue = jobs.enqueue
    monkeypatch.setattr(jobs, "enqueue", lambda job: release.wait(60) and real_enqueue(job))
    try:
        staff_client.post("/admin/search/embeddingjob/start/")
        job = EmbeddingJob.objects.get()
        assert job.status == JobStatus.QUEUED and job.done == 0  # answered while the thread waits
        page = staff_client.get("/admin/search/embeddingjob/").content.decode()
        assert 'http-equiv="refresh"' in page  # the page follows the running job
    finally:
        release.set()
    background.wait_for_all(timeout=120)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.done == 3


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


def test_the_map_button_computes_the_map_outside_the_request(tiny_spec, tmp_path, staff_client, settings):
    from django.core.management import call_command  # only this test embeds by command

    from search import layout  # as above
    from search.models import MapLayout  # as above

    settings.QUIRE_MAP_SAMPLE = 6
    make_collection(tmp_path / "images", 12)
    call_command("embed")
    page = staff_client.get("/admin/search/maplayout/").content.decode()
    assert "Compute the map" in page and "Fit a new map" in page and tiny_spec.name in page
    response = staff_client.post("/admin/search/maplayout/start/", follow=True).content.decode()
    job = MapLayout.objects.get()
    assert f"Map layout {job.pk} started" in response
    background.wait_for_all(timeout=120)
    job.refresh_from_db()
    assert (job.status, job.mode, job.points) == (JobStatus.DONE, "fitted", 12)
    assert "12 of 12 images placed (100%)" in staff_client.get("/admin/search/maplayout/").content.decode()
    assert len(layout.load(tiny_spec.name)) == 12
    # A GET, or a user without the permission, starts nothing.
    staff_client.get("/admin/search/maplayout/start/")
    assert MapLayout.objects.count() == 1
