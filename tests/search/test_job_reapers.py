"""Beat's reapers for jobs that resume (issue 54): a map layout or an index build whose worker stopped (no live
worker holds it: common.held) is sent again, and fails with a sentence after three workers; a held one is left.
The same in-process path the demo uses; tests/faults/test_jobs_end.py kills real workers."""

import pytest

from common import held
from search import jobs
from search.models import IndexBuild, JobStatus
from search.spec import configured_spec

pytestmark = pytest.mark.django_db


def test_an_index_build_whose_worker_stopped_is_built_again_and_a_held_one_is_left(labeling):
    build = IndexBuild.objects.create(model_name=configured_spec().name, kind="flat", status=JobStatus.RUNNING)
    with held.holding(jobs.BUILD_KIND, build.pk):
        assert jobs.reap_index_builds() == []  # a live worker holds it
    assert jobs.reap_index_builds() == [build.pk]  # sent again: with no broker it runs here, from the start
    build.refresh_from_db()
    assert (build.status, build.attempts, build.vectors) == (JobStatus.DONE, 1, 120)
    assert jobs.reap_index_builds() == []


def test_an_index_build_that_keeps_killing_its_worker_fails_with_a_sentence(labeling):
    build = IndexBuild.objects.create(
        model_name=configured_spec().name, kind="flat", status=JobStatus.RUNNING, attempts=3
    )
    assert jobs.reap_index_builds() == [build.pk]
    build.refresh_from_db()
    assert build.status == JobStatus.FAILED and "stopped 3 times" in build.error and "unchanged" in build.error
    assert build.finished_at is not None


def test_a_build_delivered_twice_is_not_built_twice(labeling):
    build = jobs.start_index_build(kind="flat", run_here=True)
    assert build.status == JobStatus.DONE and build.attempts == 1
    assert jobs.run_index_build(build.pk).attempts == 1
