"""GET /healthz: is the hub up and its database reachable? Names nothing else."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return JsonResponse({"ok": False, "database": "unreachable"}, status=503)
    return JsonResponse({"ok": True, "database": "ok"})
