"""Example images uploaded on the labeling page: only real raster images are kept, under a name of Quire's
making, and served as the image type they are."""

import io

import pytest
from PIL import Image as PILImage

from annotator.models import QueryExample

pytestmark = pytest.mark.django_db


def test_an_uploaded_example_is_kept_and_served_as_the_image_it_is(client, labeling, tmp_path):
    """A valid PNG named like a web page is stored as .png and served as image/png, never as HTML."""
    query = labeling["query"]
    client.force_login(labeling["annotator"])
    data = io.BytesIO()
    PILImage.new("RGB", (40, 30), (10, 120, 200)).save(data, "PNG")
    upload = io.BytesIO(data.getvalue())
    upload.name = "photo.html"
    response = client.post(f"/queries/{query.pk}/examples/", {"image": upload, "note": "<script>x</script>"})
    assert response.status_code == 302
    example = QueryExample.objects.get(query=query)
    assert example.upload.name.endswith(".png") and "html" not in example.upload.name
    served = client.get(f"/queries/{query.pk}/examples/{example.pk}")
    assert served["Content-Type"] == "image/png"
    assert "sandbox" in served["Content-Security-Policy"] and served["X-Content-Type-Options"] == "nosniff"
    with PILImage.open(io.BytesIO(b"".join(served.streaming_content))) as kept:
        assert kept.size == (40, 30) and kept.getpixel((0, 0)) == (10, 120, 200)
    page = client.get(f"/queries/{query.pk}/").content.decode()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_a_file_that_is_not_an_image_is_refused_and_nothing_is_kept(client, labeling):
    client.force_login(labeling["annotator"])
    fake = io.BytesIO(b"<html><script>alert(1)</script></html>")
    fake.name = "photo.jpg"
    response = client.post(f"/queries/{labeling['query'].pk}/examples/", {"image": fake})
    assert response.status_code == 400 and b"not an image Quire can read" in response.content
    assert not QueryExample.objects.exists()


def _png(width, height, mode="RGB") -> io.BytesIO:
    data = io.BytesIO()
    PILImage.new(mode, (width, height)).save(data, "PNG", optimize=True)
    data.seek(0)
    data.name = "photo.png"
    return data


def test_a_tiny_file_that_decodes_to_gigabytes_is_refused_before_decoding(client, labeling):
    """Issue 27: a 97 KB PNG of 9999 x 10000 (under the 100-megapixel check) took a worker to 1.4 GB."""
    client.force_login(labeling["annotator"])
    bomb = _png(9999, 10000)
    assert len(bomb.getvalue()) < 500_000
    response = client.post(f"/queries/{labeling['query'].pk}/examples/", {"image": bomb})
    assert response.status_code == 400
    assert "9,999 x 10,000 pixels, too large to open safely" in response.content.decode()
    assert not QueryExample.objects.exists()


def test_bytes_riding_along_in_an_upload_are_not_kept(client, labeling):
    """A JPEG with a web page appended after its end: the file kept is the picture encoded again."""
    client.force_login(labeling["annotator"])
    data = io.BytesIO()
    PILImage.new("RGB", (32, 32), (200, 40, 40)).save(data, "JPEG")
    upload = io.BytesIO(data.getvalue() + b"<html><script>alert(document.cookie)</script></html>")
    upload.name = "photo.jpg"
    assert client.post(f"/queries/{labeling['query'].pk}/examples/", {"image": upload}).status_code == 302
    stored = QueryExample.objects.get().upload.read()
    assert b"<script>" not in stored and stored.startswith(b"\xff\xd8")


def test_a_jpeg_comment_does_not_survive_the_re_encoding(client, labeling):
    """Pillow wrote the comment back from the decoded picture's info (issue 37)."""
    client.force_login(labeling["annotator"])
    data = io.BytesIO()
    PILImage.new("RGB", (32, 32), (40, 200, 40)).save(data, "JPEG", comment=b"<script>alert(1)</script>")
    assert b"<script>" in data.getvalue()
    upload = io.BytesIO(data.getvalue())
    upload.name = "photo.jpg"
    assert client.post(f"/queries/{labeling['query'].pk}/examples/", {"image": upload}).status_code == 302
    stored = QueryExample.objects.get().upload.read()
    assert b"<script>" not in stored and stored.startswith(b"\xff\xd8")
    assert "comment" not in PILImage.open(io.BytesIO(stored)).info


def test_the_admin_checks_example_uploads_as_the_page_does(client, labeling):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotator.web.labeling_forms import ExampleInlineForm

    svg = SimpleUploadedFile("x.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
                             content_type="image/svg+xml")  # fmt: skip
    form = ExampleInlineForm({"query": labeling["query"].pk, "relevant": "on"}, {"upload": svg})
    assert not form.is_valid() and "not an image Quire can read" in str(form.errors["upload"])
    png = SimpleUploadedFile("x.html", _png(20, 20).getvalue(), content_type="text/html")
    form = ExampleInlineForm({"query": labeling["query"].pk, "relevant": "on"}, {"upload": png})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["upload"].name == "example.png"
