"""The one-way flow of the architecture guide, checked on the source:
catalog <- search <- lmm <- annotator <- evaluation.

lmm/ (vision-language models) knows images and model servers, not queries or labels.

Reads every module's import statements with ast (no module is imported), so a stray import in any
function body counts as much as one at the top.
"""

import ast
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


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement in the file, relative ones resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
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


def sources(app: str) -> list[Path]:
    return sorted(path for path in (ROOT / app).rglob("*.py") if "migrations" not in path.parts)


@pytest.mark.parametrize("app", APPS)
def test_imports_flow_one_way(app):
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sources(app)
        for line, module in imports_of(path)
        if module.split(".")[0] in APPS and module.split(".")[0] != app and module.split(".")[0] not in ALLOWED[app]
    ]
    assert not wrong, "imports against catalog <- search <- lmm <- annotator <- evaluation:\n" + "\n".join(wrong)


@pytest.mark.parametrize("app", ["catalog", "lmm", "annotator", "evaluation"])
def test_other_apps_use_only_the_search_facade(app):
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sources(app)
        for line, module in imports_of(path)
        if module.startswith("search.") and not module.startswith("search.facade")
    ]
    assert not wrong, "outside search/, import only search.facade:\n" + "\n".join(wrong)


def test_metrics_import_no_django():
    modules = [module for _, module in imports_of(ROOT / "evaluation" / "metrics.py")]
    assert modules and not [m for m in modules if m.startswith("django") or m.split(".")[0] in APPS]


def test_the_checker_sees_a_wrong_import(tmp_path, monkeypatch):
    """The checks above would pass on code they cannot read; this one proves they read it."""
    module = ROOT / "catalog" / "_architecture_probe.py"
    module.write_text("def f():\n    from annotator.models import Label\n    from ..search import facade\n")
    try:
        assert (2, "annotator.models") in imports_of(module)
        assert (3, "search.facade") in imports_of(module)
        with pytest.raises(AssertionError, match="catalog/_architecture_probe.py:2 imports annotator.models"):
            test_imports_flow_one_way("catalog")
    finally:
        module.unlink()


def test_every_search_failure_is_a_search_unavailable():
    from search import exceptions
    from search.facade import SearchUnavailable

    classes = [value for value in vars(exceptions).values() if isinstance(value, type) and issubclass(value, Exception)]
    assert {cls.__name__ for cls in classes} >= {"NoIndex", "SearchError", "WeightsUnavailable", "StoreMismatch"}
    assert all(issubclass(cls, SearchUnavailable) for cls in classes)
