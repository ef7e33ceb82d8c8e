"""A release's README.md: a Hugging Face dataset card. Its YAML header is written by huggingface_hub's
DatasetCardData (license, task categories, and one config per Parquet file, which `datasets.load_dataset` reads);
its sections follow the card template, filled from the project (release_facts), with what only the authors can say
marked TO DO."""

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from annotator.releases.croissant import TODO, TODO_FIELDS

CONFIGS = ("qrels", "queries", "images", "judgments")  # qrels first: the default config


def write_card(folder: Path, facts: dict[str, Any], rows: dict[str, int]) -> None:
    from huggingface_hub import DatasetCardData  # the hub's client: loaded when a release is made

    header = DatasetCardData(
        pretty_name=facts["name"],
        license="other",
        license_name="to-be-decided",
        task_categories=["text-to-image"],
        tags=["image-retrieval", "benchmark", "qrels", "croissant", "natural-world"],
        configs=[
            {"config_name": name, "data_files": f"{name}.parquet", **({"default": True} if name == "qrels" else {})}
            for name in CONFIGS
        ],
    ).to_yaml()
    labels = facts["labels"]
    # Blocks are separated by a blank line; the lines of one table or one list are not (in GitHub's Markdown, which
    # the Hugging Face hub renders, a blank line ends a table).
    sections = [
        f"# {facts['name']}",
        facts["description"],
        "## Uses",
        _lines(f"- {use}" for use in facts["use_cases"]),
        "## Dataset structure",
        _lines(
            ["| file | rows | what |", "| --- | ---: | --- |"]
            + [f"| `{name}` | {rows.get(name, '')} | {what} |" for name, what in _FILES]
        ),
        "`croissant.json` describes the same files (Croissant 1.0 with its Responsible-AI fields); "
        "`sha256sum -c SHA256SUMS` checks every file.",
        "## Curation",
        facts["data_collection"],
        "## Annotations",
        _lines(
            [f"- {step}" for step in facts["annotation_protocol"]]
            + [
                f"- Judgments per image: {facts['annotations_per_item']}",
                f"- Final labels: {', '.join(f'{value} {n}' for value, n in sorted(labels.items())) or 'none'}.",
            ]
        ),
        "### Agreement and completeness",
        _lines(f"- {line}" for line in facts["annotation_analysis"]),
        "## Limitations",
        _lines(f"- {line}" for line in facts["limitations"]),
        "## To do before publishing (authors)",
        _lines(
            [f"- License: {facts['license'].removeprefix(TODO)}"]
            + [f"- {field.replace('_', ' ')}: {text}" for field, text in TODO_FIELDS.items()]
            + ["- Citation: how to cite this release."]
        ),
        "## Citation",
        "TO DO (authors).",
    ]
    (folder / "README.md").write_text(f"---\n{header}\n---\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


def _lines(lines: Iterable[str]) -> str:
    """One block of consecutive lines: a table or a list."""
    return "\n".join(lines)


_FILES = [
    ("qrels.parquet", "one row per final label: query, image, grade, label, path, license, rights holder"),
    ("queries.parquet", "the queries"),
    ("images.parquet", "the images labeled, with taxon, license and rights holder"),
    ("judgments.parquet", "every annotator's judgment"),
    ("qrels.txt", "TREC qrels (1 relevant, 0 otherwise)"),
    ("inquire_queries.csv", "INQUIRE's queries file"),
    ("inquire_annotations.csv", "INQUIRE's annotations file (relevant pairs)"),
    ("inquire_labels.csv", "every final label"),
    ("inquire_judgments.csv", "every judgment"),
    ("agreement.json", "agreement between annotators, per query and overall"),
    ("completeness.json", "each query's completeness claim"),
]


def as_html(card: str) -> str:
    """The card as the releases page shows it: CommonMark with its tables, raw HTML escaped (a query's text is
    written into the card as it was typed) and links only of the safe schemes (markdown-it's validateLink)."""
    if card.startswith("---\n") and (end := card.find("\n---\n", 4)) > 0:  # the YAML header, shown as it is
        card = f"```yaml\n{card[4:end]}\n```\n{card[end + 5 :]}"
    return str(MarkdownIt("commonmark", {"html": False}).enable("table").render(card))
