"""The image catalog (taxa, images), the queries, and the labels annotators give.

Sizes to design for: iNat24 has 4.8M images and ~10k taxa; INQUIRE has 250
queries and ~150k labels, and a labeling project may reach millions.
"""
from django.conf import settings
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
        verbose_name_plural = "taxa"
        ordering = ["id"]

    def __str__(self):
        if self.common_name:
            return f"{self.common_name} ({self.scientific_name})"
        return self.scientific_name


class ImageRoot(models.Model):
    """A folder on disk that image file names are relative to.

    Kept apart from Image so that 5M rows do not each repeat a long path, and so
    that moving a collection means changing one row.
    """

    path = models.CharField(max_length=1024, unique=True)

    def __str__(self):
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
        ordering = ["id"]
        indexes = [models.Index(fields=["file_name"], name="image_file_name")]

    def __str__(self):
        return f"image {self.id}"


class Query(models.Model):
    """A natural-language retrieval query. The primary key is INQUIRE's query_id."""

    class Split(models.TextChoices):
        VAL = "val", "val"
        TEST = "test", "test"
        OTHER = "other", "other"

    class Status(models.TextChoices):
        OPEN = "open", "open"
        IN_PROGRESS = "in_progress", "in progress"
        DONE = "done", "done"

    class FullyLabeled(models.TextChoices):
        YES = "yes", "yes"
        NO = "no", "no"
        UNKNOWN = "unknown", "unknown"

    text = models.TextField()
    supercategory = models.CharField(max_length=100, blank=True)
    category = models.CharField(max_length=255, blank=True)
    iconic_group = models.CharField(max_length=100, blank=True)
    split = models.CharField(max_length=10, choices=Split.choices, default=Split.OTHER)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    fully_labeled = models.CharField(max_length=10, choices=FullyLabeled.choices, default=FullyLabeled.UNKNOWN)
    notes = models.TextField(blank=True)
    # The unnamed first column of the released INQUIRE CSVs (a pandas index),
    # kept so that an export reproduces the released files row for row.
    csv_index = models.IntegerField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["id"]

    def __str__(self):
        return f"{self.id}: {self.text}"


class LabelValue(models.TextChoices):
    RELEVANT = "relevant", "Relevant"
    NOT_RELEVANT = "not_relevant", "Not relevant"
    UNSURE = "unsure", "Unsure"


class LabelSource(models.TextChoices):
    CLICK = "click", "click"
    KEYBOARD = "keyboard", "keyboard"
    SUBMIT = "submit", "submit"
    IMPORT = "import", "import"
    API = "api", "api"


class Label(models.Model):
    """The current judgment of one image for one query. No row means not yet seen.

    Change labels through annotator.labels, which also writes the LabelEvent.
    """

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="labels")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="labels")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["query", "image"], name="label_one_per_query_image")]
        indexes = [
            # Per-query counts by value (dashboard) without touching the table.
            models.Index(fields=["query", "value"], name="label_query_value"),
            # Last activity per query.
            models.Index(fields=["query", "updated_at"], name="label_query_updated"),
        ]

    def __str__(self):
        return f"query {self.query_id} / image {self.image_id}: {self.value}"


class LabelEventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise TypeError("Label events are append-only; they cannot be updated.")

    def delete(self):
        raise TypeError("Label events are append-only; they cannot be deleted.")


class LabelEvent(models.Model):
    """Append-only history: one row per change of a label, never updated or deleted."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="label_events")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="label_events")
    old_value = models.CharField(max_length=16, choices=LabelValue.choices, blank=True)
    new_value = models.CharField(max_length=16, choices=LabelValue.choices, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    source = models.CharField(max_length=16, choices=LabelSource.choices)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = LabelEventQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["query", "image"], name="labelevent_query_image")]

    def __str__(self):
        return f"{self.old_value or '-'} -> {self.new_value or '-'} ({self.source})"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise TypeError("Label events are append-only; they cannot be changed once written.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("Label events are append-only; they cannot be deleted.")
