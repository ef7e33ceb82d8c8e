import csv

from django.apps import AppConfig

# A field of a real iNat or INQUIRE file is at most a sentence or a path; a 1 MB field is a
# wrong file. Set once, at start-up, for every CSV reader of the project.
CSV_FIELD_SIZE_LIMIT = 1024 * 1024


class CatalogConfig(AppConfig):
    """The image collection: taxa, images and their files. Depends on no other Quire app."""

    name = "catalog"
    verbose_name = "Collection"

    def ready(self) -> None:
        csv.field_size_limit(CSV_FIELD_SIZE_LIMIT)
