"""What a first `./dev demo` and a first `./dev test` download: the wheels pip resolves for each requirements file,
sized by PyPI's own answer (a HEAD request per file), so that ./dev can say how much it will fetch before it starts.

    .venv/bin/python bench/install_size.py            # needs PyPI: run it where the package registry is reachable

It resolves into a throwaway virtualenv with `pip install --dry-run --ignore-installed --report` (nothing is
installed) and prints, per file, the packages, the total and the largest wheels. The figures go to bench/RESULTS.md
and into ./dev's sentences.
"""

import json
import subprocess
import sys
import tempfile
import urllib.request
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("requirements.txt", "requirements-dev.txt")


def resolved(python: Path, requirements: Path, report: Path) -> list[str]:
    """The download URLs of every distribution pip would install for `requirements` into an empty environment."""
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--dry-run",
         "--ignore-installed", "--report", str(report), "-r", str(requirements)],
        check=True,
    )  # fmt: skip
    return [item["download_info"]["url"] for item in json.loads(report.read_text())["install"]]


def size_of(url: str) -> int:
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=60) as answer:
        return int(answer.headers.get("Content-Length", 0))


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        venv.create(folder, with_pip=True)
        python = Path(folder) / "bin" / "python"
        for name in FILES:
            urls = resolved(python, ROOT / name, Path(folder) / f"{name}.json")
            with ThreadPoolExecutor(16) as pool:
                sizes = list(pool.map(size_of, urls))
            print(f"{name}: {len(urls)} packages, {sum(sizes) / 1e6:.0f} MB to download")
            for size, url in sorted(zip(sizes, urls, strict=True), reverse=True)[:5]:
                print(f"  {size / 1e6:6.1f} MB  {url.rsplit('/', 1)[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
