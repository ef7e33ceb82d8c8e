"""Findings 1 and 2 of the security audit: no script and no arbitrary file through image serving."""

import pytest
from django.urls import reverse

from catalog.importers import InputError, import_folder, import_inat
from catalog.models import Image, ImageRoot
from search import jobs
from search.models import EmbeddingFailure
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db

SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'


@pytest.fixture
def ann(client, labeling):
    client.force_login(labeling["annotator"])
    return client


def test_an_svg_or_html_file_is_never_served(ann, labeling):
    root = ImageRoot.objects.get()
    for image_id, name, content in ((7001, "evil.svg", SVG), (7002, "evil.html", b"<script>x</script>")):
        (labeling["images"] / name).write_bytes(content)
        Image.objects.create(id=image_id, root=root, file_name=name)
        for size in ("file", "thumb"):
            assert ann.get(reverse("image-file", args=[image_id, size])).status_code == 404


def test_a_script_named_like_a_jpeg_is_not_served(ann, labeling):
    (labeling["images"] / "evil.jpg").write_bytes(SVG)
    Image.objects.create(id=7003, root=ImageRoot.objects.get(), file_name="evil.jpg")
    assert ann.get(reverse("image-file", args=[7003, "file"])).status_code == 404


def test_images_go_out_with_their_true_type_sandboxed(ann, labeling):
    from PIL import Image as PILImage

    PILImage.new("RGB", (8, 8), "red").save(labeling["images"] / "really-a-png.jpg", "PNG")
    Image.objects.create(id=7004, root=ImageRoot.objects.get(), file_name="really-a-png.jpg")
    response = ann.get(reverse("image-file", args=[7004, "file"]))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["Content-Security-Policy"].startswith("sandbox")
    assert response["X-Content-Type-Options"] == "nosniff"


def test_imports_refuse_files_that_are_not_raster_images(write_json, tmp_path):
    document = inat_document(images=3)
    document["images"][1]["file_name"] = "train/x/evil.svg"
    before = database_snapshot()
    with pytest.raises(InputError, match=r"images\[1\]: file_name 'train/x/evil.svg' is not a JPEG, PNG, WebP or GIF"):
        import_inat(write_json(document))
    assert database_snapshot() == before


def test_staff_cannot_add_or_change_images_roots(admin_client):
    ImageRoot.objects.create(path="/data/inat24")
    assert admin_client.get("/admin/catalog/imageroot/add/").status_code == 403
    assert admin_client.post("/admin/catalog/imageroot/add/", {"path": "/"}).status_code == 403
    root = ImageRoot.objects.get()
    assert admin_client.post(f"/admin/catalog/imageroot/{root.pk}/change/", {"path": "/"}).status_code == 403
    assert list(ImageRoot.objects.values_list("path", flat=True)) == ["/data/inat24"]


def test_roots_must_lie_in_the_allowed_folders(ann, labeling, settings, tmp_path, write_json):
    settings.QUIRE_IMAGE_ROOTS = [str(tmp_path / "allowed")]
    (tmp_path / "allowed").mkdir()
    assert ann.get(reverse("image-file", args=[7, "file"])).status_code == 404  # its root is elsewhere
    with pytest.raises(InputError, match="not inside QUIRE_IMAGE_ROOTS"):
        import_folder(tmp_path)
    with pytest.raises(InputError, match="not inside QUIRE_IMAGE_ROOTS"):
        import_inat(write_json(inat_document(images=2)), images_root=tmp_path)
    settings.QUIRE_IMAGE_ROOTS = [str(labeling["images"])]
    assert ann.get(reverse("image-file", args=[7, "file"])).status_code == 200


def test_the_embedder_never_opens_a_file_outside_its_root(labeling, tiny_settings):
    root = ImageRoot.objects.get()
    Image.objects.create(id=9001, root=root, file_name="../../../../etc/passwd")
    Image.objects.create(id=9002, root=root, file_name="../../../../etc/hostname.jpg")
    job = jobs.start_embedding()
    for chunk_id in job.chunks.values_list("id", flat=True):
        jobs.run_chunk(chunk_id)
    reasons = dict(EmbeddingFailure.objects.values_list("image_id", "reason"))
    assert "not a JPEG, PNG, WebP or GIF file" in reasons[9001]
    assert "leaves its images root" in reasons[9002]
