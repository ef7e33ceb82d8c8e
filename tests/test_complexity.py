"""No function over cyclomatic complexity 12, counted as radon counts it (each boolean operator and each
comprehension's condition a branch, where ruff's McCabe check counts fewer), in the packages named here. A
function over it is split into named steps, as annotator.completeness.advice's is.

Held by every app (annotator, catalog, search, lmm, evaluation), common, quire and tools. bench/'s scripts are not
(eight of their functions are over 12: `radon cc -s -n C bench`): a bench is read once, top to bottom, beside its
results."""

from pathlib import Path

from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent
COVERED = ("annotator", "catalog", "search", "lmm", "evaluation", "common", "quire", "tools")
MOST = 12


def over(root: Path, packages: tuple[str, ...] = COVERED) -> list[str]:
    """`path:line name (complexity)` of every function or method over MOST, migrations left out (generated)."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for block in cc_visit(path.read_text(encoding="utf-8")):
                for function in [block, *getattr(block, "methods", [])]:
                    if function.complexity > MOST:
                        where = path.relative_to(root)
                        found.append(f"{where}:{function.lineno} {function.fullname} ({function.complexity})")
    return found


def test_no_function_of_the_covered_packages_is_over_12():
    assert over(ROOT) == [], "split these into named steps:\n" + "\n".join(over(ROOT))


def test_a_planted_function_over_12_is_named_with_its_place_and_count(tmp_path):
    (tmp_path / "annotator").mkdir()
    branches = "\n".join(f"    if x == {n} and y:\n        return {n}" for n in range(7))
    (tmp_path / "annotator" / "busy.py").write_text(f"def busy(x, y):\n{branches}\n    return -1\n")
    (tmp_path / "annotator" / "calm.py").write_text("def calm(x):\n    return x if x else 0\n")
    (tmp_path / "annotator" / "migrations").mkdir()
    (tmp_path / "annotator" / "migrations" / "0001.py").write_text(f"def busy(x, y):\n{branches}\n")
    assert over(tmp_path, ("annotator",)) == ["annotator/busy.py:1 busy (15)"]
