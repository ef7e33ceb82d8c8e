"""The documentation: the site builds with no broken link, the README stays short with its two commands first and
every link resolving, and the staff and operations guides' `bash` blocks run as written after the demo, each line
as its own process (docs/architecture.md, "The guides' commands")."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.annotator.test_demo_commands import environment

ROOT = Path(__file__).resolve().parents[1]
RUN_AFTER_THE_DEMO = ("staff.md", "operations.md")


def shell_lines(markdown: str, language: str = "bash") -> list[str]:
    """The commands of every block fenced as `language`, one a line (comments and blank lines left out, a line
    ending in a backslash joined to the next)."""
    commands: list[str] = []
    for token in MarkdownIt().parse(markdown):
        if token.type != "fence" or token.info.split()[:1] != [language]:
            continue
        pending = ""
        for line in token.content.splitlines():
            line = pending + line.strip()
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1].rstrip() + " "
            elif line and not line.startswith("#"):
                commands.append(line)
    return commands


def test_the_shell_reader_joins_lines_and_skips_other_blocks():
    text = "```bash\n# a comment\nfirst --a \\\n  --b\n\nsecond\n```\n\n```sh\nnot run\n```\n    indented\n"
    assert shell_lines(text) == ["first --a --b", "second"]


def test_the_site_builds_with_every_link_resolving(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    for page in ("annotators", "staff", "researchers", "operations", "methods", "architecture"):
        assert (tmp_path / "site" / page / "index.html").is_file()
    html = (tmp_path / "site" / "operations" / "index.html").read_text()
    assert "fonts.googleapis.com" not in html and "googletagmanager" not in html  # offline, no analytics


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """--strict is what catches a broken link: proved on a copy of the site with one planted."""
    copy = tmp_path / "docs"
    copy.mkdir()
    for page in (ROOT / "docs").rglob("*"):
        if page.is_file():
            (copy / page.relative_to(ROOT / "docs")).parent.mkdir(parents=True, exist_ok=True)
            (copy / page.relative_to(ROOT / "docs")).write_bytes(page.read_bytes())
    (copy / "staff.md").write_text((copy / "staff.md").read_text() + "\nSee [the missing page](missing.md).\n")
    config = (ROOT / "mkdocs.yml").read_text().replace("docs_dir: docs", f"docs_dir: {copy}")
    (tmp_path / "mkdocs.yml").write_text(config)
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode != 0
    assert "missing.md" in built.stderr


def test_the_readme_is_short_with_its_two_commands_first():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 160, f"the README has {len(lines)} lines: move the detail into docs/"
    first = next(token for token in MarkdownIt().parse(text) if token.type == "fence")
    commands = [line.split("#")[0].strip() for line in first.content.splitlines() if line.strip()]
    assert commands == ["./dev demo", "./dev test"]
    assert text.index("```") < text.index("\n## ")  # before any section


def test_every_link_in_the_readme_and_the_guides_resolves():
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "\n".join(broken)


@pytest.mark.slow
def test_the_guides_commands_run_after_the_demo(tmp_path):
    data = tmp_path / "demo-data"
    env = environment(data)
    built = subprocess.run(
        ["./dev", "demo", "--no-serve", "--images", "60"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    commands = [line for guide in RUN_AFTER_THE_DEMO for line in shell_lines((ROOT / "docs" / guide).read_text())]
    assert len(commands) >= 10
    for command in commands:
        assert shlex.split(command)[0] in (".venv/bin/python", "./dev"), command
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert (data / "releases" / "demo-v1" / "SHA256SUMS").is_file()
    assert (data / "export" / "inquire_annotations.csv").is_file()


def test_every_setting_read_from_the_environment_is_in_the_operations_guide():
    """Issue 65: seven settings were in no guide. Each name quire/settings.py reads from the environment (or the
    data directory's settings file) appears in docs/operations.md, in code type."""
    source = (ROOT / "quire" / "settings.py").read_text(encoding="utf-8")
    read = set(re.findall(r'(?:env_\w+|os\.environ\.get|env_or_file)\(\s*"([A-Z][A-Z0-9_]+)"', source))
    assert {"DATABASE_URL", "QUIRE_CLIP_MODEL", "QUIRE_EMBED_BATCH_SIZE", "LOG_LEVEL"} <= read  # the reader reads
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    missing = sorted(name for name in read if f"`{name}`" not in guide)
    assert not missing, f"settings in no row of docs/operations.md: {missing}"
