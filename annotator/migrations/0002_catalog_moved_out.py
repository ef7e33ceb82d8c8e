"""Taxon, ImageRoot and Image now belong to the catalog app (see catalog/migrations/0001).

State only: the labels' foreign keys already point at the same tables, so the database
is not touched.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0001_initial"),
        ("catalog", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="label",
                    name="image",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="labels", to="catalog.image"
                    ),
                ),
                migrations.AlterField(
                    model_name="labelevent",
                    name="image",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="label_events", to="catalog.image"
                    ),
                ),
                migrations.DeleteModel(name="Image"),
                migrations.DeleteModel(name="ImageRoot"),
                migrations.DeleteModel(name="Taxon"),
            ],
            database_operations=[],
        ),
    ]
