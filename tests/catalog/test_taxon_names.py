"""What a name that is not a taxon's gets told (catalog/taxa.py): the start of a name finds the taxa it begins, a
misspelling its closest names."""

import pytest

from catalog import taxa
from catalog.importers import import_inat
from catalog.models import Taxon
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def birds(write_json):
    import_inat(write_json(inat_document(images=3)))
    for n, (common, scientific) in enumerate(
        [("American Flamingo", "Phoenicopterus ruber"), ("Chilean Flamingo", "Phoenicopterus chilensis"),
         ("Greater Flamingo", "Phoenicopterus roseus"), ("Lesser Flamingo", "Phoeniconaias minor")]
    ):  # fmt: skip
        Taxon.objects.create(id=50 + n, scientific_name=scientific, common_name=common, genus=scientific.split()[0])


def test_the_start_of_a_name_suggests_the_taxa_it_begins(birds):
    with pytest.raises(taxa.UnknownTaxon) as refused:
        taxa.species_for("flam")
    said = str(refused.value)
    assert said.startswith("No taxon is called 'flam'. Did you mean 'American Flamingo', 'Chilean Flamingo', ")
    assert "(and 1 more: type more of the name)?" in said
    with pytest.raises(taxa.UnknownTaxon, match="Did you mean 'Rynchops', 'Rynchops niger'?"):
        taxa.species_for("rynch")


def test_a_misspelling_still_gets_its_closest_names(birds):
    with pytest.raises(taxa.UnknownTaxon, match="Did you mean 'Laridae'"):
        taxa.species_for("Laridea")
    with pytest.raises(taxa.UnknownTaxon, match=r"^No taxon is called 'zzzz'\.$"):
        taxa.species_for("zzzz")
