"""The project's URL conf with one planted route whose GET writes: the walk of test_gets_only_read must find it."""

from django.http import HttpResponse
from django.urls import path

from annotator.models import Query
from quire.urls import urlpatterns as project


def writes_on_get(request):
    Query.objects.filter(pk=1).update(notes="written by a GET")
    return HttpResponse("ok")


urlpatterns = [*project, path("planted/writes-on-get", writes_on_get)]
