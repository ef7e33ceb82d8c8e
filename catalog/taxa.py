"""Taxon names, as annotators type them, to the species ids a search filters on.

A name may be a taxon id, a scientific or common name, or any rank above the
species (genus "Phoenicopterus", family "Laridae", class "Aves", ...): each
becomes the ids of every species under it. Matching ignores case.
"""

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q

from .models import ROWS_PER_STATEMENT, Taxon

RANKS = ("genus", "family", "order", "class_name", "phylum", "kingdom")


class UnknownTaxon(ValueError):
    """A name that matches no taxon; the text suggests close ones."""


def species_for(name: str) -> set[int]:
    """The ids of the species a name stands for; UnknownTaxon when there are none."""
    name = (name or "").strip()
    if not name:
        raise UnknownTaxon("A taxon name is empty.")
    if name.isascii() and name.isdigit():
        taxon_id = int(name)  # ids are 32-bit: a longer number names no taxon (and must not reach the database)
        ids = set(Taxon.objects.filter(pk=taxon_id).values_list("id", flat=True)) if taxon_id < 2**31 else set()
    else:
        match = Q(scientific_name__iexact=name) | Q(common_name__iexact=name)
        for rank in RANKS:
            match |= Q(**{f"{rank}__iexact": name})
        ids = set(Taxon.objects.filter(match).values_list("id", flat=True))
    if not ids:
        raise UnknownTaxon(f"No taxon is called {name!r}.{_suggestion(name)}")
    return ids


def species_for_all(names: Iterable[str]) -> set[int]:
    ids: set[int] = set()
    for name in names:
        ids |= species_for(name)
    return ids


def _known_names() -> set[str]:
    """Every scientific, common and rank name the collection's taxa carry."""
    known: set[str] = set()
    rows = Taxon.objects.values_list("scientific_name", "common_name", *RANKS)
    for fields in rows.iterator(chunk_size=ROWS_PER_STATEMENT):
        known.update(field for field in fields if field)
    return known


def _suggestion(name: str) -> str:
    lowered = {item.lower(): item for item in _known_names()}
    typed = name.lower()
    # The start of a name ("flam" for the flamingos) first: names one of whose words begins with it; then
    # misspellings, by difflib's similarity.
    begun = sorted(item for low, item in lowered.items() if any(word.startswith(typed) for word in low.split()))
    close = begun[:3] or [lowered[item] for item in difflib.get_close_matches(typed, lowered, n=3, cutoff=0.6)]
    more = f" (and {len(begun) - 3} more: type more of the name)" if len(begun) > 3 else ""
    return f" Did you mean {', '.join(repr(item) for item in close)}{more}?" if close else ""


@dataclass(frozen=True)
class Suggestion:
    value: str  # what the filter box submits: a species id, or a higher taxon's name
    label: str  # what the annotator reads


RANK_LABELS = {
    "genus": "genus",
    "family": "family",
    "order": "order",
    "class_name": "class",
    "phylum": "phylum",
    "kingdom": "kingdom",
}


def suggest(text: str, limit: int = 12) -> list[Suggestion]:
    """Taxa whose common or scientific name contains `text`, then higher ranks starting with it."""
    text = (text or "").strip()
    if len(text) < 2:
        return []
    species = Taxon.objects.filter(Q(common_name__icontains=text) | Q(scientific_name__icontains=text)).order_by(
        "scientific_name"
    )[:limit]
    found = [
        Suggestion(
            str(taxon.pk),
            f"{taxon.common_name} ({taxon.scientific_name})" if taxon.common_name else taxon.scientific_name,
        )
        for taxon in species
    ]
    for rank, label in RANK_LABELS.items():
        if len(found) >= limit:
            break
        names = (
            Taxon.objects.filter(**{f"{rank}__istartswith": text})
            .values_list(rank, flat=True)
            .distinct()
            .order_by(rank)
        )
        found += [Suggestion(name, f"{label} {name} (all species)") for name in names[: limit - len(found)]]
    return found[:limit]


def describe(value: str) -> str:
    """How a filter value reads on its chip."""
    if value.isascii() and value.isdigit() and int(value) < 2**31:
        taxon = Taxon.objects.filter(pk=int(value)).first()
        if taxon:
            return f"{taxon.common_name} ({taxon.scientific_name})" if taxon.common_name else taxon.scientific_name
    return value
