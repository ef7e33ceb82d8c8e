"""The web container's healthcheck: GET /healthz on this container's own port; exit 0 when healthy.

Plain standard library (no Django start-up on every probe); /healthz checks the database and the broker.
"""

import os
import sys
import urllib.error
import urllib.request

url = f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/healthz"
try:
    with urllib.request.urlopen(url, timeout=5) as response:
        sys.exit(0 if response.status == 200 else 1)
except (urllib.error.URLError, OSError) as error:
    print(f"{url}: {error}", file=sys.stderr)
    sys.exit(1)
