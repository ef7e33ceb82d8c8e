"""The image collection: taxa, the folders images live in, and the images.

Sizes to design for: iNat24 has 4.8M images and ~10k taxa.

These models were born in the annotator app and moved here without moving their
tables: each keeps its original `db_table`, so an existing database migrated in
place (catalog/migrations/0001_initial.py) with no data copied.
"""

from django.db import models


class Taxon(models.Model):
    """An iNat21/iNat24 category. The primary key is the category id of the iNat file."""

    id = models.IntegerField(primary_key=True)
    scientific_name = models.CharField(max_length=255, db_index=True)
    common_name = models.CharField(max_length=255, blank=True, db_index=True)
    kingdom = models.CharField(max_length=100, blank=True)
    phylum = models.CharField(max_length=100, blank=True)
    class_name = models.CharField("class", max_length=100, blank=True)
    order = models.CharField(max_length=100, blank=True)
    family = models.CharField(max_length=100, blank=True)
    genus = models.CharField(max_length=100, blank=True)
    specific_epithet = models.CharField(max_length=100, blank=True)
    image_dir_name = models.CharField(max_length=255, blank=True, db_index=True)
    supercategory = models.CharField(max_length=100, blank=True)

    class Meta:
        db_table = "annotator_taxon"
        verbose_name_plural = "taxa"
        ordering = ["id"]

    def __str__(self) -> str:
        if self.common_name:
            return f"{self.common_name} ({self.scientific_name})"
        return self.scientific_name


class ImageRoot(models.Model):
    """A folder on disk that image file names are relative to.

    Kept apart from Image so that 5M rows do not each repeat a long path, and so
    that moving a collection means changing one row.
    """

    path = models.CharField(max_length=1024, unique=True)

    class Meta:
        db_table = "annotator_imageroot"

    def __str__(self) -> str:
        return self.path


class Image(models.Model):
    """One image of the collection. The primary key is the collection's own id (the iNat24 id)."""

    id = models.BigIntegerField(primary_key=True)
    root = models.ForeignKey(ImageRoot, null=True, blank=True, on_delete=models.PROTECT)
    file_name = models.CharField(max_length=1024, help_text="Path relative to the images root.")
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    taxon = models.ForeignKey(Taxon, null=True, blank=True, on_delete=models.PROTECT, related_name="images")
    latitude = models.FloatField(null=True, blank=True)
    longitude = models.FloatField(null=True, blank=True)
    location_uncertainty = models.FloatField(null=True, blank=True, help_text="Metres.")
    observed_on = models.DateField(null=True, blank=True)
    license = models.CharField(max_length=255, blank=True)
    rights_holder = models.CharField(max_length=255, blank=True)

    class Meta:
        db_table = "annotator_image"
        ordering = ["id"]
        indexes = [models.Index(fields=["file_name"], name="image_file_name")]

    def __str__(self) -> str:
        return f"image {self.id}"


# Rows per INSERT, ids per IN (...) list, rows per server-side cursor fetch. Django splits
# a bulk insert further where a database allows fewer parameters (SQLite); 5,000 keeps the
# round trips few without holding a large statement in memory.
ROWS_PER_STATEMENT = 5000
