from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from annotator.urls import router as api_router

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/", include(api_router.urls)),
    path("evaluation/", include("evaluation.urls")),
    path("", include("catalog.urls")),
    path("", include("annotator.urls")),
]
