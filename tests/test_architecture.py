"""The house rules of the architecture guide, checked on the source:

- the one-way flow catalog <- search <- lmm <- annotator <- evaluation (lmm, vision-language models, knows
  images and model servers, not queries or labels);
- outside an app, only its door (`facade`) and its models are imported;
- common/, the plumbing every app shares, imports no app;
- no app imports the project package quire/ (which wires them together), and every task is sent by a name
  some tasks module registers;
- inside annotator, the rooms' rule: the write room (labels/) imports nothing of annotator but its models and
  itself; no room imports another room's views; the models import no room; and annotator/ itself holds only
  the app's shared modules, so that new work lands in a room.

Reads every module's import statements with ast (no module is imported), so a stray import in any
function body counts as much as one at the top. The project package (quire/) wires the apps together
(settings, URLs, the API router) and is not held to the doors.
"""

import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ["catalog", "search", "lmm", "annotator", "evaluation"]
# What each app may import of the others.
ALLOWED = {
    "catalog": set(),
    "search": {"catalog"},
    "lmm": {"catalog", "search"},
    "annotator": {"catalog", "search", "lmm"},
    "evaluation": {"catalog", "search", "lmm", "annotator"},
}
DOORS = ("facade", "models")


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement in the file, relative ones resolved."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # "from search import facade" imports search.facade
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def sources(package: str, root: Path = ROOT) -> list[Path]:
    return sorted(path for path in (root / package).rglob("*.py") if "migrations" not in path.parts)


def cross_imports(package: str, root: Path = ROOT):
    """(where, module, the other app) for each import in `package` of another Quire app."""
    for path in sources(package, root):
        for line, module in imports_of(path, root):
            other = module.split(".")[0]
            if other in APPS and other != package:
                yield f"{path.relative_to(root)}:{line} imports {module}", module, other


def wrong_flow(package: str, root: Path = ROOT) -> list[str]:
    return [where for where, _, other in cross_imports(package, root) if other not in ALLOWED[package]]


def past_the_doors(package: str, root: Path = ROOT) -> list[str]:
    """Imports of another app's modules other than its facade and its models. "from search import facade"
    also yields "search" itself (the package), which is not a way past the door."""
    return [
        where
        for where, module, other in cross_imports(package, root)
        if module != other and module.split(".")[1] not in DOORS
    ]


@pytest.mark.parametrize("app", APPS)
def test_imports_flow_one_way(app):
    wrong = wrong_flow(app)
    assert not wrong, "imports against catalog <- search <- lmm <- annotator <- evaluation:\n" + "\n".join(wrong)


@pytest.mark.parametrize("app", APPS)
def test_other_apps_are_reached_through_their_doors(app):
    wrong = past_the_doors(app)
    assert not wrong, "outside an app, import only its facade and its models:\n" + "\n".join(wrong)


def test_common_imports_no_app():
    wrong = [where for where, _, _ in cross_imports("common")]
    assert not wrong, "common/ is below every app:\n" + "\n".join(wrong)


# What an app may import of the project package quire/ (which wires the apps together): nothing. Request plumbing
# lives in common/, and tasks are sent by name through the Celery app settings.QUIRE_CELERY_APP names.
PROJECT_ALLOWED: set[str] = set()


def project_imports(package: str, root: Path = ROOT) -> list[str]:
    """Imports in `package` of the project package quire/, other than PROJECT_ALLOWED."""
    return [
        f"{path.relative_to(root)}:{line} imports {module}"
        for path in sources(package, root)
        for line, module in imports_of(path, root)
        if module.split(".")[0] == "quire" and module not in PROJECT_ALLOWED
    ]


@pytest.mark.parametrize("app", [*APPS, "common"])
def test_apps_do_not_import_the_project_package(app):
    wrong = project_imports(app)
    assert not wrong, "quire/ wires the apps; request plumbing is in common/:\n" + "\n".join(wrong)


def test_the_project_checker_sees_a_planted_import(tmp_path):
    (tmp_path / "annotator").mkdir()
    (tmp_path / "annotator" / "probe.py").write_text("def f():\n    from quire.database import x\n")
    assert project_imports("annotator", tmp_path) == [
        "annotator/probe.py:2 imports quire.database",
        "annotator/probe.py:2 imports quire.database.x",
    ]


def test_every_app_has_a_door():
    assert all((ROOT / app / "facade.py").is_file() for app in APPS if app != "evaluation")


def test_metrics_import_no_django():
    modules = [module for _, module in imports_of(ROOT / "evaluation" / "metrics.py")]
    assert modules and not [m for m in modules if m.startswith("django") or m.split(".")[0] in APPS]


def test_the_checker_sees_a_wrong_import(tmp_path):
    """The checks above would pass on code they cannot read; this one proves they read it (on a copy of
    the layout under tmp_path: nothing is written into the source tree)."""
    (tmp_path / "catalog").mkdir()
    (tmp_path / "annotator").mkdir()
    probe = tmp_path / "catalog" / "probe.py"
    probe.write_text("def f():\n    from annotator.models import Label\n    from ..search import facade\n")
    (tmp_path / "annotator" / "probe.py").write_text("from catalog.taxa import describe\nfrom catalog import facade\n")
    assert (2, "annotator.models") in imports_of(probe, tmp_path)
    assert (3, "search.facade") in imports_of(probe, tmp_path)
    assert "catalog/probe.py:2 imports annotator.models" in wrong_flow("catalog", tmp_path)
    assert "catalog/probe.py:3 imports search.facade" in wrong_flow("catalog", tmp_path)
    assert past_the_doors("annotator", tmp_path) == [
        "annotator/probe.py:1 imports catalog.taxa",
        "annotator/probe.py:1 imports catalog.taxa.describe",
    ]


def test_every_search_failure_is_a_search_unavailable():
    from search import exceptions
    from search.facade import SearchUnavailable

    classes = [value for value in vars(exceptions).values() if isinstance(value, type) and issubclass(value, Exception)]
    assert {cls.__name__ for cls in classes} >= {"NoIndex", "SearchError", "WeightsUnavailable", "StoreMismatch"}
    assert all(issubclass(cls, SearchUnavailable) for cls in classes)


def test_a_command_that_runs_no_model_imports_no_model_library(tmp_path):
    """Every command loads the URL conf for its checks, and with it the labeling views: those must not
    import torch, open_clip, scikit-learn or the OpenAI client (issue 24: `api_token` and `export_inquire`
    took 5 to 6 s to start, 2.8 s of it scikit-learn's import; bench/startup_bench.py measures it)."""
    import subprocess
    import sys

    probe = (
        "import os, sys, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'quire.settings'); django.setup();"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "import annotator.web.home, annotator.web.labeling, annotator.web.progress, annotator.web.team,"
        "annotator.web.methods, annotator.web.exports, annotator.api.views, annotator.web.map, evaluation.views;"
        "print(sorted(m for m in ('torch', 'open_clip', 'sklearn', 'openai') if m in sys.modules))"
    )
    env = {**os.environ, "DEBUG": "1", "QUIRE_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


# annotator's rooms (sub-packages, one sub-domain each), its two layers of pages above them (web/: every HTML view,
# form and fragment; api/: the REST API), and the modules its top level keeps: what the app shares (models, the door,
# URLs, tasks, the demo's data, the admin).
LAYERS = ("web", "api")
ROOMS = ("labels", "labeling", "map", "team", "completeness", "progress", "methods", "inquire", "releases", *LAYERS)
SHARED = {"__init__", "admin", "apps", "demo", "facade", "models", "tasks", "urls"}
WRITE_ROOM_MAY_IMPORT = ("annotator.models", "annotator.labels")
# The house's order (docs/architecture.md states the same table). A room imports only the rooms named here, so the
# domain is one-way: labels at the bottom (every write goes through it), the rankings' methods, the team's figures,
# completeness (frames, checks, claims), the progress figures read off it, then what builds on them: the labeling
# page's grid, the map, the benchmark's files and its releases. The layers above (web/ and api/) may import any
# room, and no room imports them: the tree shows the layers, with no list of page files to keep.
ROOM_MAY_IMPORT = {
    "labels": set(),
    "methods": {"labels"},
    "team": {"labels", "methods"},
    "completeness": {"labels"},
    "progress": {"labels", "completeness"},
    "labeling": {"labels", "methods", "completeness"},
    "map": {"labels", "labeling"},
    "inquire": {"labels", "team", "completeness"},
    "releases": {"labels", "team", "completeness", "inquire"},
    **{layer: set(ROOMS) - {layer} for layer in LAYERS},
}
# What makes a module a page: it answers requests or builds forms and templates. None of it belongs in a room.
PAGE_LIBRARIES = ("django.shortcuts", "django.forms", "django.template", "django_htmx", "django.views")


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "annotator" and parts[1] in ROOMS else None


def pages_in_rooms(root: Path = ROOT) -> list[str]:
    """Modules of a room (not web/ or api/) that are pages: named views, forms or pane, or importing what answers a
    request or builds a form (PAGE_LIBRARIES)."""
    wrong = []
    for path in sources("annotator", root):
        relative = path.relative_to(root)
        room = relative.parts[1] if len(relative.parts) > 2 else None
        if room not in ROOMS or room in LAYERS:
            continue
        named = path.stem in ("views", "forms", "pane")
        uses = sorted({lib for _, module in imports_of(path, root) for lib in PAGE_LIBRARIES if module.startswith(lib)})
        if named or uses:
            why = f"imports {', '.join(uses)}" if uses else f"is named {path.name}"
            wrong.append(f"{relative} {why}: a page, move it into annotator/web/")
    return wrong


def room_violations(root: Path = ROOT) -> list[str]:
    """Every import inside annotator/ against the rooms' rules and order, and every module annotator/ keeps outside
    a room."""
    wrong = []
    app = root / "annotator"
    for path in sources("annotator", root):
        relative = path.relative_to(root)
        inside = relative.parts[1] if len(relative.parts) > 2 else None
        if inside is None and path.stem not in SHARED:
            wrong.append(f"{relative} is outside the rooms: move it into one of {', '.join(ROOMS)}")
        if inside in ("management", "templatetags"):
            continue
        for line, module in imports_of(path, root):
            if not module.startswith("annotator."):
                continue
            where = f"{relative}:{line} imports {module}"
            target = room_of(module)
            if inside == "labels" and not module.startswith(WRITE_ROOM_MAY_IMPORT):
                wrong.append(f"{where}: the write room imports only annotator.models and itself")
            elif (path == app / "models.py" or inside == "models") and target:
                wrong.append(f"{where}: the models import no room")
            elif inside in ROOMS and inside not in LAYERS and target in LAYERS:
                wrong.append(f"{where}: no room imports {target}/ (a layer of pages above every room)")
            elif inside in ROOMS and target not in (None, inside, *ROOM_MAY_IMPORT[inside]):
                below = ", ".join(sorted(ROOM_MAY_IMPORT[inside])) or "no other room"
                wrong.append(f"{where}: {inside}/ imports only {below} (the order in docs/architecture.md)")
    return wrong


def test_annotator_rooms_keep_their_rule():
    wrong = room_violations()
    assert not wrong, "annotator's rooms (docs/architecture.md):\n" + "\n".join(wrong)


def test_the_room_order_is_one_way():
    """The table itself has no circle: following what a room may import never leads back to it."""
    for room in ROOM_MAY_IMPORT:
        if room in LAYERS:  # the layers import every room, and no room imports them (room_violations)
            continue
        seen, todo = set(), list(ROOM_MAY_IMPORT[room])
        while todo:
            other = todo.pop()
            assert other != room, f"{room} may import itself through {sorted(seen)}"
            if other not in seen and other not in LAYERS:
                seen.add(other)
                todo += ROOM_MAY_IMPORT[other]


def test_the_room_checker_sees_planted_violations(tmp_path):
    app = tmp_path / "annotator"
    for room in ("labels", "team", "completeness", "progress", "inquire", "web"):
        (app / room).mkdir(parents=True)
        (app / room / "__init__.py").write_text("")
    (app / "models").mkdir()
    (app / "models" / "__init__.py").write_text("from annotator.models.labels import Label\n")
    (app / "models" / "labels.py").write_text("from annotator.labels import final\n")
    (app / "labels" / "final.py").write_text("from annotator.models import Label\nfrom . import tallies\n")
    (app / "labels" / "tallies.py").write_text("def f():\n    from annotator.team import agreement\n")
    (app / "completeness" / "checks.py").write_text(
        "from annotator.labels import sealed\nfrom annotator.releases.publish import cut\n"
        "def f():\n    from annotator.web.progress import page\n"
    )
    (app / "inquire" / "exporters.py").write_text(
        "from annotator.completeness import claims\nfrom annotator.team import x\n"
        "from annotator.progress import figures\n"
    )
    (app / "web" / "team.py").write_text("from annotator.labels import visibility\nfrom annotator.releases import y\n")
    (app / "overlap.py").write_text("")
    assert room_violations(tmp_path) == [
        "annotator/completeness/checks.py:2 imports annotator.releases.publish: completeness/ imports only labels "
        "(the order in docs/architecture.md)",
        "annotator/completeness/checks.py:2 imports annotator.releases.publish.cut: completeness/ imports only "
        "labels (the order in docs/architecture.md)",
        "annotator/completeness/checks.py:4 imports annotator.web.progress: no room imports web/ (a layer of pages "
        "above every room)",
        "annotator/completeness/checks.py:4 imports annotator.web.progress.page: no room imports web/ (a layer of "
        "pages above every room)",
        "annotator/inquire/exporters.py:3 imports annotator.progress.figures: inquire/ imports only completeness, "
        "labels, team (the order in docs/architecture.md)",
        "annotator/labels/tallies.py:2 imports annotator.team: the write room imports only annotator.models and itself",
        "annotator/labels/tallies.py:2 imports annotator.team.agreement: the write room imports only annotator.models "
        "and itself",
        "annotator/models/labels.py:1 imports annotator.labels.final: the models import no room",
        "annotator/overlap.py is outside the rooms: move it into one of " + ", ".join(ROOMS),
    ]  # web/team.py imports any room it likes; inquire/ may import completeness/, not progress/ above it


@pytest.mark.parametrize("room", [r for r in ROOMS if r not in LAYERS])
def test_a_planted_import_of_the_pages_from_any_room_is_seen(tmp_path, room):
    app = tmp_path / "annotator"
    (app / room).mkdir(parents=True)
    (app / room / "probe.py").write_text("from annotator.web import labeling\nfrom annotator.api import views\n")
    found = room_violations(tmp_path)
    for line, layer in ((1, "web"), (2, "api")):
        said = [v for v in found if v.startswith(f"annotator/{room}/probe.py:{line} imports annotator.{layer}")]
        why = "the write room imports only" if room == "labels" else f"no room imports {layer}/"
        assert said and all(why in v for v in said), found


def test_no_room_holds_a_page():
    assert pages_in_rooms() == []


def test_a_planted_page_inside_a_room_is_seen(tmp_path):
    app = tmp_path / "annotator"
    for room in ("team", "progress", "web"):
        (app / room).mkdir(parents=True)
    (app / "team" / "views.py").write_text("x = 1\n")
    (app / "progress" / "board.py").write_text("from django.shortcuts import render\n")
    (app / "web" / "board.py").write_text("from django.shortcuts import render\n")  # where pages live
    assert pages_in_rooms(tmp_path) == [
        "annotator/progress/board.py imports django.shortcuts: a page, move it into annotator/web/",
        "annotator/team/views.py is named views.py: a page, move it into annotator/web/",
    ]


SENDS = re.compile(r"background\.(?:send|publish|submit|submit_on_commit|submit_when_polled)\(\s*([A-Z_]+|\"[^\"]+\")")
NAMED = re.compile(r"(^|\n)([A-Z_]+) = \"([a-z_]+\.[a-z_]+)\"")


def task_names_sent(root: Path = ROOT) -> list[tuple[str, str]]:
    """(where, name) for every task name given to common.background, written out or as a module constant."""
    found = []
    for app in [*APPS, "common"]:
        for path in sources(app, root):
            text = path.read_text(encoding="utf-8")
            constants = {match[1]: match[2] for match in NAMED.findall(text)}
            for match in SENDS.finditer(text):
                given = match.group(1)
                name = given.strip('"') if given.startswith('"') else constants.get(given, given)
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{path.relative_to(root)}:{line}", name))
    return found


def test_every_task_sent_by_name_is_registered():
    from django.conf import settings

    from common.background import task_named

    sent = task_names_sent()
    assert len({name for _, name in sent}) >= 7, sent  # the embedding, index, model, figure and scoring jobs
    # Beat's schedule and the routes name tasks too.
    sent += [("CELERY_BEAT_SCHEDULE", entry["task"]) for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    sent += [("CELERY_TASK_ROUTES", name) for name in settings.CELERY_TASK_ROUTES]
    unknown = []
    for where, name in sent:
        try:
            task_named(name)
        except KeyError:
            unknown.append(f"{where} sends {name}, which no tasks module registers")
    assert not unknown, "\n".join(unknown)


def test_the_task_name_checker_sees_a_constant_and_a_literal(tmp_path):
    (tmp_path / "annotator").mkdir()
    (tmp_path / "annotator" / "probe.py").write_text(
        'TASK = "annotator.nowhere"\n\ndef f():\n    background.submit_on_commit(TASK, 1)\n'
        '    background.publish("annotator.rerank", 2, queue="models")\n'
    )
    assert task_names_sent(tmp_path) == [
        ("annotator/probe.py:4", "annotator.nowhere"),
        ("annotator/probe.py:5", "annotator.rerank"),
    ]


PROJECT = (*APPS, "common", "quire")


def hidden_imports(package: str, root: Path = ROOT) -> list[str]:
    """Imports of the project's own modules inside a function body without a comment on the line saying why:
    an import in a function hides an arrow, so it is kept only where a heavy library loads behind it (torch,
    FAISS, pymilvus, transformers...) or Django is not set up yet, and says so."""
    wrong = []
    for path in sources(package, root):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for function in ast.walk(ast.parse(text, str(path))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    module = node.module or ""
                    own = node.level > 0 or module.split(".")[0] in PROJECT
                elif isinstance(node, ast.Import):
                    own = any(alias.name.split(".")[0] in PROJECT for alias in node.names)
                else:
                    continue
                if own and "#" not in lines[node.lineno - 1]:
                    wrong.append(f"{path.relative_to(root)}:{node.lineno} {lines[node.lineno - 1].strip()}")
    return sorted(set(wrong))


@pytest.mark.parametrize("package", PROJECT)
def test_imports_inside_functions_say_why(package):
    wrong = hidden_imports(package)
    assert not wrong, "import it at the top, or say on the line which heavy library it spares:\n" + "\n".join(wrong)


def test_the_hidden_import_checker_sees_one(tmp_path):
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "probe.py").write_text(
        "def f():\n    from .engine import rank\n    from .clip import x  # torch\n    import numpy\n"
    )
    assert hidden_imports("search", tmp_path) == ["search/probe.py:2 from .engine import rank"]


def module_name(path: Path, root: Path = ROOT) -> str:
    name = ".".join(path.relative_to(root).with_suffix("").parts)
    return name.removesuffix(".__init__")


def arrows_between(packages: tuple[str, ...] = PROJECT, root: Path = ROOT) -> dict[str, set[str]]:
    """Each of the project's modules and the project modules it imports, at the top or in a function (a package and
    its own modules aside: Python imports a package before its modules, so a door that re-exports them is no
    circle)."""
    paths = {module_name(path, root): path for package in packages if (root / package).is_dir()
             for path in sources(package, root)}  # fmt: skip
    arrows: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        for _, module in imports_of(path, root):
            while module and module not in paths:
                module = module.rpartition(".")[0]
            related = module.startswith(name + ".") or name.startswith(module + ".")
            if module and module != name and not related:
                arrows[name].add(module)
    return arrows


def circles(packages: tuple[str, ...] = PROJECT, root: Path = ROOT) -> list[tuple[str, ...]]:
    """The circles of imports among the project's modules, of any length: each strongly connected group of two or
    more modules (every one reaches every other through imports), its members sorted. Tarjan's algorithm
    (Tarjan 1972, "Depth-first search and linear graph algorithms"), iterative so no recursion limit applies."""
    arrows = arrows_between(packages, root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    for start in sorted(arrows):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, following = work[-1]
            step = next(following, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(arrows[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(tuple(sorted(group)))
    return sorted(found)


def test_no_modules_import_each_other_in_a_circle():
    """Issue 38 found five two-file circles (tasks modules and what they run, search's apps and facade, lmm's
    panel and scoring), each hidden by an import inside a function; a circle of three hides as well."""
    assert circles() == []


def test_the_circle_checker_sees_one(tmp_path):
    (tmp_path / "lmm").mkdir()
    (tmp_path / "lmm" / "panel.py").write_text("from .scoring import score\n")
    (tmp_path / "lmm" / "scoring.py").write_text("def f():\n    from .panel import PROMPTS  # hidden\n")
    assert circles(("lmm",), tmp_path) == [("lmm.panel", "lmm.scoring")]


def test_the_circle_checker_sees_three_modules_in_a_circle(tmp_path):
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "__init__.py").write_text("from .a import x  # a package and its own: no circle\n")
    (tmp_path / "search" / "a.py").write_text("from .b import y\n")
    (tmp_path / "search" / "b.py").write_text("import search.c\n")
    (tmp_path / "search" / "c.py").write_text("def f():\n    from search.a import x  # hidden\n")
    (tmp_path / "search" / "d.py").write_text("from .a import x\n")  # into the circle, not part of it
    assert circles(("search",), tmp_path) == [("search.a", "search.b", "search.c")]


def test_the_guide_lists_every_module_as_the_code_has_it():
    """Issue 65: docs/architecture.md's tree left out a dozen modules. Its list of every module is written from the
    modules' docstrings (tools/module_tree.py) and must be what the code has now."""
    from tools import module_tree

    assert module_tree.undocumented() == [], "say what each module is for in its docstring"
    assert module_tree.written() == module_tree.listing(), "run: .venv/bin/python -m tools.module_tree --write"


def test_the_module_list_sees_a_module_added_and_one_without_a_docstring(tmp_path):
    from tools import module_tree

    for app in module_tree.APPS:
        (tmp_path / app).mkdir()
    (tmp_path / "common" / "kept.py").write_text('"""Kept: a module the list names."""\n')
    guide = tmp_path / "guide.md"
    guide.write_text(f"# Guide\n\n{module_tree.listing(tmp_path)}\n")
    assert module_tree.written(guide) == module_tree.listing(tmp_path)
    assert "- `common/kept.py`: Kept" in module_tree.written(guide)
    (tmp_path / "search" / "added.py").write_text("x = 1\n")  # planted: a new module, no docstring
    assert module_tree.written(guide) != module_tree.listing(tmp_path)
    assert module_tree.undocumented(tmp_path) == ["search/added.py"]
