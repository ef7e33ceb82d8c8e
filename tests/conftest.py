import json
from pathlib import Path

import pytest
from django.apps import apps

SHARED_INQUIRE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "inquire"


@pytest.fixture
def inquire_dir() -> Path:
    """The released INQUIRE files in ../shared (never copied into the project)."""
    if not (SHARED_INQUIRE / "inquire_queries_val.csv").exists():
        pytest.skip(f"the released INQUIRE files are not at {SHARED_INQUIRE} (../shared is absent)")
    return SHARED_INQUIRE


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


@pytest.fixture
def write_json(tmp_path):
    def write(document, name="train.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(document))
        return path

    return write


def database_snapshot() -> dict[str, list[tuple]]:
    """Every row of every Quire model, to assert that a failed operation changed nothing."""
    snapshot = {}
    for model in apps.get_app_config("annotator").get_models():
        fields = [field.attname for field in model._meta.concrete_fields]
        snapshot[model.__name__] = list(model.objects.order_by("pk").values_list(*fields))
    return snapshot


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """The tiny open_clip model in local-dir format, written once per test run."""
    from search.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture
def tiny_settings(settings, tmp_path, tiny_model_dir):
    """Settings for a search test: the tiny model and a fresh data directory."""
    settings.QUIRE_DATA_DIR = tmp_path / "data"
    settings.QUIRE_CLIP_PRETRAINED = tiny_model_dir
    settings.QUIRE_EMBED_BATCH_SIZE = 4
    settings.QUIRE_EMBED_CHUNK_SIZE = 5
    return settings
