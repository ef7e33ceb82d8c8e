import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from catalog.importers import InputError, import_folder, import_inat
from catalog.models import Image, ImageRoot
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path, write_json):
    import_inat(write_json(inat_document(images=2)))  # taxa, and images with ids 1000..1001
    dir_name = inat_document()["categories"][0]["image_dir_name"]
    root = tmp_path / "photos"
    for relative, size, kind in [
        (f"{dir_name}/a.jpg", (40, 30), "JPEG"),
        ("Fratercula arctica/b.PNG", (20, 25), "PNG"),
        ("Leucophaeus_atricilla/c.jpeg", (10, 10), "JPEG"),
        ("Unknown species/d.jpg", (12, 12), "JPEG"),
        ("loose.png", (8, 8), "PNG"),
    ]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        PILImage.new("RGB", size, "green").save(root / relative, kind)
    (root / "notes.txt").write_text("not an image")
    return root


def test_every_image_is_added_with_size_and_taxon_from_its_folder(folder):
    result = import_folder(folder)

    assert (result.found, result.created, result.with_taxon) == (5, 5, 3)
    images = {image.file_name: image for image in Image.objects.filter(root__path=str(folder))}
    assert set(images) == {
        f"{inat_document()['categories'][0]['image_dir_name']}/a.jpg",
        "Fratercula arctica/b.PNG",
        "Leucophaeus_atricilla/c.jpeg",
        "Unknown species/d.jpg",
        "loose.png",
    }
    by_name = {name.split("/")[-1]: image for name, image in images.items()}
    assert (by_name["a.jpg"].taxon_id, by_name["b.PNG"].taxon_id, by_name["c.jpeg"].taxon_id) == (10, 11, 12)
    assert by_name["d.jpg"].taxon_id is None and by_name["loose.png"].taxon_id is None
    assert (by_name["a.jpg"].width, by_name["a.jpg"].height) == (40, 30)
    assert min(image.id for image in images.values()) == 1002  # after the largest id already there


def test_importing_the_folder_again_changes_nothing(folder):
    import_folder(folder)
    before = database_snapshot()

    assert import_folder(folder).created == 0
    assert database_snapshot() == before


def test_new_files_are_added_on_a_second_run(folder):
    import_folder(folder)
    PILImage.new("RGB", (5, 5)).save(folder / "later.jpg")
    assert import_folder(folder).created == 1
    assert ImageRoot.objects.count() == 1


def test_an_unreadable_image_stops_the_import_unless_skipped(folder, capsys):
    (folder / "broken.jpg").write_bytes(b"\xff\xd8 this is not really a jpeg")
    before = database_snapshot()

    with pytest.raises(
        InputError, match=r"broken.jpg: not a readable JPEG, PNG, WebP or GIF image .*--skip-unreadable"
    ):
        import_folder(folder)
    assert database_snapshot() == before

    result = import_folder(folder, skip_unreadable=True)
    assert (result.created, result.skipped) == (5, ["broken.jpg"])


def test_command_lists_skipped_images_and_refuses_a_missing_folder(folder, tmp_path, capsys):
    (folder / "broken.jpg").write_bytes(b"nope")
    call_command("import_folder", str(folder), "--skip-unreadable")
    captured = capsys.readouterr()
    assert "skipped unreadable image: broken.jpg" in captured.err
    assert "6 images found, 5 added" in captured.out
    with pytest.raises(CommandError, match="no such folder"):
        call_command("import_folder", str(tmp_path / "nowhere"))
