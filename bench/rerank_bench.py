"""Benchmark: a rerank of 100 images through Quire's vision-language client, against a local server.

The server is the tests' real HTTP server speaking the OpenAI chat-completions format (tests/lmm/server.py)
on 127.0.0.1, answering after a fixed "model time" per request. Beside each Quire figure, in the same run:
the same 100 requests (same JSON, same data-URL images, same concurrency) sent with the standard
library's http.client (a kept-alive connection per thread), so the difference is what Quire adds per
image (the openai client's request building and parsing, INQUIRE's scoring rule, the answer cache's
lookups and inserts). Then the same rerank again, all from the cache.

Usage: .venv/bin/python bench/rerank_bench.py [--images 100] [--model-ms 0 20] [--concurrency 4] [--repeat 5]
"""

import argparse
import http.client
import io
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QUIRE_DATA_DIR", tempfile.mkdtemp(prefix="quire-rerank-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.pop("DATABASE_URL", None)  # a private SQLite database for the answer cache

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from PIL import Image  # noqa: E402

from lmm import prompts  # noqa: E402
from lmm.chat import ChatScorer, ImageInput  # noqa: E402
from lmm.models import Answer  # noqa: E402
from lmm.scoring import score_images  # noqa: E402
from tests.lmm.server import ChatServer, completion  # noqa: E402


def jpeg(seed: int) -> bytes:
    """A 500 x 375 photo-like JPEG (iNat24's size), about 60 KB."""
    rng = np.random.default_rng(seed)
    pixels = (rng.random((375, 500, 3)) * 60 + np.linspace(60, 180, 500)[None, :, None]).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=85)
    return out.getvalue()


def bare(server: ChatServer, images: list[ImageInput], concurrency: int) -> float:
    """The same requests with http.client and no Quire code: the baseline."""
    host, port = server.httpd.server_address
    local = threading.local()

    def one(image):
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPConnection(host, port, timeout=60)
        body = {
            "model": "bench",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": prompts.render(prompts.CHAT, "a bird")},
                        {"type": "image_url", "image_url": {"url": image.data_url()}},
                    ],
                }
            ],
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": 20,
        }
        local.connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        answer = json.loads(local.connection.getresponse().read())
        return answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, images))
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=100)
    parser.add_argument("--model-ms", type=float, nargs="+", default=[0.0, 20.0])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    call_command("migrate", "lmm", verbosity=0)
    images = {i: ImageInput(jpeg(i), "image/jpeg") for i in range(args.images)}
    results = []
    for model_ms in args.model_ms:
        with ChatServer() as server:

            def answer(request, delay=model_ms / 1000):
                time.sleep(delay)
                return 200, completion([("Yes", -0.4), ("No", -1.1)]), {}

            server.answer = answer
            scorer = ChatScorer(base_url=server.base_url, model="bench", concurrency=args.concurrency)
            baseline, quire, cached = [], [], []
            for _ in range(args.repeat):
                baseline.append(bare(server, list(images.values()), args.concurrency))
                Answer.objects.all().delete()
                started = time.perf_counter()
                scored = score_images(scorer, "a bird", images)
                quire.append(time.perf_counter() - started)
                assert scored.asked == args.images
                started = time.perf_counter()
                again = score_images(scorer, "a bird", images)
                cached.append(time.perf_counter() - started)
                assert again.asked == 0
        row = {
            "model_ms": model_ms,
            "images": args.images,
            "concurrency": args.concurrency,
            "bare_s": statistics.median(baseline),
            "quire_s": statistics.median(quire),
            "cached_s": statistics.median(cached),
        }
        row["bare_per_s"] = args.images / row["bare_s"]
        row["quire_per_s"] = args.images / row["quire_s"]
        row["overhead_ms_per_image"] = 1000 * (row["quire_s"] - row["bare_s"]) / args.images
        results.append(row)
        print(json.dumps(row), flush=True)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"rerank-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
