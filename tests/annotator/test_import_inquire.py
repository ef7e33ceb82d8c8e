import csv

import pytest
from django.core.management import CommandError, call_command

from annotator.inquire.importers import import_annotations, import_queries
from annotator.labels import set_label
from annotator.models import Label, LabelEvent, LabelSource, Query
from catalog.importers import InputError, import_inat
from catalog.models import Image
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db

QUERIES_HEADER = ",query_id,query_text,supercategory,category,iconic_group\n"


def write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


@pytest.fixture
def queries_csv(tmp_path):
    return write(
        tmp_path,
        "inquire_queries_val.csv",
        QUERIES_HEADER
        + '4,7,"Black Skimmer performing skimming, low over water",Behavior,Feeding and Hydration,Birds\n'
        + "0,3,A mongoose standing upright alert,Behavior,Defensive and Survival Behaviors,Mammals\n"
        + "9,12,Puffin carrying fish,Behavior,Feeding and Hydration,\n",
    )


def test_real_inquire_query_files_import_with_their_splits(inquire_dir):
    val = import_queries(inquire_dir / "inquire_queries_val.csv")
    test = import_queries(inquire_dir / "inquire_queries_test.csv")

    assert (val.created, test.created) == (50, 200)
    assert Query.objects.filter(split="val").count() == 50
    assert Query.objects.filter(split="test").count() == 200
    with open(inquire_dir / "inquire_queries_test.csv", newline="") as handle:
        first = next(csv.DictReader(handle))
    query = Query.objects.get(id=int(first["query_id"]))
    assert (query.text, query.category, query.csv_index) == (first["query_text"], first["category"], int(first[""]))


def test_queries_get_fields_and_split_from_the_file_name(queries_csv):
    result = import_queries(queries_csv)

    assert (result.created, result.updated, result.unchanged) == (3, 0, 0)
    skimmer = Query.objects.get(id=7)
    assert skimmer.text == "Black Skimmer performing skimming, low over water"
    assert (skimmer.supercategory, skimmer.category, skimmer.iconic_group) == (
        "Behavior",
        "Feeding and Hydration",
        "Birds",
    )
    assert (skimmer.split, skimmer.csv_index, skimmer.status, skimmer.fully_labeled) == ("val", 4, "open", "unknown")
    assert Query.objects.get(id=12).iconic_group == ""


def test_split_option_wins_over_the_file_name(queries_csv):
    import_queries(queries_csv, split="test")
    assert set(Query.objects.values_list("split", flat=True)) == {"test"}


def test_reimport_changes_nothing_and_keeps_what_admins_set(queries_csv):
    import_queries(queries_csv)
    Query.objects.filter(id=7).update(status="in_progress", notes="half done", fully_labeled="no")
    before = database_snapshot()

    result = import_queries(queries_csv)

    assert (result.created, result.updated, result.unchanged) == (0, 0, 3)
    assert database_snapshot() == before


def test_queries_created_later_get_ids_after_imported_ones(queries_csv):
    import_queries(queries_csv)
    assert Query.objects.create(text="a new query").id > 12


BAD_QUERY_FILES = {
    "missing column": (QUERIES_HEADER.replace(",iconic_group", ""), "line 1", "missing column(s) iconic_group"),
    "bad query_id": (
        QUERIES_HEADER + "0,3,ok,a,b,c\n1,three,bad,a,b,c\n",
        "line 3",
        "query_id must be a whole number, not 'three'",
    ),
    "zero query_id": (QUERIES_HEADER + "0,0,bad,a,b,c\n", "line 2", "query_id must be a positive whole number"),
    "duplicate query_id": (QUERIES_HEADER + "0,3,ok,a,b,c\n1,3,again,a,b,c\n", "line 3", "query_id 3 appears twice"),
    "empty text": (QUERIES_HEADER + "0,3,  ,a,b,c\n", "line 2", "query_text is missing"),
    "NUL in text": (QUERIES_HEADER + "0,3,bad\x00text,a,b,c\n", "line 2", "query_text contains a NUL character"),
    "short row": (QUERIES_HEADER + "0,3,ok,a\n", "line 2", "expected 6 fields as in the header, found 4"),
    "empty file": ("", "line 1", "the file is empty"),
}


@pytest.mark.parametrize("case", list(BAD_QUERY_FILES))
def test_a_bad_queries_file_stops_and_changes_nothing(tmp_path, queries_csv, case):
    import_queries(queries_csv)
    before = database_snapshot()
    text, where, problem = BAD_QUERY_FILES[case]
    # The good first rows would change query 3 if anything were written.
    path = write(tmp_path, "bad.csv", text.replace("0,3,ok", "0,3,changed"))

    with pytest.raises(InputError) as failure:
        import_queries(path)

    assert str(failure.value).startswith(f"{path}, {where}: ")
    assert problem in str(failure.value)
    assert database_snapshot() == before


def test_a_queries_file_in_another_encoding_is_refused(tmp_path):
    path = write(tmp_path, "latin.csv", QUERIES_HEADER + "0,3,Pfau mit Rad \u00fcber Wiese,a,b,c\n", "latin-1")
    with pytest.raises(InputError, match=r"latin.csv, line 2: the file is not UTF-8 text"):
        import_queries(path)
    assert not Query.objects.exists()


def test_an_unknown_split_is_refused(queries_csv):
    with pytest.raises(InputError, match="split must be one of val, test, other"):
        import_queries(queries_csv, split="train")


# Annotations


@pytest.fixture
def collection(write_json, queries_csv):
    import_inat(write_json(inat_document(images=6)))
    import_queries(queries_csv)


def annotations(tmp_path, rows, name="inquire_annotations.csv"):
    lines = ["query_id,image_id,image_path"] + [f"{q},{i},{p}" for q, i, p in rows]
    return write(tmp_path, name, "\n".join(lines) + "\n")


def path_of(image_id):
    return Image.objects.get(id=image_id).file_name


def test_annotations_become_relevant_labels_with_history(tmp_path, collection):
    path = annotations(tmp_path, [(7, 1000, path_of(1000)), (7, 1003, path_of(1003)), (3, 1000, path_of(1000))])

    result = import_annotations(path)

    assert (result.rows, result.labels_changed, result.images_created) == (3, 3, 0)
    assert set(Label.objects.values_list("query_id", "image_id", "value")) == {
        (7, 1000, "relevant"),
        (7, 1003, "relevant"),
        (3, 1000, "relevant"),
    }
    assert set(LabelEvent.objects.values_list("old_value", "new_value", "source")) == {("", "relevant", "import")}


def test_reimporting_annotations_changes_nothing(tmp_path, collection):
    path = annotations(tmp_path, [(7, 1000, path_of(1000)), (7, 1003, path_of(1003))])
    import_annotations(path)
    before = database_snapshot()

    assert import_annotations(path).labels_changed == 0
    assert database_snapshot() == before


def test_an_annotation_turns_an_earlier_negative_relevant_and_keeps_both_in_history(tmp_path, collection):
    set_label(query_id=7, image_id=1000, value="not_relevant", source=LabelSource.CLICK)

    import_annotations(annotations(tmp_path, [(7, 1000, path_of(1000))]))

    assert Label.objects.get(query_id=7, image_id=1000).value == "relevant"
    assert list(LabelEvent.objects.values_list("old_value", "new_value")) == [
        ("", "not_relevant"),
        ("not_relevant", "relevant"),
    ]


def test_paths_may_differ_by_a_leading_folder(tmp_path, collection):
    relative = path_of(1001).removeprefix("train/")
    assert import_annotations(annotations(tmp_path, [(7, 1001, relative)])).labels_changed == 1


def test_missing_images_can_be_created_from_their_paths(tmp_path, collection):
    dir_name = inat_document()["categories"][1]["image_dir_name"]
    path = annotations(tmp_path, [(7, 555, f"train/{dir_name}/abc.jpg"), (7, 556, "train/unknown_folder/x.jpg")])

    result = import_annotations(path, create_missing_images=True)

    assert result.images_created == 2
    assert Image.objects.get(id=555).taxon_id == 11
    assert Image.objects.get(id=556).taxon_id is None
    assert Label.objects.filter(query_id=7, image_id__in=[555, 556], value="relevant").count() == 2


BAD_ANNOTATIONS = {
    "unknown query": ([(7, 1000, None), (99, 1001, None)], "line 3", "unknown query_id 99; import the queries CSV"),
    "unknown image": ([(7, 1000, None), (7, 4242, "train/x/4242.jpg")], "line 3", "unknown image_id 4242 (and 0 more)"),
    "bad image_id": ([(7, "12a", "train/x.jpg")], "line 2", "image_id must be a whole number, not '12a'"),
    "empty path": ([(7, 1000, "")], "line 2", "image_path is missing"),
    "another collection": ([(7, 1000, "train/other/zzz.jpg")], "line 2", "image 1000 is"),
    "one image two paths": ([(7, 1000, None), (3, 1000, "train/b.jpg")], "line 3", "image 1000 has image_path"),
}


@pytest.mark.parametrize("case", list(BAD_ANNOTATIONS))
def test_bad_annotations_stop_and_change_nothing(tmp_path, collection, case):
    rows, where, problem = BAD_ANNOTATIONS[case]
    rows = [(q, i, path_of(i) if p is None else p) for q, i, p in rows]
    before = database_snapshot()

    with pytest.raises(InputError) as failure:
        import_annotations(annotations(tmp_path, rows))

    assert str(failure.value).startswith(f"{tmp_path / 'inquire_annotations.csv'}, {where}: ")
    assert problem in str(failure.value)
    assert database_snapshot() == before


def test_commands_report_and_fail_cleanly(tmp_path, collection, capsys):
    call_command("import_inquire_annotations", str(annotations(tmp_path, [(7, 1000, path_of(1000))])))
    assert "1 relevant pairs read, 1 labels set or changed" in capsys.readouterr().out
    with pytest.raises(CommandError, match="unknown image_id 9"):
        call_command("import_inquire_annotations", str(annotations(tmp_path, [(7, 9, "a.jpg")], "bad.csv")))
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_inquire_queries", str(tmp_path / "missing.csv"))
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("import_inquire_queries", str(tmp_path / "x.csv"), "--split", "train")
