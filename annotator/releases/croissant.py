"""A release's croissant.json, built with MLCommons' own library (mlcroissant's Python API, not hand-written
JSON-LD) so that `mlcroissant validate` and its record generation read it as written.

FileObjects for every data file, with their sha256; RecordSets for the queries, the qrels and the images, read from
the Parquet files; and the Responsible-AI fields (Croissant RAI 1.0) filled from the project where it knows them
(the annotation platform, judgments per item, the labeling protocol and its stopping rule, the agreement figures,
the completeness claims and their frames, intended uses, limitations). Where it cannot know them (biases, personal
information, social impact, maintenance) the field says "TO DO (authors)", and the card lists them.
"""

import json
from pathlib import Path
from typing import Any

from annotator.releases.files import sha256_of

TODO = "TO DO (authors): "
TODO_FIELDS = {
    "data_biases": "which taxa, places and photographers the collection over- or under-represents",
    "personal_sensitive_information": "whether images show people, faces, homes or licence plates, and how they "
    "were handled",
    "data_social_impact": "what the benchmark could be misused for, and by whom",
    "data_release_maintenance_plan": "who answers issues, and how errata and new releases are announced",
}
# (file, record set, [(column, Croissant type, description)])
_INTEGER, _TEXT = "https://schema.org/Integer", "https://schema.org/Text"
RECORD_SETS: list[tuple[str, str, list[tuple[str, str, str]]]] = [
    ("queries.parquet", "queries", [
        ("query_id", _INTEGER, "the query's id (INQUIRE's query_id)"),
        ("query_text", _TEXT, "the natural-language query"),
        ("supercategory", _TEXT, "INQUIRE's supercategory"),
        ("category", _TEXT, "INQUIRE's category"),
        ("iconic_group", _TEXT, "the iconic group of the taxa it is about"),
        ("split", _TEXT, "val, test or other"),
    ]),
    ("qrels.parquet", "qrels", [
        ("query_id", _INTEGER, "the query"),
        ("image_id", _INTEGER, "the image (the collection's id)"),
        ("relevance", _INTEGER, "1 relevant; 0 judged not relevant, unsure or undecided"),
        ("label", _TEXT, "the final label: relevant, not_relevant, unsure or undecided"),
        ("image_path", _TEXT, "the image's path in the collection"),
        ("license", _TEXT, "the image's license, where the collection records it"),
        ("rights_holder", _TEXT, "the image's rights holder, where the collection records it"),
    ]),
    ("images.parquet", "images", [
        ("image_id", _INTEGER, "the image (the collection's id)"),
        ("file_name", _TEXT, "its path in the collection"),
        ("taxon", _TEXT, "the scientific name of its taxon"),
        ("license", _TEXT, "its license, where the collection records it"),
        ("rights_holder", _TEXT, "its rights holder, where the collection records it"),
    ]),
]  # fmt: skip
FORMATS = {".csv": "text/csv", ".json": "application/json", ".parquet": "application/x-parquet", ".txt": "text/plain"}


def write_croissant(folder: Path, name: str, facts: dict[str, Any]) -> None:
    """croissant.json into `folder`, over the data files already there. `facts`: what the project knows (facts())."""
    import mlcroissant as mlc  # rdflib and networkx: loaded when a release is made, not by every command

    files = [
        mlc.FileObject(
            id=path.name,
            name=path.name,
            content_url=path.name,
            encoding_formats=[FORMATS[path.suffix]],
            sha256=sha256_of(path),
        )  # fmt: skip
        for path in sorted(folder.iterdir())
        if path.suffix in FORMATS and path.name != "croissant.json"
    ]
    record_sets = [
        mlc.RecordSet(
            id=record_set,
            name=record_set,
            fields=[
                mlc.Field(
                    id=f"{record_set}/{column}",
                    name=column,
                    description=description,
                    data_types=[kind],
                    source=mlc.Source(file_object=file_name, extract=mlc.Extract(column=column)),
                )  # fmt: skip
                for column, kind, description in columns
            ],
        )  # fmt: skip
        for file_name, record_set, columns in RECORD_SETS
    ]
    metadata = mlc.Metadata(
        name=name,
        description=facts["description"],
        version=facts["version"],
        date_published=facts["date_published"],
        license=[facts["license"]],
        url=facts["url"],
        cite_as=facts["cite_as"],
        keywords=["image retrieval", "benchmark", "natural world", "INQUIRE", "qrels"],
        distribution=files,
        record_sets=record_sets,
        data_collection=facts["data_collection"],
        data_annotation_protocol=facts["annotation_protocol"],
        data_annotation_platform=["Quire (an annotation tool modeled on the one that built INQUIRE)"],
        data_annotation_analysis=facts["annotation_analysis"],
        annotations_per_item=facts["annotations_per_item"],
        machine_annotation_tools=facts["machine_tools"],
        data_use_cases=facts["use_cases"],
        data_limitations=facts["limitations"],
        **{field: _todo(field) for field in TODO_FIELDS},
    )
    document = metadata.to_json()
    (folder / "croissant.json").write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")


def _todo(field: str) -> Any:
    text = TODO + TODO_FIELDS[field]
    return text if field in ("data_social_impact", "data_release_maintenance_plan") else [text]
