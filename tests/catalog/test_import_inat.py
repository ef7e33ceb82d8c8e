import datetime
import gzip
import json
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from catalog.importers import InputError, import_inat
from catalog.models import Image, ImageRoot, Taxon
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db


def test_imports_taxa_and_every_image_field(write_json, tmp_path):
    path = write_json(inat_document(images=5))

    result = import_inat(path, tmp_path)

    assert (result.taxa, result.taxa_written, result.images, result.images_written) == (3, 3, 5, 5)
    skimmer = Taxon.objects.get(id=10)
    assert (skimmer.scientific_name, skimmer.common_name, skimmer.class_name, skimmer.family) == (
        "Rynchops niger",
        "Black Skimmer",
        "Aves",
        "Laridae",
    )
    assert skimmer.image_dir_name.endswith("_Rynchops_niger")
    image = Image.objects.get(id=1001)
    assert image.taxon_id == 11
    assert image.file_name.startswith("train/00001_")
    assert (image.width, image.height) == (500, 376)
    assert image.license == "CC0"
    assert image.rights_holder == "Observer 1"
    assert image.observed_on == datetime.date(2021, 4, 2)
    assert (image.latitude, image.longitude, image.location_uncertainty) == (41.5, -74.25, 10.0)
    assert image.root == ImageRoot.objects.get(path=str(tmp_path.resolve()))
    assert Image.objects.get(id=1000).location_uncertainty is None
    assert Image.objects.get(id=1004).taxon_id is None  # no annotation: no taxon


def test_reads_gzip_and_reports_progress(tmp_path):
    path = tmp_path / "train.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(inat_document(images=7), handle)
    calls = []

    result = import_inat(path, batch_size=3, progress=lambda done, total: calls.append((done, total)))

    assert result.images == 7 and Image.objects.count() == 7
    assert calls[-1] == (7, 7)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_reading_the_file_reports_progress_in_bytes_for_each_step(tmp_path):
    # Before the images are written the file is read four times (minutes on the 2 GB iNat24 file):
    # the audit's 1 GB file ran 300 s without a word.
    path = tmp_path / "train.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(inat_document(images=7), handle)
    calls = []

    import_inat(path, reading=lambda step, done, total: calls.append((step, done, total)))

    size = path.stat().st_size  # compressed bytes, as the bar compares them with the file's size
    assert list(dict.fromkeys(step for step, *_ in calls)) == ["checking", "licenses", "taxa", "annotations"]
    assert all(total == size and 0 < done <= size for _, done, total in calls)
    assert calls[-1] == ("annotations", size, size)


def test_a_value_of_more_than_a_megabyte_is_refused_before_parsing(tmp_path, write_json):
    import_inat(write_json(inat_document(images=3), "existing.json"))
    before = database_snapshot()
    path = tmp_path / "one-line.json"
    # One line, a 2 MB file name: ijson would build the whole string before any check saw it.
    head = b'{"licenses": [], "categories": [], "annotations": [], "images": [{"id": 1, "file_name": "'
    path.write_bytes(head + b"a" * (2 << 20) + b'"}]}')

    with pytest.raises(InputError) as failure:
        import_inat(path)

    assert str(failure.value) == (
        f"{path}, byte {len(head) - 1}: a value runs over 1 MB; iNat metadata's longest text is a few hundred bytes"
    )
    assert database_snapshot() == before


def test_running_twice_changes_nothing(write_json):
    path = write_json(inat_document(images=6))
    import_inat(path)
    before = database_snapshot()

    again = import_inat(path)

    assert (again.images_written, again.taxa_written) == (0, 0)
    assert database_snapshot() == before


def test_a_changed_record_is_updated(write_json):
    document = inat_document(images=4)
    import_inat(write_json(document))
    document["images"][2]["rights_holder"] = "Someone Else"
    document["categories"][0]["common_name"] = "Skimmer"

    result = import_inat(write_json(document, "train2.json"))

    assert (result.images_written, result.taxa_written) == (1, 1)
    assert Image.objects.get(id=1002).rights_holder == "Someone Else"
    assert Taxon.objects.get(id=10).common_name == "Skimmer"


def _break(document, how):
    if how == "missing image id":
        del document["images"][3]["id"]
    elif how == "bad number":
        document["images"][3]["latitude"] = "north-ish"
    elif how == "latitude out of range":
        document["images"][3]["latitude"] = 123.0
    elif how == "bad date":
        document["images"][3]["date"] = "yesterday"
    elif how == "unknown category":
        document["annotations"][1]["category_id"] = 999
    elif how == "unknown license":
        document["images"][3]["license"] = 77
    elif how == "duplicate image":
        document["images"][4]["id"] = document["images"][1]["id"]
    elif how == "duplicate category":
        document["categories"][2]["id"] = 10
    elif how == "image not an object":
        document["images"][3] = [1, 2]
    elif how == "negative width":
        document["images"][3]["width"] = -5
    return document


BAD_RECORDS = {
    "missing image id": ("images[3]", "id is missing"),
    "bad number": ("images[3]", "latitude must be a number, not 'north-ish'"),
    "latitude out of range": ("images[3]", "latitude must be between -90 and 90"),
    "bad date": ("images[3]", "date must be a date like 2021-04-22"),
    "unknown category": ("annotations[1]", "category_id 999 is not in the file's categories"),
    "unknown license": ("images[3]", "license 77 is not in the file's licenses"),
    "duplicate image": ("images[4]", "image id 1001 appears twice in the file"),
    "duplicate category": ("categories[2]", "category id 10 appears twice"),
    "image not an object": ("images[3]", "each record must be a JSON object"),
    "negative width": ("images[3]", "width must be a positive number of pixels"),
}


@pytest.mark.parametrize("how", list(BAD_RECORDS))
def test_a_bad_record_stops_the_import_and_changes_nothing(write_json, how):
    import_inat(write_json(inat_document(images=3), "existing.json"))
    before = database_snapshot()
    document = inat_document(images=8)
    document["images"][0]["rights_holder"] = "changed, so a partial import would show"
    path = write_json(_break(document, how), "bad.json")

    with pytest.raises(InputError) as failure:
        import_inat(path, batch_size=2)

    where, problem = BAD_RECORDS[how]
    assert str(failure.value).startswith(f"{path}, {where}: ")
    assert problem in str(failure.value)
    assert "\n" not in str(failure.value)
    assert database_snapshot() == before


@pytest.mark.parametrize(
    "content, problem",
    [
        (b'{"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2,', "broken JSON (parse error: premature EOF)"),
        (b'{"images": [{"id": 1 "file_name": "a.jpg"}]}', "broken JSON (parse error: after key and value"),
        ('{"images": [{"id": 1, "file_name": "\u00e9t\u00e9.jpg"}]}'.encode("latin-1"), "the file is not UTF-8 text"),
    ],
    ids=["truncated", "syntax error", "latin-1"],
)
def test_a_broken_file_stops_the_import_and_changes_nothing(tmp_path, write_json, content, problem):
    import_inat(write_json(inat_document(images=3), "existing.json"))
    before = database_snapshot()
    path = tmp_path / "broken.json"
    path.write_bytes(content)

    with pytest.raises(InputError) as failure:
        import_inat(path)

    assert str(failure.value).startswith(f"{path}, near byte ")
    assert problem in str(failure.value)
    assert database_snapshot() == before


def test_a_missing_file_or_images_root_is_named(tmp_path, write_json):
    with pytest.raises(InputError, match="no such file"):
        import_inat(tmp_path / "nope.json")
    with pytest.raises(InputError, match="the images root is not a folder"):
        import_inat(write_json(inat_document()), tmp_path / "no-such-folder")


def test_command_prints_a_summary_and_turns_errors_into_command_errors(write_json, tmp_path, capsys):
    call_command("import_inat", str(write_json(inat_document(images=4))), "--images-root", str(tmp_path))
    assert "4 images (4 new or changed, 0 unchanged), 3 taxa" in capsys.readouterr().out

    bad = tmp_path / "bad.json"
    bad.write_text('{"images": [')
    with pytest.raises(CommandError, match=r"bad.json, near byte \d+: broken JSON"):
        call_command("import_inat", str(bad))


@pytest.mark.slow
def test_command_exits_non_zero_with_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"images": [{"id": "seven"}]}')
    completed = subprocess.run(
        [sys.executable, "manage.py", "import_inat", str(bad)],
        capture_output=True,
        text=True,
        # Its own empty database: the file is refused before any table is needed.
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": f"sqlite:///{tmp_path}/db"},
    )
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines() == [
        f"CommandError: {bad}, images[0]: id must be a whole number, not 'seven'"
    ]
