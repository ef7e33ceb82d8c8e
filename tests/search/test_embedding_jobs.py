"""Embedding jobs in embedded mode (no broker): the same task code a Celery worker runs."""

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from search import jobs
from search.clip import get_embedder
from search.facade import search
from search.models import ChunkStatus, EmbeddingFailure, EmbeddingJob, IndexBuild, JobStatus
from search.spec import store_root
from search.store import EmbeddingStore
from tests.factories import make_collection

pytestmark = pytest.mark.django_db


def stored(spec):
    return EmbeddingStore.existing(store_root(), spec.name).load()


def test_embed_command_embeds_everything_records_bad_images_and_builds_the_index(tiny_spec, tmp_path, capsys):
    make_collection(tmp_path / "images", 12, broken={4: "missing", 9: "corrupt"})
    call_command("embed")
    out = capsys.readouterr().out
    assert "10 embedded" in out and "2 images were skipped" in out

    job = EmbeddingJob.objects.get()
    assert (job.status, job.total, job.done, job.failed) == (JobStatus.DONE, 12, 10, 2)
    assert job.chunks.count() == 3 and not job.chunks.exclude(status=ChunkStatus.DONE).exists()
    reasons = dict(EmbeddingFailure.objects.values_list("image_id", "reason"))
    assert set(reasons) == {4, 9}
    assert reasons[4].startswith("missing file:") and reasons[9].startswith("unreadable image")

    embeddings = stored(tiny_spec)
    assert sorted(embeddings.image_ids.tolist()) == [i for i in range(1, 13) if i not in (4, 9)]
    assert embeddings.vectors.dtype == np.float16
    # The pipeline's vectors are the model's vectors of those files.
    embedder = get_embedder(tiny_spec)
    row = int(np.flatnonzero(embeddings.image_ids == 7)[0])
    expected = embedder.encode_images([PILImage.open(tmp_path / "images" / "11" / "7.jpg")])[0]
    np.testing.assert_allclose(embeddings.vectors[row].astype(np.float32), expected, atol=2e-3)
    assert embeddings.taxon_ids[row] == 11

    assert IndexBuild.objects.get().status == JobStatus.DONE
    hits = search(image_id=7, k=3)
    assert hits[0].image_id == 7 and hits[0].score == pytest.approx(1, abs=1e-3)


def test_running_again_on_a_finished_collection_does_nothing(tiny_spec, tmp_path, capsys):
    make_collection(tmp_path / "images", 6, broken={2: "corrupt"})
    call_command("embed")
    parts_before = sorted(p.name for p in (store_root()).rglob("*.npy"))
    call_command("embed")
    out = capsys.readouterr().out
    assert "Nothing to embed" in out and "1 unreadable images skipped" in out
    assert EmbeddingJob.objects.count() == 1
    assert sorted(p.name for p in (store_root()).rglob("*.npy")) == parts_before


def test_new_images_get_a_new_job_for_only_themselves(tiny_spec, tmp_path):
    make_collection(tmp_path / "images", 6)
    call_command("embed")
    make_collection(tmp_path / "images", 4, first_id=100)
    call_command("embed")
    second = EmbeddingJob.objects.order_by("created_at").last()
    assert (second.total, second.done) == (4, 4)
    assert len(stored(tiny_spec)) == 10


def test_an_interrupted_job_resumes_and_redoes_only_unfinished_chunks(tiny_spec, tmp_path, capsys):
    make_collection(tmp_path / "images", 20)
    job = jobs.start_embedding(chunk_size=5)
    chunks = list(job.chunks.order_by("number"))
    jobs.run_chunk(chunks[0].pk)
    jobs.run_chunk(chunks[1].pk)
    # A worker died in the middle of chunk 2: marked running, its part never written.
    type(chunks[2]).objects.filter(pk=chunks[2].pk).update(status=ChunkStatus.RUNNING, attempts=1)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.done == 10

    call_command("embed")
    assert "Resuming embedding job" in capsys.readouterr().out
    assert EmbeddingJob.objects.count() == 1
    attempts = list(job.chunks.order_by("number").values_list("attempts", flat=True))
    assert attempts == [1, 1, 2, 1]
    job.refresh_from_db()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 20, 0)
    assert sorted(stored(tiny_spec).image_ids.tolist()) == list(range(1, 21))


def test_a_chunk_done_twice_is_counted_and_stored_once(tiny_spec, tmp_path):
    make_collection(tmp_path / "images", 10)
    job = jobs.start_embedding(chunk_size=5)
    first = job.chunks.order_by("number").first()
    jobs.run_chunk(first.pk)
    type(first).objects.filter(pk=first.pk).update(status=ChunkStatus.PENDING)  # redelivered after a lost ack
    jobs.run_chunk(first.pk)
    job.refresh_from_db()
    assert job.done == 5
    assert len(EmbeddingStore.existing(store_root(), tiny_spec.name).parts()) == 1


def test_retry_failed_tries_unreadable_images_again(tiny_spec, tmp_path):
    make_collection(tmp_path / "images", 6, broken={3: "missing"})
    call_command("embed")
    PILImage.new("RGB", (64, 48), "white").save(tmp_path / "images" / "10" / "3.jpg")
    call_command("embed")
    assert EmbeddingJob.objects.count() == 1  # skipped images are not retried unasked
    call_command("embed", "--retry-failed")
    assert 3 in stored(tiny_spec).image_ids and not EmbeddingFailure.objects.exists()


def test_weights_that_cannot_load_stop_the_command_before_any_job(tiny_settings, tmp_path):
    tiny_settings.QUIRE_CLIP_PRETRAINED = str(tmp_path / "missing.safetensors")
    make_collection(tmp_path / "images", 3)
    with pytest.raises(CommandError, match="Cannot load the CLIP model"):
        call_command("embed")
    assert not EmbeddingJob.objects.exists()


def test_a_store_of_another_dimension_fails_the_job_with_the_reason(tiny_spec, tmp_path):
    make_collection(tmp_path / "images", 3)
    EmbeddingStore(store_root(), tiny_spec.name, 32)  # written by something else
    with pytest.raises(CommandError, match="not the configured .* \\(64 dimensions\\)"):
        call_command("embed")
    job = EmbeddingJob.objects.get()
    assert job.status == JobStatus.FAILED and "32 dimensions" in job.error


def test_build_index_command_and_its_errors(tiny_spec, tmp_path, capsys):
    with pytest.raises(CommandError, match="No embeddings .* run `manage.py embed` first"):
        call_command("build_index")
    assert IndexBuild.objects.get().status == JobStatus.FAILED
    make_collection(tmp_path / "images", 8)
    call_command("embed")
    with pytest.raises(CommandError, match="IVF-PQ index needs at least 1,000 vectors .* Use --kind flat"):
        call_command("build_index", "--kind", "ivfpq")
    call_command("build_index", "--kind", "flat")
    assert "Built a flat index of 8 vectors" in capsys.readouterr().out


def test_decoding_processes_give_the_threads_answer_failures_included(tiny_spec, tmp_path):
    """QUIRE_EMBED_LOADER_PROCESSES (issue 56): the same vectors, ids, taxa and failures, in the same order, as
    the decoding threads give, with batches that straddle the broken files."""
    from search.pipeline import ImageFile, embed_files

    make_collection(tmp_path / "images", 23, broken={3: "missing", 10: "corrupt", 11: "corrupt"})
    files = [
        ImageFile(image_id, tmp_path / "images" / str(taxon) / f"{image_id}.jpg", taxon)
        for image_id, taxon in ((i, [10, 11, 12][i % 3]) for i in range(1, 24))
    ]
    embedder = get_embedder(tiny_spec)
    told: list[int] = []
    threads = embed_files(embedder, files, batch_size=4, loader_threads=2)
    processes = embed_files(embedder, files, batch_size=4, loader_processes=2, progress=told.append)
    assert (
        processes.image_ids.tolist() == threads.image_ids.tolist() == [i for i in range(1, 24) if i not in (3, 10, 11)]
    )
    assert processes.taxon_ids.tolist() == threads.taxon_ids.tolist()
    np.testing.assert_allclose(processes.vectors, threads.vectors, atol=1e-6)
    assert [(f.image_id, f.reason.split(":")[0]) for f in processes.failures] == [
        (3, "missing file"),
        (10, "unreadable image " + str(tmp_path / "images" / "11" / "10.jpg")),
        (11, "unreadable image " + str(tmp_path / "images" / "12" / "11.jpg")),
    ]
    assert sum(told) == 23  # every image is told of once, a failure as it is found


def test_a_daemon_worker_decodes_in_threads_and_says_why(tiny_spec, tmp_path, monkeypatch, caplog):
    """Celery's prefork children may not start processes: there the setting falls back to threads, in the log."""
    from search import pipeline

    make_collection(tmp_path / "images", 5)
    monkeypatch.setattr(pipeline, "can_start_processes", lambda: False)
    started = []
    monkeypatch.setattr(pipeline, "_embed_in_processes", lambda *args: started.append(args))
    files = [pipeline.ImageFile(i, tmp_path / "images" / str([10, 11, 12][i % 3]) / f"{i}.jpg", 0) for i in range(1, 6)]
    out = pipeline.embed_files(get_embedder(tiny_spec), files, loader_processes=4)
    assert len(out.image_ids) == 5 and not started
    assert "this worker is a daemon process (Celery's prefork pool)" in caplog.text
    monkeypatch.undo()
    assert pipeline.can_start_processes() is True  # pytest's process is no daemon


def test_the_embed_command_decodes_in_processes_when_asked(tiny_spec, tmp_path, settings):
    settings.QUIRE_EMBED_LOADER_PROCESSES = 2
    make_collection(tmp_path / "images", 12, broken={5: "corrupt"})
    call_command("embed")
    job = EmbeddingJob.objects.get()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 11, 1)
    assert sorted(stored(tiny_spec).image_ids.tolist()) == [i for i in range(1, 13) if i != 5]


def _ask_from_a_pool_child(answers):
    from search.pipeline import can_start_processes

    answers.put(can_start_processes())


def test_celerys_pool_children_may_not_start_decoding_processes():
    """The check asks billiard too: a prefork child is billiard's daemon, though the standard library calls it
    MainProcess (starting a DataLoader there would fail, or leave orphans when the child is killed)."""
    import billiard

    answers = billiard.Queue()
    child = billiard.Process(target=_ask_from_a_pool_child, args=(answers,), daemon=True)
    child.start()
    try:
        assert answers.get(timeout=60) is False
    finally:
        child.join(timeout=30)
