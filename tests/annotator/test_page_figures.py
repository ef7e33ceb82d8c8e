"""How pages print figures and times (annotator/templatetags/figures.py)."""

from datetime import UTC, datetime

from django.template import Context, Template

from annotator.templatetags.figures import figure, moment, span


def test_a_time_is_printed_in_the_sites_zone_to_the_minute_and_none_as_a_dash(settings):
    settings.TIME_ZONE = "Europe/Paris"
    assert moment(datetime(2026, 11, 26, 23, 30, 59, tzinfo=UTC)) == "2026-11-27 00:30"
    assert moment(None) == "–"
    rendered = Template("{% load figures %}{{ when|moment }}").render(
        Context({"when": datetime(2026, 7, 1, 8, 5, tzinfo=UTC)})
    )
    assert rendered == "2026-07-01 10:05"  # summer time


def test_agreement_figures_are_rounded_only_on_the_page():
    assert figure(0.81249) == "0.812" and figure(None) == "–"
    assert span([0.8123, 0.9444]) == "0.812 to 0.944" and span(None) == ""
