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
    assert served["Content-Type"] == "image/png" and b"".join(served.streaming_content) == data.getvalue()
    page = client.get(f"/queries/{query.pk}/").content.decode()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_a_file_that_is_not_an_image_is_refused_and_nothing_is_kept(client, labeling):
    client.force_login(labeling["annotator"])
    fake = io.BytesIO(b"<html><script>alert(1)</script></html>")
    fake.name = "photo.jpg"
    response = client.post(f"/queries/{labeling['query'].pk}/examples/", {"image": fake})
    assert response.status_code == 400 and b"not an image Quire can read" in response.content
    assert not QueryExample.objects.exists()
