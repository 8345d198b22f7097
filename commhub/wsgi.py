"""WSGI entry point, for request/response-only deployments."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")

application = get_wsgi_application()
