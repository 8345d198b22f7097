"""Response headers the browser enforces, and a log filter that keeps tokens out of logs."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from hub_core.headers import with_content_security_policy


@sync_and_async_middleware
def content_security_policy(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    """Adds the policy to every response (async-capable: an ASGI request never hops threads here)."""
    finish = with_content_security_policy

    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            return finish(await get_response(request))

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        return finish(get_response(request))

    return middleware


# A bearer token, also as a URL carries it: a query string or path may percent-encode the
# underscore or any character after it, and access lines print them as received.
TOKEN = re.compile(r"\b([nu]tok(?:_|%5[fF]))(?:[A-Za-z0-9_-]|%[0-9A-Fa-f]{2}){6,}")


def redact(text: str) -> str:
    return TOKEN.sub(r"\1[redacted]", text)


def _redacted_args(args: Any) -> Any:
    if isinstance(args, dict):
        return {key: redact(value) if isinstance(value, str) else value for key, value in args.items()}
    if isinstance(args, tuple):
        return tuple(redact(value) if isinstance(value, str) else value for value in args)
    return args


class RedactTokens(logging.Filter):
    """Rewrites any bearer token in a log line (message and traceback) to its kind alone.

    On every handler that writes (Django's console handler, gunicorn's and so uvicorn's: see
    commhub.serving). The arguments are redacted one by one, keeping the record's shape for
    formatters that read them (uvicorn's access formatter unpacks its five); only a token hidden
    in some other object's text makes the message be rendered and replaced whole.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and TOKEN.search(record.msg):
            record.msg = redact(record.msg)
        if record.args:
            record.args = _redacted_args(record.args)
        message = record.getMessage()
        if TOKEN.search(message):
            record.msg, record.args = redact(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
