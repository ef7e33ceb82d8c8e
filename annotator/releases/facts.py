"""What the project knows about a release, in words, for its croissant.json and its dataset card: read from the
release's own files (so that both describe exactly what was frozen) and the configured ranking model."""

import csv
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotator.completeness.claims import query_claims
from annotator.inquire.exporters import AGREEMENT_FILE, COMPLETENESS_FILE
from annotator.team import costs
from search.facade import configured_spec

TODO_LICENSE = "TO DO (authors): the release's license (each image keeps its own: images.parquet)"


def facts(folder: Path, name: str, version: str, team: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the card and croissant.json say of the release in `folder`; `team`: annotator.team.costs.report of its
    queries (its cost and the team's quality), read in the release's snapshot."""
    labels = _count_labels(folder / "inquire_labels.csv")
    per_image = Counter((row[0], row[1]) for row in _rows(folder / "inquire_judgments.csv"))
    queries = len(_rows(folder / "inquire_queries.csv"))
    agreement = json.loads((folder / AGREEMENT_FILE).read_text(encoding="utf-8")).get("overall") or {}
    completeness = json.loads((folder / COMPLETENESS_FILE).read_text(encoding="utf-8"))
    claims = query_claims(completeness)
    pooled = completeness.get("benchmark") if isinstance(completeness, dict) else None
    return {
        "name": name,
        "version": version,
        "date_published": datetime.now(UTC),
        "license": TODO_LICENSE,
        "url": None,
        "cite_as": None,
        "description": (
            f"{queries} natural-language queries of expert image retrieval, each with the images judged for it: "
            f"{sum(labels.values())} final labels, {labels.get('relevant', 0)} relevant. Labeled with Quire, "
            "down rankings of the collection by a CLIP model and rankings that learn from the labels."
        ),
        "data_collection": (
            "The images are a fixed collection of natural-world photographs (iNat24-shaped: each with its taxon, "
            "license and rights holder where known). Experts wrote the queries; annotators judged images shown "
            "ranked by similarity to the query text and by rankings learned from their labels."
        ),
        "annotation_protocol": _protocol(claims),
        "annotation_analysis": _analysis(agreement, claims, pooled)
        + ([costs.benchmark_sentence(team)] if team is not None else []),
        "annotations_per_item": _per_item(per_image),
        "machine_tools": [
            f"{ranking_model()} ranks the images shown; models only order and pre-label, a person's judgment makes "
            "every label"
        ],
        "use_cases": [
            "Evaluating text-to-image retrieval and reranking (AP@k, nDCG@k, MRR) against the qrels.",
            "Not for training or tuning the systems evaluated on its test split.",
        ],
        "limitations": [
            "An image nobody judged is not in the qrels: metrics count it as not relevant.",
            "Completeness claims hold over their frames only (the images judged and the top of the rankings, or the "
            "taxa named): positives outside the frames are not bounded.",
            "Undecided labels (split votes with no adjudication) are graded not relevant.",
        ],
        "claims": claims,
        "benchmark_claim": pooled["claim"] if pooled else None,
        "agreement": agreement,
        "labels": dict(labels),
        "team": team["overall"] if team is not None else None,
    }


def _per_item(per_image: Counter[tuple[str, str]]) -> str:
    """How many judgments each judged image has, as the files hold them (not a range the files do not show)."""
    if not per_image:
        return "No judgment recorded."
    least, most = min(per_image.values()), max(per_image.values())
    doubled = sum(1 for n in per_image.values() if n >= 2)
    counts = f"{most} judgment{'s' if most > 1 else ''}" if least == most else f"{least} to {most} judgments"
    return (
        f"{counts} per image; {doubled} of {len(per_image)} judged images ({doubled / len(per_image):.0%}) have two "
        "or more (blind overlap samples, completeness checks)."
    )


def ranking_model() -> str:
    """The model that ranked the images, as a release may publish it: never a path of the machine that made it, and
    saying so where its weights were random (the offline demo's stand-in)."""
    spec = configured_spec()
    if spec.pretrained.startswith("local-dir:"):
        named = f"a local open_clip model (folder {Path(spec.pretrained.removeprefix('local-dir:')).name})"
    else:
        named = f"{spec.model} ({spec.pretrained or 'no pretrained weights'})"
    return named + (" with random weights, so its rankings meant nothing (a demo)" if spec.random_weights else "")


def _protocol(claims: list[dict[str, Any]]) -> list[str]:
    return [
        "Annotators label with the keyboard: relevant, not relevant or unsure, each judgment kept with its author, "
        "time and lead time; the final label follows the query's rule (majority or unanimity), an adjudicator's "
        "decision overriding split votes.",
        "Blind overlap samples get a second annotator's judgment without seeing the first.",
        "Stopping: a completeness check draws a random sample of the query's frame (its images but the confirmed "
        "positives), every sampled image looked at twice, blind, and adjudicated where a look says relevant, and "
        "certifies recall >= a target with a stated confidence over the frame (hypergeometric test, Callaghan and "
        f"Müller-Hansen 2020); {_certified(claims)}. A benchmark check does the same over the union of many "
        "queries' frames and certifies their micro-recall.",
    ]


def _certified(claims: list[dict[str, Any]]) -> str:
    certified = [claim for claim in claims if claim["status"] == "certified"]
    return f"{len(certified)} of {len(claims)} queries carry a certified claim"


def _analysis(agreement: dict[str, Any], claims: list[dict[str, Any]], pooled: dict[str, Any] | None) -> list[str]:
    lines = [f"Benchmark completeness: {pooled['claim']}" if pooled else "Benchmark completeness: no benchmark check."]
    if agreement.get("items"):
        alpha = agreement.get("krippendorff_alpha")
        shown = "undefined" if alpha is None else f"{alpha:.3f}"
        lines.append(
            f"Agreement on {agreement['items']} double-judged images: Krippendorff's alpha {shown}, percent "
            f"agreement {agreement.get('percent_agreement') or 0:.3f} (agreement.json has each query's)."
        )
    else:
        lines.append("No image was judged twice: agreement cannot be measured.")
    for claim in claims:
        if claim["status"] == "certified":
            lines.append(f"Query {claim['query_id']}: {claim.get('claim') or _older(claim)}")
    return lines


def _older(claim: dict[str, Any]) -> str:
    """A certified claim as a completeness.json written before the claims' sentences words it."""
    frame = claim["frame"]
    over = " ".join(str(part) for part in (frame["kind"], frame.get("depth")) if part)
    return (
        f"recall >= {claim['target_recall']:.0%} with {claim['confidence']:.0%} confidence over {over} "
        f"({frame['size']} images)"
    )


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))[1:]


def _count_labels(path: Path) -> Counter[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return Counter(row["label"] for row in csv.DictReader(handle))
