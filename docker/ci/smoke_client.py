"""The HTTP half of docker/smoke-test: talks to the stack's web container as a browser and a script would.

Standard library only (it runs on the host, outside any virtualenv). Exits non-zero, saying which step
failed, when something does not answer as it should.
Usage: smoke_client.py BASE_URL USERNAME PASSWORD TOKEN
"""

import csv
import http.cookiejar
import io
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def main(base: str, username: str, password: str, token: str) -> None:
    cookies = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))

    def get(path, *, headers=None, opener=browser):
        request = urllib.request.Request(base + path, headers=headers or {})
        with opener.open(request, timeout=60) as response:
            return response.status, response.headers, response.read()

    def api(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    status, _, body = get("/healthz")
    health = json.loads(body)
    check(status == 200 and health == {"status": "ok", "database": "ok", "broker": "ok"}, f"/healthz: {health}")
    status, headers, body = get("/static/css/quire.css")
    check(status == 200 and headers["Content-Type"].startswith("text/css") and body, "WhiteNoise serves static")

    status, queries = api("GET", "/api/queries/?limit=500")
    check(status == 200 and queries["count"] > 0, f"queries over the API: {status} {queries}")
    query = queries["results"][0]

    # The index is built by the worker after the last chunk: wait for search to answer.
    deadline = time.monotonic() + 180
    while True:
        status, found = api("GET", f"/api/queries/{query['query_id']}/candidates/?k=5")
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(2)
    check(status == 200 and len(found["results"]) == 5, f"search through the web container: {status} {found}")
    image_id = found["results"][0]["image_id"]
    ranked = [r["image_id"] for r in found["results"]]
    print(f"   search: query {query['query_id']} ({query['text'][:50]!r}) -> images {ranked}")

    status, saved = api("POST", "/api/labels/", {"query": query["query_id"], "image": image_id, "value": "relevant"})
    check(status in (200, 201) and saved["value"] == "relevant", f"save a label over the API: {status} {saved}")
    status, listed = api("GET", f"/api/labels/?query={query['query_id']}")
    check(status == 200 and any(label["image"] == image_id for label in listed["results"]), "the label is stored")

    # A browser session: log in (CSRF and all), then download the INQUIRE exports.
    _, _, page = get("/accounts/login/")
    csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": csrf})
    request = urllib.request.Request(base + "/accounts/login/", data=form.encode(), headers={"Referer": base + "/"})
    with browser.open(request, timeout=60) as response:
        check(response.status == 200 and "/accounts/login/" not in response.url, "log in with a session")
    exports = {}
    for name in ("inquire_queries.csv", "inquire_annotations.csv", "inquire_labels.csv"):
        status, headers, body = get(f"/exports/{name}")
        check(status == 200 and headers["Content-Type"].startswith("text/csv"), f"export {name}: {status}")
        exports[name] = list(csv.reader(io.StringIO(body.decode())))
    labels = exports["inquire_labels.csv"]
    check(any(str(image_id) in row for row in labels[1:]), "the saved label is in inquire_labels.csv")
    print(
        f"   exports: {len(exports['inquire_queries.csv']) - 1} queries, "
        f"{len(exports['inquire_annotations.csv']) - 1} annotations, {len(labels) - 1} labels"
    )
    status, _, page = get("/admin/search/embeddingjob/")
    check(status == 200 and b"done" in page, "the admin lists the finished embedding job")


def check(condition: bool, step: str) -> None:
    if not condition:
        print(f"smoke test FAILED at: {step}", file=sys.stderr)
        sys.exit(1)
    print(f"   ok: {step.split(':')[0]}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
