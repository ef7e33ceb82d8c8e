"""The suite's order (tests/conftest.py): the modules CI measured longest first, then the tests that start
processes, then the rest, each group in pytest's order."""

from pathlib import Path
from types import SimpleNamespace

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_named_longest_exists():
    """A module renamed or removed would silently fall back to its place in pytest's order."""
    missing = [module for module in conftest.LONGEST_FIRST if not (ROOT / module).is_file()]
    assert not missing, f"tests/conftest.py's LONGEST_FIRST names modules that do not exist: {missing}"


def test_the_longest_go_first_then_the_slow_then_the_rest_each_in_pytests_order():
    def item(nodeid: str, slow: bool = False) -> SimpleNamespace:
        return SimpleNamespace(nodeid=nodeid, keywords={"slow": True} if slow else {})

    first, second = conftest.LONGEST_FIRST[0], conftest.LONGEST_FIRST[1]
    items = [
        item("tests/a/test_quick.py::test_one"),
        item("tests/a/test_browser.py::test_page", slow=True),
        item(f"{second}::test_b"),
        item("tests/a/test_quick.py::test_two"),
        item(f"{first}::test_a"),
        item(f"{second}::test_c", slow=True),
    ]
    ordered = [i.nodeid for i in sorted(items, key=conftest._longest_first)]
    assert ordered == [
        f"{first}::test_a",
        f"{second}::test_b",
        f"{second}::test_c",
        "tests/a/test_browser.py::test_page",
        "tests/a/test_quick.py::test_one",
        "tests/a/test_quick.py::test_two",
    ]
