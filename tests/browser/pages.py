"""What the browser tests do on Quire's pages (helpers; the fixtures are in conftest.py)."""


def log_in(page, live_server, user="ann", password="pw-ann-1", next_url="/"):
    """Log in through the real form and land on `next_url`."""
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill('input[name="username"]', user)
    page.fill('input[name="password"]', password)
    page.click('button[type="submit"], input[type="submit"]')
    page.wait_for_url(f"**{next_url}")


def tile(page, index):
    """The grid's `index`-th tile."""
    return page.locator(".tile").nth(index)
