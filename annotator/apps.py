from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # A completeness check is decided by the write that settles its last image (annotator.completeness.checks).
        from annotator.completeness.checks import decide_if_complete  # (as above)
        from annotator.labels.writes import judgments_settled  # models load only once the registry is ready

        judgments_settled.connect(decide_if_complete, dispatch_uid="quire.decide_checks")
