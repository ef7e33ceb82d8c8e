import csv
import filecmp

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.http import StreamingHttpResponse

from annotator.inquire.exporters import export_inquire
from annotator.inquire.importers import import_annotations, import_queries
from annotator.labels import set_label
from annotator.models import Judgment, Label, LabelEvent, Query
from catalog.importers import import_inat
from catalog.models import Image
from tests.factories import inat_document

pytestmark = pytest.mark.django_db

NAMES = ["inquire_queries.csv", "inquire_annotations.csv", "inquire_labels.csv"]


@pytest.fixture
def labeled(tmp_path, write_json):
    """A collection, queries (one made in Quire) and labels of all three kinds by two annotators."""
    import_inat(write_json(inat_document(images=6)))
    queries = tmp_path / "inquire_queries_test.csv"
    queries.write_text(
        ",query_id,query_text,supercategory,category,iconic_group\n"
        '5,7,"Skimmer, skimming",Behavior,Feeding and Hydration,Birds\n'
        "2,3,Mongoose standing,Behavior,Defensive,Mammals\n"
    )
    import_queries(queries)
    made_here = Query.objects.create(text="Gull with a ring", supercategory="Appearance")
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    for query_id, image_id, value, user in [
        (7, 1000, "relevant", ann),
        (7, 1002, "relevant", bob),
        (7, 1001, "not_relevant", ann),
        (3, 1003, "unsure", bob),
        (3, 1004, "relevant", ann),
        (made_here.id, 1005, "relevant", bob),
    ]:
        set_label(query_id=query_id, image_id=image_id, value=value, user=user, source="click")
    return made_here


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_the_three_files_have_the_inquire_layout(tmp_path, labeled):
    counts = export_inquire(tmp_path / "out")

    assert counts == {
        "inquire_queries.csv": 3,
        "inquire_annotations.csv": 4,
        "inquire_labels.csv": 6,
        "inquire_judgments.csv": 6,
    }
    queries = read(tmp_path / "out/inquire_queries.csv")
    assert queries[0] == ["", "query_id", "query_text", "supercategory", "category", "iconic_group"]
    # Released rows keep their index and order; the query made here is numbered on.
    assert queries[1:] == [
        ["2", "3", "Mongoose standing", "Behavior", "Defensive", "Mammals"],
        ["5", "7", "Skimmer, skimming", "Behavior", "Feeding and Hydration", "Birds"],
        ["6", str(labeled.id), "Gull with a ring", "Appearance", "", ""],
    ]
    annotations = read(tmp_path / "out/inquire_annotations.csv")
    assert annotations[0] == ["query_id", "image_id", "image_path"]
    assert [row[:2] for row in annotations[1:]] == [
        ["3", "1004"],
        ["7", "1000"],
        ["7", "1002"],
        [str(labeled.id), "1005"],
    ]
    assert annotations[2][2] == Image.objects.get(id=1000).file_name
    labels = read(tmp_path / "out/inquire_labels.csv")
    assert labels[0] == ["query_id", "image_id", "image_path", "label", "annotator", "updated_at"]
    assert [(row[0], row[1], row[3], row[4]) for row in labels[1:3]] == [
        ("3", "1003", "unsure", "bob"),
        ("3", "1004", "relevant", "ann"),
    ]
    assert labels[1][5] == Label.objects.get(query_id=3, image_id=1003).updated_at.isoformat()
    assert not list((tmp_path / "out").glob(".*partial"))


def test_export_can_be_limited_to_queries(tmp_path, labeled):
    counts = export_inquire(tmp_path, query_ids=[3])
    assert counts == {
        "inquire_queries.csv": 1,
        "inquire_annotations.csv": 1,
        "inquire_labels.csv": 2,
        "inquire_judgments.csv": 2,
    }


def test_round_trip_into_an_empty_project_is_byte_identical(tmp_path, labeled):
    first = tmp_path / "first"
    export_inquire(first)
    LabelEvent.objects.all()._raw_delete(LabelEvent.objects.db)  # test-only reset of the history
    Label.objects.all()._raw_delete(Label.objects.db)
    Judgment.objects.all()._raw_delete(Judgment.objects.db)
    Query.objects.all().delete()

    import_queries(first / "inquire_queries.csv")
    import_annotations(first / "inquire_annotations.csv")
    second = tmp_path / "second"
    export_inquire(second)

    for name in ["inquire_queries.csv", "inquire_annotations.csv"]:
        assert filecmp.cmp(first / name, second / name, shallow=False), name


def test_round_trip_without_the_collection_is_byte_identical(tmp_path, labeled):
    first = tmp_path / "first"
    export_inquire(first)
    LabelEvent.objects.all()._raw_delete(LabelEvent.objects.db)
    Label.objects.all()._raw_delete(Label.objects.db)
    Judgment.objects.all()._raw_delete(Judgment.objects.db)
    Query.objects.all().delete()
    Image.objects.all().delete()

    import_queries(first / "inquire_queries.csv")
    import_annotations(first / "inquire_annotations.csv", create_missing_images=True)
    second = tmp_path / "second"
    export_inquire(second)

    for name in ["inquire_queries.csv", "inquire_annotations.csv"]:
        assert filecmp.cmp(first / name, second / name, shallow=False), name


def test_real_inquire_queries_export_the_same_rows(tmp_path, inquire_dir):
    released = []
    for name in ["inquire_queries_val.csv", "inquire_queries_test.csv"]:
        import_queries(inquire_dir / name)
        released += read(inquire_dir / name)[1:]

    export_inquire(tmp_path)

    exported = read(tmp_path / "inquire_queries.csv")
    assert exported[0] == read(inquire_dir / "inquire_queries_val.csv")[0]
    assert sorted(exported[1:]) == sorted(released)
    assert len(exported) == 251


def test_command_writes_the_files_and_refuses_bad_targets(tmp_path, labeled, capsys):
    call_command("export_inquire", str(tmp_path / "out"))
    assert f"{tmp_path / 'out' / 'inquire_labels.csv'}: 6 rows" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [*NAMES, "inquire_judgments.csv", "agreement.json", "completeness.json"]
    )

    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(CommandError, match="exists and is not a folder"):
        call_command("export_inquire", str(a_file))
    with pytest.raises(CommandError, match="unknown query id"):
        call_command("export_inquire", str(tmp_path / "o2"), "--query", "424242")


def curator():
    """A user allowed to download the exports, and nothing else."""
    user = User.objects.create(username="boss")
    user.user_permissions.add(Permission.objects.get(codename="export_labels"))
    return user


@pytest.mark.parametrize("name", NAMES)
def test_staff_download_streams_the_same_bytes_as_the_command(client, tmp_path, labeled, name):
    export_inquire(tmp_path)
    client.force_login(curator())

    response = client.get(f"/exports/{name}")

    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    assert (
        b"".join(chunk if isinstance(chunk, bytes) else chunk.encode() for chunk in response.streaming_content)
        == (tmp_path / name).read_bytes()
    )


def test_downloads_are_for_staff_and_check_their_input(client, labeled):
    assert client.get("/exports/inquire_labels.csv").status_code == 302  # to the login page
    client.force_login(User.objects.get(username="ann"))
    assert client.get("/exports/inquire_labels.csv").status_code == 403
    client.force_login(User.objects.create(username="staff-no-perms", is_staff=True))  # staff is not enough
    assert client.get("/exports/inquire_labels.csv").status_code == 403
    client.force_login(curator())
    assert client.get("/exports/passwords.csv").status_code == 404
    assert client.get("/exports/inquire_labels.csv?query=seven").status_code == 400
    body = b"".join(client.get("/exports/inquire_labels.csv?query=3").streaming_content).decode()
    assert body.count("\n") == 3


@pytest.mark.postgresql
def test_copy_from_postgresql_writes_the_same_bytes_as_the_orm_path(labeled, settings):
    """On PostgreSQL the label files come from COPY; they must equal csv.writer's output byte for byte,
    hostile strings, a missing annotator, whole-second timestamps and the spreadsheet-safe variant included."""
    import datetime

    from annotator.inquire.exporters import EXPORTS, csv_lines, export_lines

    names = {
        1000: 'a,b "quoted" ünïcode/x.jpg',
        1001: "=HYPERLINK(evil).jpg",
        1002: " leading and trailing space .jpg",
        1003: "-minus\ttab.jpg",
        1004: "@at.jpg",
    }
    for image_id, file_name in names.items():
        Image.objects.filter(pk=image_id).update(file_name=file_name)
    User.objects.filter(username="bob").update(username='+bob,"the" builder')
    from annotator.models import recording_label_changes

    with recording_label_changes():  # test set-up, not a label change: no history wanted
        Label.objects.filter(image_id=1004).update(annotator=None)
        Label.objects.filter(image_id=1000).update(
            updated_at=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
        )
    for name in ("inquire_annotations.csv", "inquire_labels.csv"):
        for query_ids in (None, [7], []):
            for safe in (False, True):
                copied = b"".join(export_lines(name, query_ids, for_spreadsheets=safe))
                expected = "".join(csv_lines(EXPORTS[name](query_ids), for_spreadsheets=safe)).encode()
                assert copied == expected, (name, query_ids, safe)
    assert b"'=HYPERLINK" in b"".join(export_lines("inquire_labels.csv", for_spreadsheets=True))
    assert b"2026-01-02T03:04:05+00:00" in b"".join(export_lines("inquire_labels.csv"))


def test_a_query_text_with_a_newline_is_one_row_and_counted_once(tmp_path, labeled):
    Query.objects.create(text="Heron\nstanding in the rain", supercategory="Context")
    counts = export_inquire(tmp_path)
    rows = read(tmp_path / "inquire_queries.csv")
    assert counts["inquire_queries.csv"] == len(rows) - 1 == 4
    assert [row[2] for row in rows if row[2].startswith("Heron")] == ["Heron\nstanding in the rain"]
