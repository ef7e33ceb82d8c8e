"""The catalog models move here from the annotator app, tables and data untouched.

State only: the tables annotator_taxon, annotator_imageroot and annotator_image were
made by annotator's 0001 and stay where they are (each model keeps its db_table), so an
existing database migrates in place with no data copied. annotator's 0002 then drops the
models from its own state and points its foreign keys here. The content types move too,
so permissions granted on taxa and images and the admin's change log keep working.
"""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ["taxon", "imageroot", "image"]


def move_content_types(from_app, to_app):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        for model in MOVED:
            if not ContentType.objects.filter(app_label=to_app, model=model).exists():
                ContentType.objects.filter(app_label=from_app, model=model).update(app_label=to_app)

    return move


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotator", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Taxon",
                    fields=[
                        ("id", models.IntegerField(primary_key=True, serialize=False)),
                        ("scientific_name", models.CharField(db_index=True, max_length=255)),
                        ("common_name", models.CharField(blank=True, db_index=True, max_length=255)),
                        ("kingdom", models.CharField(blank=True, max_length=100)),
                        ("phylum", models.CharField(blank=True, max_length=100)),
                        ("class_name", models.CharField(blank=True, max_length=100, verbose_name="class")),
                        ("order", models.CharField(blank=True, max_length=100)),
                        ("family", models.CharField(blank=True, max_length=100)),
                        ("genus", models.CharField(blank=True, max_length=100)),
                        ("specific_epithet", models.CharField(blank=True, max_length=100)),
                        ("image_dir_name", models.CharField(blank=True, db_index=True, max_length=255)),
                        ("supercategory", models.CharField(blank=True, max_length=100)),
                    ],
                    options={"db_table": "annotator_taxon", "verbose_name_plural": "taxa", "ordering": ["id"]},
                ),
                migrations.CreateModel(
                    name="ImageRoot",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("path", models.CharField(max_length=1024, unique=True)),
                    ],
                    options={"db_table": "annotator_imageroot"},
                ),
                migrations.CreateModel(
                    name="Image",
                    fields=[
                        ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                        ("file_name", models.CharField(help_text="Path relative to the images root.", max_length=1024)),
                        ("width", models.PositiveIntegerField(blank=True, null=True)),
                        ("height", models.PositiveIntegerField(blank=True, null=True)),
                        ("latitude", models.FloatField(blank=True, null=True)),
                        ("longitude", models.FloatField(blank=True, null=True)),
                        ("location_uncertainty", models.FloatField(blank=True, help_text="Metres.", null=True)),
                        ("observed_on", models.DateField(blank=True, null=True)),
                        ("license", models.CharField(blank=True, max_length=255)),
                        ("rights_holder", models.CharField(blank=True, max_length=255)),
                        (
                            "root",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                to="catalog.imageroot",
                            ),
                        ),
                        (
                            "taxon",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="images",
                                to="catalog.taxon",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotator_image",
                        "ordering": ["id"],
                        "indexes": [models.Index(fields=["file_name"], name="image_file_name")],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types("annotator", "catalog"), move_content_types("catalog", "annotator")),
    ]
