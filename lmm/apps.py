from django.apps import AppConfig


class LmmConfig(AppConfig):
    name = "lmm"
    verbose_name = "Vision-language models"
    default_auto_field = "django.db.models.BigAutoField"
