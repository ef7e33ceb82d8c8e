"""What the browser tests do on Quire's pages (helpers; the fixtures are in conftest.py)."""

from urllib.parse import quote


def log_in(page, live_server, user="ann", password="pw-ann-1", next_url="/"):
    """Log in through the real form and land on `next_url`."""
    page.goto(f"{live_server.url}/accounts/login/?next={quote(next_url)}")
    page.fill('input[name="username"]', user)
    page.fill('input[name="password"]', password)
    page.click('button[type="submit"], input[type="submit"]')
    page.wait_for_url(f"**{next_url}")


def tile(page, index):
    """The grid's `index`-th tile."""
    return page.locator(".tile").nth(index)


def csrf_token(context) -> str:
    """The CSRF cookie the browser holds now."""
    return next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")


def post_form(context, live_server, path, data=None):
    """POST a form from the browser's own cookie jar, as another tab would, without opening one.

    A second page would do the same, but closing it while its navigation settles hung Chromium in
    CI once (Page.close never returned); the context's request client shares the cookies and
    leaves no page behind.
    """
    response = context.request.post(
        f"{live_server.url}{path}",
        form={"csrfmiddlewaretoken": csrf_token(context), **(data or {})},
        headers={"Referer": f"{live_server.url}/"},
        max_redirects=0,
    )
    assert response.status in (200, 302), f"POST {path} answered {response.status}"
    return response


def double_click(page, button_text) -> int:
    """Two clicks 60 ms apart on the button saying `button_text`, as a person's double click is
    (Playwright's dblclick is one submit), with the page's POSTs held until both are done, so that the
    first cannot navigate away before the second; then let them through. Returns the POSTs sent."""
    held = []
    page.route("**/*", lambda route: held.append(route) if route.request.method == "POST" else route.continue_())
    page.evaluate(
        """(text) => new Promise((done) => {
            const button = [...document.querySelectorAll("button")].find((b) => b.textContent.trim() === text);
            button.click();
            setTimeout(() => { button.click(); setTimeout(done, 300); }, 60);
        })""",
        button_text,
    )
    for route in held:
        route.continue_()
    page.unroute("**/*")
    return len(held)
