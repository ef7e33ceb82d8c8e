"""The evaluation app's pages: upload and scoring, reports and their downloads, simulations."""

from django.urls import path

from . import views

app_name = "evaluation"
urlpatterns = [
    path("", views.index, name="index"),
    path("scorings/<int:scoring_id>/", views.scoring_status, name="scoring"),
    path("reports/<int:report_id>/", views.report, name="report"),
    path("reports/<int:report_id>/download.<str:kind>", views.download, name="download"),
    path("simulations/<int:simulation_id>/", views.simulation, name="simulation"),
    path("simulations/<int:simulation_id>/download.<str:kind>", views.simulation_download, name="simulation-download"),
]
