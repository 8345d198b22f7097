"""Reference points: the least a Django view can do with the database, served like the hub.

Plain sync views, as the issue's figures measure them: one ORM INSERT + SELECT, and one SELECT.
They go through the same middleware and server as every hub request.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from bench.models import Probe


@csrf_exempt
def insert_select(request: HttpRequest) -> JsonResponse:
    probe = Probe.objects.create(label="bench")
    return JsonResponse({"ok": True, "id": Probe.objects.get(pk=probe.pk).pk})


def select_one(request: HttpRequest) -> JsonResponse:
    probe = Probe.objects.order_by("pk").first()
    return JsonResponse({"ok": True, "id": probe and probe.pk})
