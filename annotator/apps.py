from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # A completeness check is decided by the write that settles its last image (annotator.progress.checks).
        from annotator.labels.writes import judgments_settled
        from annotator.progress.checks import decide_if_complete

        judgments_settled.connect(decide_if_complete, dispatch_uid="quire.decide_checks")
