"""The ASGI application (Django's), for servers that speak ASGI; Quire's deployments serve WSGI (gunicorn)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
application = get_asgi_application()
