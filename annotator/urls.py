"""annotator's pages, room by room (the API's routes are in quire/api.py)."""

from django.urls import path

from annotator.web import exports as inquire
from annotator.web import home as views
from annotator.web import labeling, methods, progress, team
from annotator.web import map as maps
from annotator.web import releases as release_views

urlpatterns = [
    path("", views.home, name="home"),
    path("queries/<int:query_id>/", labeling.label_page, name="label"),
    path("queries/<int:query_id>/results", labeling.results_fragment, name="results"),
    path("queries/<int:query_id>/labels", labeling.save_label, name="save-label"),
    path("queries/<int:query_id>/submit", labeling.submit, name="submit"),
    path("queries/<int:query_id>/examples/", labeling.upload_example, name="upload-example"),
    path("queries/<int:query_id>/examples/<int:example_id>", labeling.example_file, name="example-file"),
    path("queries/<int:query_id>/examples/embedding", labeling.examples_embedding, name="examples-embedding"),
    path("queries/<int:query_id>/tracking", labeling.save_tracking, name="save-tracking"),
    path("queries/<int:query_id>/completeness/cost", progress.check_cost, name="check-cost"),
    path("queries/<int:query_id>/completeness/draw", progress.draw_check, name="draw-check"),
    path("queries/<int:query_id>/figures", progress.figures_fragment, name="query-figures"),
    path("queries/<int:query_id>/rerank", methods.start_rerank, name="start-rerank"),
    path("queries/<int:query_id>/rerank-status", methods.rerank_status, name="rerank-status"),
    path("queries/<int:query_id>/drawings/<int:drawing_id>", methods.drawing_file, name="drawing-file"),
    path("queries/<int:query_id>/adjudicate", team.adjudicate, name="adjudicate"),
    path("dashboard/", progress.dashboard, name="dashboard"),
    path("dashboard/agreement/", team.agreement_page, name="agreement"),
    path("dashboard/team/", team.team_report, name="team-report"),
    path("dashboard/benchmark/draw", progress.draw_benchmark, name="draw-benchmark"),
    path("dashboard/map/", maps.collection_map, name="collection-map"),
    path("dashboard/map/points", maps.collection_map_points, name="collection-map-points"),
    path("dashboard/<int:query_id>/", progress.dashboard_query, name="dashboard-query"),
    path("exports/", inquire.download_export_choice, name="download-export-choice"),
    path("releases/", release_views.releases_page, name="releases"),
    path("releases/<str:name>/<str:file_name>", release_views.release_file, name="release-file"),
    path("exports/<str:name>", inquire.download_export, name="download-export"),
]
