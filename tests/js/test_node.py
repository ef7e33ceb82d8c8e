"""The labeling page's JavaScript modules have tests of their own (tests/js/*.test.mjs, Node's built-in test
runner, no build step and no npm package): this runs them as part of the suite. The browser tests
(tests/browser/) drive the same modules in Chromium."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_the_labeling_modules_pass_their_node_tests():
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        reason = "Node.js is not installed (Debian's nodejs runs tests/js)"
        if os.environ.get("QUIRE_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{reason}; QUIRE_REQUIRE_SERVICES=1: CI must run them")
        pytest.skip(reason)
    files = sorted(str(path) for path in HERE.glob("*.test.mjs"))
    assert len(files) >= 2, "the save queue's and the keymap's tests"
    done = subprocess.run([node, "--test", *files], capture_output=True, text=True, timeout=120, cwd=HERE.parents[1])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout
