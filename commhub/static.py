"""Static files through WhiteNoise, without making the whole ASGI stack synchronous.

WhiteNoise's middleware is sync-only. Placed in the ASGI stack as it is, it makes Django run every
request, long-polls included, in a thread of its own that blocks until the response is ready:
two hundred waiting agents would hold two hundred threads. This wrapper is async-capable, looks
the path up in WhiteNoise's table (a dict lookup) and only serves a hit through a thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.whitenoise = WhiteNoiseMiddleware(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._serve_async(request)
        return self.whitenoise(request)

    async def _serve_async(self, request: HttpRequest) -> HttpResponseBase:
        static_file = self._find(request.path_info)
        if static_file is None:
            return await self.get_response(request)
        return await sync_to_async(self.whitenoise.serve, thread_sensitive=False)(static_file, request)

    def _find(self, path: str) -> Any:
        if self.whitenoise.autorefresh:
            return self.whitenoise.find_file(path)  # development only: reads the disk
        return self.whitenoise.files.get(path)
