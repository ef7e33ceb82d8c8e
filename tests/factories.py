"""Test data builders shared by the test modules (fixtures stay in conftest.py files)."""

import numpy as np
from django.apps import apps
from PIL import Image as PILImage

from catalog.models import Image, ImageRoot, Taxon


def inat_document(images: int = 5) -> dict:
    """A small iNat-format document: 3 taxa, `images` images, the last one without an annotation."""
    categories = [
        {
            "id": 10 + index,
            "name": f"{genus} {epithet}",
            "common_name": common,
            "supercategory": "Birds",
            "kingdom": "Animalia",
            "phylum": "Chordata",
            "class": "Aves",
            "order": "Charadriiformes",
            "family": family,
            "genus": genus,
            "specific_epithet": epithet,
            "image_dir_name": f"{index:05d}_Animalia_Chordata_Aves_Charadriiformes_{family}_{genus}_{epithet}",
        }
        for index, (common, family, genus, epithet) in enumerate(
            [
                ("Black Skimmer", "Laridae", "Rynchops", "niger"),
                ("Atlantic Puffin", "Alcidae", "Fratercula", "arctica"),
                ("Laughing Gull", "Laridae", "Leucophaeus", "atricilla"),
            ]
        )
    ]
    document = {
        "info": {"year": 2024},
        "images": [],
        "categories": categories,
        "annotations": [],
        "licenses": [{"id": 1, "name": "CC BY 4.0", "url": "https://example.org"}, {"id": 2, "name": "CC0", "url": ""}],
    }
    for index in range(images):
        image_id = 1000 + index
        category = categories[index % 3]
        document["images"].append(
            {
                "id": image_id,
                "width": 500,
                "height": 375 + index,
                "file_name": f"train/{category['image_dir_name']}/{image_id}.jpg",
                "license": 1 + index % 2,
                "rights_holder": f"Observer {index}",
                "date": f"2021-04-{1 + index % 28:02d} 13:45:00+00:00",
                "latitude": 40.5 + index,
                "longitude": -73.25 - index,
                "location_uncertainty": 10.0 * index if index % 2 else None,
            }
        )
        if index < images - 1:
            document["annotations"].append({"id": index, "image_id": image_id, "category_id": category["id"]})
    return document


def database_snapshot() -> dict[str, list[tuple]]:
    """Every row of every catalog and annotator model, to assert that a failed operation changed nothing."""
    snapshot = {}
    for model in [*apps.get_app_config("catalog").get_models(), *apps.get_app_config("annotator").get_models()]:
        fields = [field.attname for field in model._meta.concrete_fields]
        snapshot[model.__name__] = list(model.objects.order_by("pk").values_list(*fields))
    return snapshot


TAXA = [  # id, scientific name, common name, genus, family
    (10, "Rynchops niger", "Black Skimmer", "Rynchops", "Laridae"),
    (11, "Fratercula arctica", "Atlantic Puffin", "Fratercula", "Alcidae"),
    (12, "Leucophaeus atricilla", "Laughing Gull", "Leucophaeus", "Laridae"),
]


def make_collection(folder, count: int, *, first_id: int = 1, broken: dict | None = None) -> list[int]:
    """`count` real JPEGs over three taxa (images of a taxon share a colour), in the database and on disk.

    `broken` maps an image id to "missing" (no file) or "corrupt" (bytes that are no image).
    """
    broken = broken or {}
    root, _ = ImageRoot.objects.get_or_create(path=str(folder))
    for taxon_id, scientific, common, genus, family in TAXA:
        Taxon.objects.get_or_create(
            id=taxon_id,
            defaults=dict(
                scientific_name=scientific,
                common_name=common,
                genus=genus,
                family=family,
                class_name="Aves",
                kingdom="Animalia",
            ),
        )
    rng = np.random.default_rng(first_id)
    ids = list(range(first_id, first_id + count))
    for image_id in ids:
        taxon = TAXA[image_id % 3][0]
        path = folder / f"{taxon}/{image_id}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        if broken.get(image_id) == "corrupt":
            path.write_bytes(b"not a JPEG at all")
        elif broken.get(image_id) != "missing":
            base = np.array([(200, 40, 40), (40, 200, 40), (40, 40, 200)][image_id % 3], dtype=np.int16)
            pixels = np.clip(base + rng.integers(-40, 40, size=(48, 64, 3)), 0, 255).astype(np.uint8)
            PILImage.fromarray(pixels).save(path, quality=90)
        Image.objects.create(
            id=image_id, root=root, file_name=f"{taxon}/{image_id}.jpg", taxon_id=taxon, width=64, height=48
        )
    return ids


def signed_in(client, write_json, *, images: int, query_id: int, username: str = "ann"):
    """A collection of `images` (inat_document), query `query_id`, and a user signed in on `client` (the page's
    test client) and on a new API client; returns (the user, the API client)."""
    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    from annotator.models import Query
    from catalog.importers import import_inat

    import_inat(write_json(inat_document(images=images)))
    Query.objects.create(id=query_id, text="Black Skimmer performing skimming")
    user = User.objects.create_user(username, password=f"pw-{username}-1")
    client.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    return user, api
