"""Benchmark: the map's frame rate while panning and zooming, in this machine's headless Chromium (software WebGL),
at 1,000,000 points beside a 10,000-point baseline in the same run.

Serves static/js/labeling/ and a bare page from a local HTTP server (127.0.0.1 only), feeds PointMap
(static/js/labeling/map-view.js) a map in the binary form the page reads (clustered points, 5% of them labeled),
then drives 180 frames of continuous pan and zoom (one move per requestAnimationFrame) and records each frame's
interval. Then 6 rounds of
20 frames of panning and a 400 ms stop (the view's sharp redraw runs in each stop): the frames right after a stop
wait for it. Reports median and 95th-percentile frame time, frames per second from the median, and the time of the
full redraw the view makes once the user stops moving (every point drawn again at the new view, waited for by
reading a pixel back; median of 7). Screenshots in test-artifacts/map-fps-<points>.png.

Usage: .venv/bin/python bench/map_fps_bench.py [--sizes 10000 1000000] [--frames 180]
"""

import argparse
import functools
import http.server
import json
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAGE = """<!doctype html><html><body style="margin:0">
<style>canvas { position: absolute; inset: 0; width: 100%; height: 100%; }</style>
<div style="position:relative;width:1000px;height:600px"><canvas id="gl"></canvas><canvas id="ov"></canvas></div>
<script type="module">
import { PointMap, readMap } from "/js/map-view.js";
window.load = async (name) => {
  const data = readMap(await (await fetch(name)).arrayBuffer());
  const map = new PointMap(document.getElementById("gl"), document.getElementById("ov"));
  const started = performance.now(); map.setData(data); const setup = performance.now() - started;
  window.map = map; return { setup };
};
window.drive = (count) => new Promise((resolve) => {
  const times = []; let last = null, f = 0;
  function step(t) {
    if (last !== null) times.push(t - last); last = t; f += 1;
    window.map.move(Math.sin(f / 9) * 6, Math.cos(f / 11) * 4, f % 40 < 20 ? 1.02 : 1 / 1.02, 500, 300);
    if (f <= count) requestAnimationFrame(step); else resolve(times);
  }
  requestAnimationFrame(step);
});
// Pan for 20 frames, stop for 400 ms (the sharp redraw runs), pan again...: the frames right after a stop wait for
// that redraw in the browser's GPU process.
window.stopAndGo = async (rounds) => {
  const times = [];
  for (let r = 0; r < rounds; r += 1) {
    times.push(...(await window.drive(20)));
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  return times;
};
window.redraws = (n) => Array.from({ length: n }, () => window.map.timeRedraw());
window.ready = true;
</script></body></html>"""


def map_file(count: int, folder: Path) -> str:
    rng = np.random.default_rng(count)
    centres = rng.uniform(-90, 90, size=(60, 2))
    which = rng.integers(0, 60, count)
    xy = (centres[which] + rng.standard_normal((count, 2)) * rng.uniform(1, 8, 60)[which, None]).astype("<f4")
    codes = np.zeros(count, np.uint8)
    labeled = rng.choice(count, size=count // 20, replace=False)
    codes[labeled] = rng.integers(1, 4, len(labeled))
    version = b"bench"
    header = struct.pack("<8sII", b"QMAP1\0\0\0", count, len(version)) + version
    header += b"\0" * (-len(header) % 8)
    body = header + np.arange(count, dtype="<i8").tobytes() + xy[:, 0].tobytes() + xy[:, 1].tobytes() + codes.tobytes()
    name = f"map-{count}.bin"
    (folder / name).write_bytes(body)
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--frames", type=int, default=180)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright  # a test dependency, only for this bench

    folder = Path(tempfile.mkdtemp(prefix="quire-map-fps-"))
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (folder / "index.html").write_text(PAGE)
    (folder / "js").symlink_to(ROOT / "static" / "js" / "labeling")
    names = {count: map_file(count, folder) for count in args.sizes}
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader"],
        )
        for count in args.sizes:  # a fresh page per size: the baseline and the 1M map do not share a context
            page = browser.new_page(viewport={"width": 1000, "height": 600})
            page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
            page.wait_for_function("window.ready === true")
            started = time.perf_counter()
            loaded = page.evaluate(f"load('{names[count]}')")
            load_s = time.perf_counter() - started
            times = page.evaluate(f"drive({args.frames})")
            stop_and_go = page.evaluate("stopAndGo(6)")
            redraws = page.evaluate("redraws(7)")
            page.wait_for_timeout(300)
            page.screenshot(path=str(ROOT / "test-artifacts" / f"map-fps-{count}.png"))
            times = times[5:]  # the first frames pay for the texture's creation
            median = statistics.median(times)
            result = {
                "points": count,
                "frame_ms_median": median,
                "frame_ms_p95": float(np.percentile(times, 95)),
                "fps_from_median": 1000 / median,
                "full_redraw_ms_median": statistics.median(redraws),
                "stop_and_go_frame_ms_p95": float(np.percentile(stop_and_go, 95)),
                "stop_and_go_frame_ms_max": max(stop_and_go),
                "load_s": load_s,
                "setup_ms": loaded["setup"],
            }
            print(json.dumps(result), file=sys.stderr, flush=True)
            results.append(result)
            page.close()
        browser.close()
    server.shutdown()
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "map_fps.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
