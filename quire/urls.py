"""The project's URLs: each app's pages, the API and its schema, the admin, sign-in and the health check."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from annotator.web import home as annotator_views
from quire.api import router as api_router

# The admin registers its models when the URLs load (SimpleAdminConfig in settings), not in every process
# Django starts: commands like evaluate then skip importing every app's admin (bench/eval_bench.py).
admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/token/", annotator_views.api_token, name="api-token"),
    # Log in and out and change a password; no emailed password reset (Quire sends no mail):
    # an admin sets a new password with `manage.py changepassword USER`.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("api/", include(api_router.urls)),
    path("evaluation/", include("evaluation.urls")),
    path("", include("catalog.urls")),
    path("", include("annotator.urls")),
]
