"""The catalog move migrates an existing, populated database in place (run on PostgreSQL in CI).

The database is taken back to the schema before the move (annotator 0001), filled through that
schema's own models, then migrated forward; every row must be where it was, under the new models,
with no table copied and the permissions granted on the moved models kept.
"""

import json
from collections import Counter
from pathlib import Path

import pytest
from django.core.management.color import no_style
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE_THE_MOVE = ("annotator", "0001_initial")


def migrate(targets):
    """Migrate the test database to `targets` (None for an app: none of its migrations), the other
    apps staying at their latest; return the models of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    named = {app for app, _ in targets}
    others = [node for node in executor.loader.graph.leaf_nodes() if node[0] not in named]
    return executor.loader.project_state(others + [target for target in targets if target[1] is not None]).apps


def latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def table_names() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def three_images(old) -> None:
    """Images 1, 2 and 3 of one taxon, through the catalog models of the state `old`."""
    Image, Taxon, ImageRoot = (old.get_model("catalog", name) for name in ("Image", "Taxon", "ImageRoot"))
    root = ImageRoot.objects.create(path="/data/inat24")
    taxon = Taxon.objects.create(id=3111, scientific_name="Rynchops niger")
    for image_id in (1, 2, 3):
        Image.objects.create(id=image_id, root=root, file_name=f"{image_id}.jpg", taxon=taxon)


@pytest.fixture
def back_to_latest():
    """Whatever happens in the test, the database ends at the latest migrations for the tests after it."""
    yield
    migrate(latest())


@pytest.mark.django_db(transaction=True)
def test_a_populated_database_migrates_in_place(back_to_latest):
    old = migrate([BEFORE_THE_MOVE, ("catalog", None)])
    Taxon, ImageRoot, Image = (old.get_model("annotator", name) for name in ("Taxon", "ImageRoot", "Image"))
    Query, Label, LabelEvent = (old.get_model("annotator", name) for name in ("Query", "Label", "LabelEvent"))
    ContentType, Permission = old.get_model("contenttypes", "ContentType"), old.get_model("auth", "Permission")
    Group, User = old.get_model("auth", "Group"), old.get_model("auth", "User")

    skimmer = Taxon.objects.create(id=3111, scientific_name="Rynchops niger", common_name="Black Skimmer")
    root = ImageRoot.objects.create(path="/data/inat24")
    for image_id in (2716321, 2716322, 2716323):
        Image.objects.create(id=image_id, root=root, file_name=f"train/skimmer/{image_id}.jpg", taxon=skimmer)
    query = Query.objects.create(id=7, text="Black Skimmer performing skimming")
    ann = User.objects.create(username="ann")
    Label.objects.create(query=query, image_id=2716321, value="relevant", annotator=ann)
    LabelEvent.objects.create(
        query=query, image_id=2716321, old_value="", new_value="relevant", source="click", user=ann
    )
    # Permissions granted on the old models, as an admin would have.
    image_type = ContentType.objects.get_or_create(app_label="annotator", model="image")[0]
    can_view = Permission.objects.get_or_create(content_type=image_type, codename="view_image", name="Can view image")[
        0
    ]
    Group.objects.create(name="curators").permissions.add(can_view)
    tables_before = table_names()

    migrate(latest())

    from django.contrib.auth.models import Group as CurrentGroup

    from annotator.models import Label as CurrentLabel
    from annotator.models import LabelEvent as CurrentLabelEvent
    from catalog.models import Image as CurrentImage
    from catalog.models import Taxon as CurrentTaxon

    # Nothing copied, nothing renamed: every table is still there, and the catalog made none of its own.
    assert tables_before <= table_names()
    assert not [name for name in table_names() if name.startswith("catalog_")]
    assert list(CurrentImage.objects.order_by("id").values_list("id", "file_name", "taxon_id", "root__path")) == [
        (2716321, "train/skimmer/2716321.jpg", 3111, "/data/inat24"),
        (2716322, "train/skimmer/2716322.jpg", 3111, "/data/inat24"),
        (2716323, "train/skimmer/2716323.jpg", 3111, "/data/inat24"),
    ]
    assert CurrentTaxon.objects.get().common_name == "Black Skimmer"
    label = CurrentLabel.objects.select_related("image__taxon").get()
    assert (label.query_id, label.image.taxon.scientific_name, label.value) == (7, "Rynchops niger", "relevant")
    event = CurrentLabelEvent.objects.get()
    assert (event.new_value, event.lead_time_ms, event.import_batch_id) == ("relevant", None, None)
    permission = CurrentGroup.objects.get(name="curators").permissions.get()
    assert (permission.content_type.app_label, permission.codename) == ("catalog", "view_image")


BEFORE_TEAMS = ("annotator", "0014_example_embedding_error")
TEAMS = ("annotator", "0015_team_judgments")


@pytest.mark.django_db(transaction=True)
def test_every_label_becomes_its_annotators_judgment(back_to_latest):
    """Team labeling's migration: each label becomes its annotator's judgment (the unattributed one, the
    system's), with the source and lead time of its last event; every label and event stays."""
    old = migrate([BEFORE_TEAMS])
    Query, Label, LabelEvent = (old.get_model("annotator", name) for name in ("Query", "Label", "LabelEvent"))
    three_images(old)
    User = old.get_model("auth", "User")
    query = Query.objects.create(id=7, text="Black Skimmer performing skimming")
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    Label.objects.create(query=query, image_id=1, value="relevant", annotator=ann)
    Label.objects.create(query=query, image_id=2, value="not_relevant", annotator=bob)
    Label.objects.create(query=query, image_id=3, value="relevant", annotator=None)
    for image_id, old_value, new_value, user, source, lead in [
        (1, "", "unsure", ann, "click", 900),
        (1, "unsure", "relevant", ann, "keyboard", 1200),
        (2, "", "not_relevant", bob, "submit", None),
        (3, "", "relevant", None, "import", None),
    ]:
        LabelEvent.objects.create(
            query=query, image_id=image_id, old_value=old_value, new_value=new_value, user=user, source=source,
            lead_time_ms=lead,
        )  # fmt: skip
    labels_before = sorted(Label.objects.values_list("query_id", "image_id", "value", "annotator_id"))
    events_before = sorted(LabelEvent.objects.values_list("id", "image_id", "old_value", "new_value", "user_id"))

    new = migrate([TEAMS])
    Judgment = new.get_model("annotator", "Judgment")
    Label, LabelEvent = new.get_model("annotator", "Label"), new.get_model("annotator", "LabelEvent")
    assert sorted(Label.objects.values_list("query_id", "image_id", "value", "annotator_id")) == labels_before
    assert set(Label.objects.values_list("decided_by", flat=True)) == {"single"}
    assert (
        sorted(LabelEvent.objects.values_list("id", "image_id", "old_value", "new_value", "user_id")) == events_before
    )
    assert all(event.annotator_id == event.user_id for event in LabelEvent.objects.all())
    assert sorted(Judgment.objects.values_list("image_id", "annotator_id", "value", "source", "lead_time_ms")) == [
        (1, ann.pk, "relevant", "keyboard", 1200),
        (2, bob.pk, "not_relevant", "submit", None),
        (3, None, "relevant", "import", None),
    ]

    # Back again: allowed while no image has a second annotator's judgment.
    migrate([BEFORE_TEAMS])


TEXT_KEYS = ("annotator", "0016_query_text_key")


@pytest.mark.django_db(transaction=True)
def test_queries_made_twice_before_the_text_key_are_all_kept(back_to_latest, capsys):
    """One query a text: the first of a text gets its key, a later duplicate (a double click's, from before
    the constraint) is kept without one and named."""
    from annotator.models import text_key

    old = migrate([TEAMS])
    Query = old.get_model("annotator", "Query")
    for pk, text in [(1, "a heron with a fish"), (2, "A heron  with a fish"), (3, "a gull on a post")]:
        Query.objects.create(id=pk, text=text)
    new = migrate([TEXT_KEYS])
    keys = dict(new.get_model("annotator", "Query").objects.values_list("pk", "text_key"))
    assert keys == {1: text_key("a heron with a fish"), 2: None, 3: text_key("a gull on a post")}
    assert "Query 2 has query 1's text" in capsys.readouterr().out


BEFORE_TALLIES, TALLIES = ("annotator", "0016_query_text_key"), ("annotator", "0017_query_tallies")


@pytest.mark.django_db(transaction=True)
def test_the_labels_already_stored_are_counted(back_to_latest):
    """The dashboard's tallies (annotator 0017) start from the labels and judgments already there."""
    old = migrate([BEFORE_TALLIES])
    Query, Label, Judgment = (old.get_model("annotator", name) for name in ("Query", "Label", "Judgment"))
    three_images(old)
    User = old.get_model("auth", "User")
    skimming = Query.objects.create(id=7, text="Black Skimmer performing skimming")
    Query.objects.create(id=8, text="a heron with a fish")  # never labeled: no tally row, read as zeros
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    for image_id, value in ((1, "relevant"), (2, "undecided"), (3, "unsure")):
        Label.objects.create(query=skimming, image_id=image_id, value=value, decided_by="single")
    for image_id, annotator, value in ((1, ann, "relevant"), (2, ann, "relevant"), (2, bob, "not_relevant")):
        Judgment.objects.create(query=skimming, image_id=image_id, annotator=annotator, value=value, source="click")
    Judgment.objects.create(query=skimming, image_id=3, annotator=None, value="unsure", source="import")

    new = migrate([TALLIES])
    QueryTally, QueryAnnotator = new.get_model("annotator", "QueryTally"), new.get_model("annotator", "QueryAnnotator")
    tally = QueryTally.objects.get(query_id=7)
    assert (tally.labeled, tally.relevant, tally.not_relevant, tally.unsure, tally.undecided) == (3, 1, 0, 1, 1)
    assert tally.last_activity == Label.objects.latest("updated_at").updated_at
    assert not QueryTally.objects.filter(query_id=8).exists()
    assert sorted(QueryAnnotator.objects.values_list("query_id", "annotator__username", "judgments")) == [
        (7, "ann", 2),
        (7, "bob", 1),
    ]


BEFORE_BLIND_VOTES, BLIND_VOTES = ("annotator", "0022_fresh_looks"), ("annotator", "0023_blind_votes")


@pytest.mark.django_db(transaction=True)
def test_samples_drawn_before_keep_what_their_judges_saw(back_to_latest):
    """Issue 63's migration: an image that had its judgments was open to everyone under the old rule, so it is opened
    (nothing seen before becomes hidden); on one still waiting, its present judgments become the blind votes."""
    old = migrate([BEFORE_BLIND_VOTES])
    Query, Judgment, OverlapImage = (old.get_model("annotator", name) for name in ("Query", "Judgment", "OverlapImage"))
    three_images(old)
    User = old.get_model("auth", "User")
    query = Query.objects.create(id=7, text="Black Skimmer performing skimming", judgments_wanted=2)
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    for image_id in (1, 2):
        OverlapImage.objects.create(query=query, image_id=image_id)
    for image_id, annotator, value in ((1, ann, "relevant"), (1, bob, "not_relevant"), (2, ann, "relevant")):
        Judgment.objects.create(query=query, image_id=image_id, annotator=annotator, value=value, source="click")

    new = migrate([BLIND_VOTES])
    OverlapImage, BlindVote = new.get_model("annotator", "OverlapImage"), new.get_model("annotator", "BlindVote")
    opened = dict(OverlapImage.objects.values_list("image_id", "opened_at"))
    assert opened[1] is not None and opened[2] is None  # image 1 had its two judgments: everyone saw it
    assert list(BlindVote.objects.values_list("image_id", "annotator__username", "value")) == [(2, "ann", "relevant")]


BEFORE_ONE_CHECK = ("annotator", "0025_help_texts_name_the_completeness_room")
CHECKS_BEFORE = Path(__file__).parent / "fixtures" / "checks_before_0026.json"


def load_rows(old, rows) -> None:
    """Rows as `manage.py dumpdata` wrote them, into the models of the state `old` (loaddata would use today's)."""
    loaded = set()
    with transaction.atomic():  # foreign keys are checked at the commit, so the rows' order does not matter
        for row in rows:
            model = old.get_model(row["model"])
            values = {model._meta.pk.attname: model._meta.pk.to_python(row["pk"])}
            for name, value in row["fields"].items():
                field = model._meta.get_field(name)
                if not field.many_to_many:
                    values[field.attname] = field.to_python(value)
            model.objects.create(**values)
            loaded.add(model)
    with connection.cursor() as cursor:  # the rows came with their ids: the sequences go on after them
        for sql in connection.ops.sequence_reset_sql(no_style(), list(loaded)):
            cursor.execute(sql)


# Report fields the API gained after the answers were recorded, with what a check drawn before them says.
ADDED_SINCE = {
    "decided_early": None,  # annotator 0027: a check decided before every pair was looked at
    "first_stage": 0,  # annotator 0028: a query's check in two stages (a check drawn before it has one)
    "decided_by_first_stage": None,
}


@pytest.mark.django_db(transaction=True)
def test_checks_drawn_before_one_check_model_keep_their_claims_and_reports(back_to_latest):
    """Issue 65's migration to one check model, on the rows a team left at annotator 0025 through the API
    (tests/fixtures/make_checks_before.py): a query's certified check, one still open half-labeled, one with second
    judgments off, and a decided benchmark check over two queries. After it every claim, report and frame reads as
    the API answered before, field for field, to staff and to an annotator who judged the samples."""
    before = json.loads(CHECKS_BEFORE.read_text())
    old = migrate([BEFORE_ONE_CHECK])
    load_rows(old, before["rows"])

    migrate(latest())

    from django.contrib.auth.models import User

    from tests.annotator.claims_api import api_for

    users = {"admin": User.objects.get(username="boss"), "ann": User.objects.get(username="ann")}
    for asked, answered in before["answers"].items():
        who, path = asked.split(" ", 1)
        now = api_for(users[who]).get(path).json()
        if isinstance(now, dict):  # a report: the fields added since, as a check drawn before them reads them
            for name, value in ADDED_SINCE.items():
                assert name not in answered and now.pop(name, value) == value, (asked, name)
        assert now == answered, asked

    from annotator.models import CheckImage, CheckStratum, CompletenessCheck

    rows = Counter(row["model"] for row in before["rows"])
    assert Counter(CompletenessCheck.objects.values_list("claim", flat=True)) == {
        "query": rows["annotator.completenesscheck"],
        "benchmark": rows["annotator.benchmarkcheck"],
    }
    assert CheckStratum.objects.count() == rows["annotator.completenesscheck"] + rows["annotator.benchmarkquery"]
    assert CheckImage.objects.count() == rows["annotator.checkimage"] + rows["annotator.benchmarkimage"]
    # The checks go on: the first query's next check is its second, in the frame its first froze.
    again = api_for(users["admin"]).post(
        "/api/queries/1/completeness/", {"target_recall": 0.5, "confidence": 0.9}, format="json"
    )
    assert again.status_code == 201, again.content
    assert again.json()["check"] == 2 and again.json()["frame"]["size"] == 40


@pytest.mark.django_db(transaction=True)
def test_migrating_back_before_one_check_model_gives_every_row_back(back_to_latest):
    """A rollback of the upgrade: forward over the team's rows, then back to 0025, and every check, frame and sampled
    image is the row it was (a query's check under a new id, nothing else moved)."""
    before = json.loads(CHECKS_BEFORE.read_text())
    old = migrate([BEFORE_ONE_CHECK])
    load_rows(old, before["rows"])
    migrate(latest())

    back = migrate([BEFORE_ONE_CHECK])

    def rows_of(name, without=("id",)):
        model = back.get_model("annotator", name)
        names = [f.attname for f in model._meta.concrete_fields if f.attname not in without]
        return sorted((tuple(_plain(getattr(row, n)) for n in names) for row in model.objects.all()), key=repr)

    def rows_given(name, without=("id",)):
        model = back.get_model("annotator", name)
        fields = {f.name: f for f in model._meta.concrete_fields if f.attname not in without}
        pk = model._meta.pk.name
        label = f"annotator.{name.lower()}"
        given = [{**row["fields"], pk: row["pk"]} for row in before["rows"] if row["model"] == label]
        return sorted((tuple(_plain(f.to_python(row[n])) for n, f in fields.items()) for row in given), key=repr)

    for name in ("BenchmarkCheck", "BenchmarkQuery", "BenchmarkImage"):  # the same rows, ids and all
        assert rows_of(name, without=()) == rows_given(name, without=()), name
    assert rows_of("CompletenessCheck") == rows_given("CompletenessCheck")
    # A query check's images, by their check's query and ordinal (the check's id is new).
    Image = back.get_model("annotator", "CheckImage")
    now = sorted(
        Image.objects.values_list("completeness_check__query_id", "completeness_check__ordinal", "image_id", "position")
    )
    checks = {row["pk"]: row["fields"] for row in before["rows"] if row["model"] == "annotator.completenesscheck"}
    sampled = [row["fields"] for row in before["rows"] if row["model"] == "annotator.checkimage"]
    given = sorted(
        (checks[f["completeness_check"]]["query"], checks[f["completeness_check"]]["ordinal"])
        + (f["image"], f["position"])
        for f in sampled
    )
    assert now == given and len(given) > 100


def _plain(value):
    """A field's value as comparable: bytes for a binary field (PostgreSQL gives a memoryview)."""
    return bytes(value) if isinstance(value, memoryview) else value
