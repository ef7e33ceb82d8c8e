"""The documentation site as a reader meets it: built with --strict, opened from disk in Chromium (no server, no
network), its navigation reaching every guide; three pages shot for review (the annotators' keys, the staff's
completeness checks, the operators' settings)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    return folder


@pytest.mark.parametrize(
    ("guide", "anchor", "shows", "shot"),
    [
        ("annotators", "every-key", "next unlabeled image", "docs-annotators-keys.png"),
        ("staff", "completeness-checks-and-what-a-claim-means", "The frame", "docs-staff-checks.png"),
        ("operations", "settings-and-a-deployment-by-hand", "QUIRE_VECTOR_BACKEND", "docs-operations-settings.png"),
    ],
)
def test_a_guide_page_reads_offline(page, site, artifacts, guide, anchor, shows, shot):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto((site / guide / "index.html").as_uri() + f"#{anchor}")
    assert page.locator(f"#{anchor}").is_visible()
    assert page.get_by_text(shows).first.is_visible()
    nav = page.locator("nav.md-nav--primary")
    for title in ("Annotators", "Staff", "Researchers", "Operations", "Methods", "Architecture"):
        assert nav.get_by_text(title, exact=True).count() >= 1
    page.screenshot(path=str(artifacts / shot))
    assert not [url for url in requests if url.startswith("http")], "the site asked the network"
