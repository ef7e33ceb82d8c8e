"""Finding 6 and the fuzz test: every reader gives one line naming the file and place, or imports
correctly; nothing is half-written."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotator.inquire.importers import import_annotations, import_queries
from catalog.importers import InputError, import_folder, import_inat
from common.inputs import CsvFile
from evaluation.inputs import read_qrels, read_queries, read_run
from search.importers import import_clip_retrieval
from search.spec import store_root
from tests.factories import database_snapshot, inat_document, make_collection

ROOT = Path(__file__).resolve().parents[2]
QUERIES_HEADER = ",query_id,query_text,supercategory,category,iconic_group\n"


@pytest.mark.parametrize(
    "content, problem",
    [
        ("query_id,image_id,score\n1,10\n", "line 2: expected 3 fields as in the header, found 2"),
        ('query_id,image_id,score\n1,"10\n', "line 2: expected 3 fields"),
        ("query_id,image_id,score\n1,10," + "9" * 2_000_000 + "\n", "malformed CSV (field larger than field limit"),
        ("query_id,image_id,score\n", "has no rows"),
        ("1 Q0 10 1 0.5 run\n1 Q0\n", "line 2: a TREC run line has 6 fields"),
    ],
)
def test_run_readers_say_the_line(tmp_path, content, problem):
    path = tmp_path / "run.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=re.escape(problem)):
        read_run(path)


def test_qrels_without_a_label_field_say_the_line(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("query_id,image_id,image_path,label\n1,10,a.jpg,relevant\n1,11,b.jpg\n")
    with pytest.raises(InputError, match=r"labels.csv, line 3: expected 4 fields"):
        read_qrels(path)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "row, problem",
    [
        ("0,9223372036854775808,skimming,B,c,d", "query_id must be a whole number from"),
        ("2147483648,7,skimming,B,c,d", "the unnamed first column must be a whole number from"),
        ("0,7," + "x" * 10_001 + ",B,c,d", "query_text is longer than 10000 characters"),
    ],
)
def test_query_files_with_overflowing_numbers_say_the_line(tmp_path, row, problem):
    path = tmp_path / "inquire_queries_val.csv"
    path.write_text(QUERIES_HEADER + row + "\n")
    before = database_snapshot()
    with pytest.raises(InputError, match=f"line 2: {problem}"):
        import_queries(path)
    assert database_snapshot() == before


@pytest.mark.django_db
def test_import_embeddings_with_paths_that_are_not_text(tmp_path, tiny_settings):
    make_collection(tmp_path / "images", 3)
    folder = tmp_path / "emb"
    (folder / "img_emb").mkdir(parents=True)
    (folder / "metadata").mkdir()
    np.save(folder / "img_emb" / "img_emb_0.npy", np.ones((3, 8), dtype=np.float32))
    for paths in ([1, 2, 3], ["10/1.jpg", None, "12/3.jpg"]):
        pq.write_table(pa.table({"image_path": paths}), folder / "metadata" / "metadata_0.parquet")
        with pytest.raises(InputError, match=r"row \d: image_path must be a file path"):
            import_clip_retrieval(folder, store_root(), "test-model")
    assert not (store_root() / "test-model").exists()


@pytest.mark.django_db
def test_import_folder_with_a_fifo_and_a_non_utf8_name(tmp_path):
    import os

    folder = tmp_path / "photos"
    folder.mkdir()
    os.mkfifo(folder / "pipe.jpg")
    Path(os.fsdecode(folder.as_posix().encode() + b"/caf\xe9.jpg")).write_bytes(b"not an image")
    before = database_snapshot()
    with pytest.raises(InputError, match=r"caf\\udce9.jpg: the file name is not UTF-8; rename the file"):
        import_folder(folder)
    assert database_snapshot() == before
    result = import_folder(folder, skip_unreadable=True)
    assert result.created == 0 and sorted(result.skipped) == ["caf\\udce9.jpg", "pipe.jpg"]


@pytest.mark.slow
def test_the_csv_field_limit_is_set_at_start_up_not_by_the_first_import():
    program = "import django, csv; django.setup(); print(csv.field_size_limit())"
    env = {"DJANGO_SETTINGS_MODULE": "tests.settings", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(1024 * 1024), out.stderr


@pytest.mark.django_db
def test_evaluate_prints_one_line_for_a_bad_run(tmp_path):
    (tmp_path / "qrels.csv").write_text("query_id,image_id,image_path\n1,10,a.jpg\n")
    (tmp_path / "run.csv").write_text("query_id,image_id,score\n1,10\n")
    with pytest.raises(CommandError) as error:
        call_command("evaluate", "--qrels", str(tmp_path / "qrels.csv"), "--run", str(tmp_path / "run.csv"))
    assert str(error.value).count("\n") == 0 and "run.csv, line 2" in str(error.value)


# --- the fuzz test: mutated files through every reader ---------------------------------------------


def mutations(seed: bytes):
    """Bytes like `seed` with a few bytes flipped, cut, repeated or replaced by hostile ones."""
    hostile = [b"\x00", b"\xff", b'"', b"\n", b",", b"[", b"{", b"\\ud800", b"9" * 30, b"-1", b"1e999"]
    return st.tuples(
        st.integers(0, len(seed)), st.integers(0, len(seed)), st.sampled_from(hostile), st.integers(0, 3)
    ).map(lambda m: _mutate(seed, *m))


def _mutate(seed, start, end, insert, kind):
    start, end = sorted((start, end))
    if kind == 0:
        return seed[:start] + insert + seed[start:]
    if kind == 1:
        return seed[:start] + seed[end:]
    if kind == 2:
        return seed[:start] + seed[start:end] * 3 + seed[end:]
    return seed[:start] + insert * 5 + seed[end:]


INAT_SEED = json.dumps(inat_document(images=3)).encode()
CSV_SEEDS = {
    "queries": (QUERIES_HEADER + "0,1,skimming,B,c,d\n1,2,puffins,B,c,d\n").encode(),
    "annotations": b"query_id,image_id,image_path\n1,1000,a.jpg\n2,1001,b.jpg\n",
    "run": b"query_id,image_id,score,rank\n1,1000,0.9,1\n1,1001,0.5,2\n",
}
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.mark.django_db
@FUZZ
@given(data=mutations(INAT_SEED))
def test_fuzzed_inat_files_import_whole_or_say_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "train.json"
    path.write_bytes(data)
    before = database_snapshot()
    try:
        import_inat(path)
    except InputError as error:
        assert "\n" not in str(error) and str(path) in str(error)
        assert database_snapshot() == before  # nothing half-written


@pytest.mark.django_db
@FUZZ
@given(kind=st.sampled_from(sorted(CSV_SEEDS)), data=st.data())
def test_fuzzed_csv_files_read_whole_or_say_one_line(tmp_path_factory, kind, data):
    content = data.draw(mutations(CSV_SEEDS[kind]))
    path = tmp_path_factory.mktemp("fuzz") / f"inquire_{kind}.csv"
    path.write_bytes(content)
    before = database_snapshot()
    readers = {
        "queries": lambda: (read_queries(path), import_queries(path)),
        "annotations": lambda: (read_qrels(path), import_annotations(path)),
        "run": lambda: (read_run(path), list(CsvFile(path))),
    }
    try:
        readers[kind]()
    except InputError as error:
        assert "\n" not in str(error) and str(path) in str(error)
        assert database_snapshot() == before
