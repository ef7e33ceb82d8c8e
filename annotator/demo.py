"""The offline demo: a generated collection with a real taxonomy, demo queries and users.

Everything is made here, with no network: small JPEGs drawn with Pillow (a
coloured animal-ish shape on a habitat-coloured ground, so that images of one
species look alike), an iNat-format metadata file for them, and the same
import path a real iNat24 import takes.
"""

import datetime
import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.utils import get_random_secret_key
from django.db import transaction
from PIL import Image as PILImage
from PIL import ImageDraw

from annotator.models import Query
from annotator.team.overlap import draw_sample
from catalog.facade import import_inat
from common.files import write_atomically
from search.facade import ClipSpec

# common name, kingdom, phylum, class, order, family, genus, specific epithet, supercategory
SPECIES = [
    ("Black Skimmer", "Animalia", "Chordata", "Aves", "Charadriiformes", "Laridae", "Rynchops", "niger", "Birds"),
    ("Atlantic Puffin", "Animalia", "Chordata", "Aves", "Charadriiformes", "Alcidae", "Fratercula", "arctica", "Birds"),
    (
        "American Flamingo",
        "Animalia",
        "Chordata",
        "Aves",
        "Phoenicopteriformes",
        "Phoenicopteridae",
        "Phoenicopterus",
        "ruber",
        "Birds",
    ),
    (
        "Greater Flamingo",
        "Animalia",
        "Chordata",
        "Aves",
        "Phoenicopteriformes",
        "Phoenicopteridae",
        "Phoenicopterus",
        "roseus",
        "Birds",
    ),
    (
        "Chilean Flamingo",
        "Animalia",
        "Chordata",
        "Aves",
        "Phoenicopteriformes",
        "Phoenicopteridae",
        "Phoenicopterus",
        "chilensis",
        "Birds",
    ),
    ("Eastern Meadowlark", "Animalia", "Chordata", "Aves", "Passeriformes", "Icteridae", "Sturnella", "magna", "Birds"),
    (
        "Western Meadowlark",
        "Animalia",
        "Chordata",
        "Aves",
        "Passeriformes",
        "Icteridae",
        "Sturnella",
        "neglecta",
        "Birds",
    ),
    (
        "Bald Eagle",
        "Animalia",
        "Chordata",
        "Aves",
        "Accipitriformes",
        "Accipitridae",
        "Haliaeetus",
        "leucocephalus",
        "Birds",
    ),
    ("Banded Mongoose", "Animalia", "Chordata", "Mammalia", "Carnivora", "Herpestidae", "Mungos", "mungo", "Mammals"),
    ("Red Fox", "Animalia", "Chordata", "Mammalia", "Carnivora", "Canidae", "Vulpes", "vulpes", "Mammals"),
    (
        "Common Bottlenose Dolphin",
        "Animalia",
        "Chordata",
        "Mammalia",
        "Artiodactyla",
        "Delphinidae",
        "Tursiops",
        "truncatus",
        "Mammals",
    ),
    (
        "Eastern Gray Squirrel",
        "Animalia",
        "Chordata",
        "Mammalia",
        "Rodentia",
        "Sciuridae",
        "Sciurus",
        "carolinensis",
        "Mammals",
    ),
    (
        "Green Sea Turtle",
        "Animalia",
        "Chordata",
        "Testudines",
        "Testudines",
        "Cheloniidae",
        "Chelonia",
        "mydas",
        "Reptiles",
    ),
    (
        "Desert Tortoise",
        "Animalia",
        "Chordata",
        "Testudines",
        "Testudines",
        "Testudinidae",
        "Gopherus",
        "agassizii",
        "Reptiles",
    ),
    (
        "American Bullfrog",
        "Animalia",
        "Chordata",
        "Amphibia",
        "Anura",
        "Ranidae",
        "Lithobates",
        "catesbeianus",
        "Amphibians",
    ),
    ("Monarch", "Animalia", "Arthropoda", "Insecta", "Lepidoptera", "Nymphalidae", "Danaus", "plexippus", "Insects"),
    ("Common Green Darner", "Animalia", "Arthropoda", "Insecta", "Odonata", "Aeshnidae", "Anax", "junius", "Insects"),
    ("Western Honey Bee", "Animalia", "Arthropoda", "Insecta", "Hymenoptera", "Apidae", "Apis", "mellifera", "Insects"),
    (
        "Seven-spotted Lady Beetle",
        "Animalia",
        "Arthropoda",
        "Insecta",
        "Coleoptera",
        "Coccinellidae",
        "Coccinella",
        "septempunctata",
        "Insects",
    ),
    (
        "Orchard Orbweaver",
        "Animalia",
        "Arthropoda",
        "Arachnida",
        "Araneae",
        "Tetragnathidae",
        "Leucauge",
        "venusta",
        "Arachnids",
    ),
    (
        "Fly Agaric",
        "Fungi",
        "Basidiomycota",
        "Agaricomycetes",
        "Agaricales",
        "Amanitaceae",
        "Amanita",
        "muscaria",
        "Fungi",
    ),
    (
        "Common Sunflower",
        "Plantae",
        "Tracheophyta",
        "Magnoliopsida",
        "Asterales",
        "Asteraceae",
        "Helianthus",
        "annuus",
        "Plants",
    ),
    (
        "Saguaro",
        "Plantae",
        "Tracheophyta",
        "Magnoliopsida",
        "Caryophyllales",
        "Cactaceae",
        "Carnegiea",
        "gigantea",
        "Plants",
    ),
    (
        "Banana Slug",
        "Animalia",
        "Mollusca",
        "Gastropoda",
        "Stylommatophora",
        "Ariolimacidae",
        "Ariolimax",
        "columbianus",
        "Mollusks",
    ),
]

QUERIES = [
    ("Black Skimmer performing skimming", "Behavior", "Feeding and Hydration", "Birds"),
    ("flamingo standing on one leg", "Behavior", "Other Behaviors", "Birds"),
    ("puffins carrying food", "Behavior", "Feeding and Hydration", "Birds"),
    ("A mongoose standing upright alert", "Behavior", "Defensive and Survival Behaviors", "Mammals"),
    ("A meadowlark vocalizing", "Behavior", "Cooperative and Social Behaviors", "Birds"),
    ("Tortoise with a radio tag on its shell", "Appearance", "Tracking and Identification", "Reptiles"),
    ("Fly agaric with a white ring on its stem", "Appearance", "Health and Disease", "Fungi"),
    ("monarch caterpillar eating milkweed", "Behavior", "Feeding and Hydration", "Insects"),
]

LICENSES = [
    (1, "CC BY 4.0", "http://creativecommons.org/licenses/by/4.0/"),
    (2, "CC BY-NC 4.0", "http://creativecommons.org/licenses/by-nc/4.0/"),
    (3, "CC0 1.0", "http://creativecommons.org/publicdomain/zero/1.0/"),
]

DEMO_ADMIN = ("admin", "quire-demo")
DEMO_ANNOTATOR = ("annotator", "quire-demo")


@dataclass
class DemoResult:
    images: int
    taxa: int
    queries: int
    admin_created: bool


def build_demo(data_dir: Path, *, images: int = 3000, seed: int = 7) -> DemoResult:
    """Create (or reuse) the demo collection under `data_dir`/demo, the demo queries and users."""
    demo_dir = Path(data_dir) / "demo"
    images_root = demo_dir / "images"
    metadata = demo_dir / "demo_inat.json"
    if not metadata.exists():
        write_collection(images_root, metadata, images, seed)
    result = import_inat(metadata, images_root)
    with transaction.atomic():
        for text, supercategory, category, iconic_group in QUERIES:
            # filter().exists(), not get_or_create: a query added twice by hand must not stop the demo.
            if not Query.objects.filter(text=text).exists():
                Query.objects.create(
                    text=text, supercategory=supercategory, category=category, iconic_group=iconic_group
                )
        admin_created = _ensure_user(*DEMO_ADMIN, staff=True)
        _ensure_user(*DEMO_ANNOTATOR, staff=False)
    return DemoResult(images=result.images, taxa=result.taxa, queries=len(QUERIES), admin_created=admin_created)


def remember_settings(data_dir: Path, spec: ClipSpec | None = None) -> Path:
    """Record in the data directory's settings file (read by quire/settings.py at start-up, after the
    environment) what every later command run against the demo needs: DEBUG on, a secret key made
    once, and `spec`, the model, when given. Anything else the file holds is kept. Returns the file."""
    path = Path(data_dir) / "settings.json"
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        values = {}
    values.setdefault("SECRET_KEY", get_random_secret_key())
    values["DEBUG"] = "1"
    if spec is not None:
        values.update({"QUIRE_CLIP_MODEL": spec.model, "QUIRE_CLIP_PRETRAINED": spec.pretrained})
    write_atomically(path, json.dumps(values, indent=2) + "\n")
    return path


def _ensure_user(username: str, password: str, *, staff: bool) -> bool:
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        return False
    if staff:
        User.objects.create_superuser(username, f"{username}@example.org", password)
    else:
        User.objects.create_user(username, f"{username}@example.org", password)
    return True


@dataclass(frozen=True)
class TeamMember:
    username: str
    role: str  # what they do, as the demo prints it
    permissions: tuple[str, ...]  # "app.codename"
    staff: bool = False


# A labeling team to try (`./dev demo --team`), each with the permissions the role needs and no more: an annotator
# needs none at all.
TEAM_PASSWORD = "quire-demo"
TEAM = (
    TeamMember("annotator", "annotator: labels; blind to the other annotator's votes on the overlap sample", ()),
    TeamMember("annotator2", "annotator: the second, blind look at the overlap sample", ()),
    TeamMember(
        "adjudicator", "adjudicator: decides where the two disagree (a query's page, then adjudication)",
        ("annotator.adjudicate_labels",),
    ),
    TeamMember(
        "lead",
        "staff: the dashboard, completeness checks, releases, the evaluation app; sees every vote (adjudicates)",
        # adjudicate_labels too: staff who do not adjudicate are blind judges, and every label is sealed to them
        # while an overlap sample waits (annotator/labels/visibility.py).
        ("annotator.view_label", "annotator.change_query", "annotator.export_labels", "annotator.view_release",
         "annotator.add_release", "annotator.adjudicate_labels", "evaluation.evaluate_runs",
         # Assigning annotators and keeping a query's examples, on the query's admin page (its inlines); the
         # annotator field's search needs to see the users.
         "annotator.view_assignment", "annotator.add_assignment", "annotator.change_assignment",
         "annotator.delete_assignment", "annotator.view_queryexample", "annotator.change_queryexample",
         "annotator.delete_queryexample", "auth.view_user"),
        staff=True,
    ),
)  # fmt: skip
OVERLAP_TOP = 30  # the demo team's overlap sample: every image down to this rank of each query's text ranking


def build_team() -> int:
    """The demo team's users (made once; an existing user is given its role's permissions again) and an overlap
    sample over the top OVERLAP_TOP of each query (search must work: the demo's index is built). Returns the number
    of images added to overlap samples."""
    User = get_user_model()
    with transaction.atomic():
        for member in TEAM:
            user = User.objects.filter(username=member.username).first()
            if user is None:
                user = User.objects.create_user(member.username, f"{member.username}@example.org", TEAM_PASSWORD)
            if member.staff and not user.is_staff:
                User.objects.filter(pk=user.pk).update(is_staff=True)
            for permission in member.permissions:
                app_label, codename = permission.split(".")
                user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return sum(draw_sample(query, top=OVERLAP_TOP, wanted=2) for query in Query.objects.order_by("id"))


def write_collection(images_root: Path, metadata: Path, count: int, seed: int) -> None:
    """Draw `count` images of the demo's species under `images_root` and write their iNat-format metadata."""
    rng = random.Random(seed)
    categories = []
    for index, (common, kingdom, phylum, klass, order, family, genus, epithet, supercategory) in enumerate(SPECIES):
        dir_name = f"{index:05d}_{kingdom}_{phylum}_{klass}_{order}_{family}_{genus}_{epithet}"
        categories.append(
            {
                "id": index,
                "name": f"{genus} {epithet}",
                "common_name": common,
                "supercategory": supercategory,
                "kingdom": kingdom,
                "phylum": phylum,
                "class": klass,
                "order": order,
                "family": family,
                "genus": genus,
                "specific_epithet": epithet,
                "image_dir_name": dir_name,
            }
        )
    looks = [_species_look(rng) for _ in SPECIES]
    images, annotations = [], []
    start = datetime.date(2018, 1, 1)
    for image_id in range(1, count + 1):
        category = rng.randrange(len(categories))
        file_name = f"train/{categories[category]['image_dir_name']}/{uuid.UUID(int=rng.getrandbits(128))}.jpg"
        width, height = rng.choice([(320, 240), (240, 320), (320, 320)])
        path = images_root / file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        _draw(rng, looks[category], width, height).save(path, quality=80)
        images.append(
            {
                "id": image_id,
                "width": width,
                "height": height,
                "file_name": file_name,
                "license": rng.choice(LICENSES)[0],
                "rights_holder": rng.choice(["A. Observer", "B. Naturalist", "C. Birder", "D. Botanist"]),
                "date": (start + datetime.timedelta(days=rng.randrange(6 * 365))).isoformat() + " 00:00:00+00:00",
                "latitude": round(rng.uniform(-40, 60), 5),
                "longitude": round(rng.uniform(-120, 150), 5),
                "location_uncertainty": rng.choice([None, 5, 20, 100]),
            }
        )
        annotations.append({"id": image_id, "image_id": image_id, "category_id": category})
    metadata.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(  # the metadata appears only once every image is written
        metadata,
        json.dumps(
            {
                "info": {"description": "Quire demo collection (generated)"},
                "images": images,
                "categories": categories,
                "annotations": annotations,
                "licenses": [{"id": i, "name": n, "url": u} for i, n, u in LICENSES],
            }
        ),
    )


def _species_look(rng: random.Random) -> dict[str, Any]:
    return {
        "ground": tuple(rng.randrange(40, 220) for _ in range(3)),
        "body": tuple(rng.randrange(256) for _ in range(3)),
        "shape": rng.choice(["ellipse", "rectangle", "polygon"]),
    }


def _draw(rng: random.Random, look: dict[str, Any], width: int, height: int) -> PILImage.Image:
    ground = tuple(max(0, min(255, c + rng.randint(-25, 25))) for c in look["ground"])
    picture = PILImage.new("RGB", (width, height), ground)
    draw = ImageDraw.Draw(picture)
    size = rng.uniform(0.25, 0.6)
    w, h = int(width * size), int(height * size)
    x, y = rng.randrange(0, width - w), rng.randrange(0, height - h)
    body = tuple(max(0, min(255, c + rng.randint(-20, 20))) for c in look["body"])
    if look["shape"] == "ellipse":
        draw.ellipse([x, y, x + w, y + h], fill=body)
    elif look["shape"] == "rectangle":
        draw.rounded_rectangle([x, y, x + w, y + h], radius=min(w, h) // 4, fill=body)
    else:
        draw.polygon([(x + w // 2, y), (x + w, y + h), (x, y + h)], fill=body)
    return picture
