from django.urls import path

from . import labeling_views, team_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("queries/<int:query_id>/", labeling_views.label_page, name="label"),
    path("queries/<int:query_id>/results", labeling_views.results_fragment, name="results"),
    path("queries/<int:query_id>/labels", labeling_views.save_label, name="save-label"),
    path("queries/<int:query_id>/submit", labeling_views.submit, name="submit"),
    path("queries/<int:query_id>/examples/", labeling_views.upload_example, name="upload-example"),
    path("queries/<int:query_id>/examples/<int:example_id>", labeling_views.example_file, name="example-file"),
    path("queries/<int:query_id>/examples/embedding", labeling_views.examples_embedding, name="examples-embedding"),
    path("queries/<int:query_id>/estimate", labeling_views.estimate_fragment, name="query-estimate"),
    path("queries/<int:query_id>/figures", labeling_views.figures_fragment, name="query-figures"),
    path("queries/<int:query_id>/rerank", labeling_views.start_rerank, name="start-rerank"),
    path("queries/<int:query_id>/rerank-status", labeling_views.rerank_status, name="rerank-status"),
    path("queries/<int:query_id>/drawings/<int:drawing_id>", labeling_views.drawing_file, name="drawing-file"),
    path("queries/<int:query_id>/tracking", labeling_views.save_tracking, name="save-tracking"),
    path("queries/<int:query_id>/adjudicate", team_views.adjudicate, name="adjudicate"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/agreement/", team_views.agreement_page, name="agreement"),
    path("dashboard/<int:query_id>/", views.dashboard_query, name="dashboard-query"),
    path("exports/", views.download_export_choice, name="download-export-choice"),
    path("exports/<str:name>", views.download_export, name="download-export"),
]
