"""The embedded mode's beat (common/beat.py): beat's tasks sent by the server process itself, at their intervals,
so that no page's GET has to (issue 65: the releases page sent its reaper and a scoring's page its job)."""

import pytest

from common import background, beat


def test_each_entry_is_sent_at_once_then_at_its_interval(settings, monkeypatch):
    settings.CELERY_BEAT_SCHEDULE = {
        "often": {"task": "t.often", "schedule": 10.0},
        "rarely": {"task": "t.rarely", "schedule": 60.0, "args": (7,)},
    }
    monkeypatch.setattr(beat, "EMBEDDED_SCHEDULE", {"resume": {"task": "t.resume", "schedule": 30.0}})
    sent = []
    due: dict[str, float] = {}
    record = lambda task, *args: sent.append((task, *args))  # noqa: E731
    assert beat.tick(due, 100.0, record) == ["often", "rarely", "resume"]
    assert sent == [("t.often",), ("t.rarely", 7), ("t.resume",)]
    assert beat.tick(due, 105.0, record) == []
    assert beat.tick(due, 110.0, record) == ["often"]
    assert beat.tick(due, 131.0, record) == ["often", "resume"]
    assert beat.tick(due, 140.0, record) == []
    assert beat.tick(due, 160.0, record) == ["often", "rarely"]


def test_a_refused_send_is_logged_and_the_others_still_go(settings, monkeypatch, caplog):
    settings.CELERY_BEAT_SCHEDULE = {
        "down": {"task": "t.down", "schedule": 5.0},
        "up": {"task": "t.up", "schedule": 5.0},
    }
    monkeypatch.setattr(beat, "EMBEDDED_SCHEDULE", {})

    def submit(task, *args):
        if task == "t.down":
            raise background.QueueUnavailable("no")

    due: dict[str, float] = {}
    assert beat.tick(due, 0.0, submit) == ["up"]
    assert "embedded beat: t.down could not be sent" in caplog.text
    assert due == {"down": 5.0, "up": 5.0}  # tried again at its next time


def test_the_real_schedule_names_tasks_that_exist():
    for entry in beat.schedule().values():
        assert background.task_named(entry["task"]) is not None


@pytest.mark.parametrize(
    ("eager", "argv", "environment", "serving"),
    [
        (True, ["manage.py", "runserver", "--noreload"], {}, True),
        (True, ["manage.py", "runserver"], {"RUN_MAIN": "true"}, True),
        (True, ["manage.py", "runserver"], {}, False),  # the autoreloader's watcher serves nothing
        (True, ["manage.py", "migrate"], {}, False),
        (True, ["gunicorn"], {"QUIRE_WARM_UP_AT_START": "1"}, True),
        (False, ["manage.py", "runserver", "--noreload"], {}, False),  # a broker: Celery's beat does it
    ],
)
def test_only_a_server_of_the_embedded_mode_runs_it(settings, monkeypatch, eager, argv, environment, serving):
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    monkeypatch.setattr("sys.argv", argv)
    for name in ("RUN_MAIN", "QUIRE_WARM_UP_AT_START"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert beat.serving() is serving
