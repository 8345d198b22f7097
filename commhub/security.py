"""Response headers the browser enforces, and a log filter that keeps tokens and secrets out of logs."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from asgiref.sync import iscoroutinefunction
from django.conf import settings
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
# A query value whose name says it is a secret: token, secret or key, alone or ending a longer name
# (access_token, api_key, client_secret), in any case. A bearer token already redacted to its kind
# keeps it ("access_token=ntok_[redacted]").
SECRET_QUERY = re.compile(
    r"([?&;][A-Za-z0-9_.-]*?(?:token|secret|key)=)(?![nu]tok(?:_|%5[fF])\[redacted\])[^&;#\s\"']+",
    re.IGNORECASE,
)
# The configured metrics token is redacted wherever it appears (a path, a header's echo), not only
# as a query value; one shorter than this is not a secret worth the name, and replacing it in every
# line would garble them all.
CONFIGURED_MIN = 8


def _configured_secrets() -> list[str]:
    """COMMHUB_METRICS_TOKEN, as sent and as a URL percent-encodes it. Read from Django's settings once
    they are loaded, else from the environment (gunicorn sets up its logging before the application)."""
    token = settings.COMMHUB_METRICS_TOKEN if settings.configured else os.environ.get("COMMHUB_METRICS_TOKEN", "")
    if len(token) < CONFIGURED_MIN:
        return []
    return sorted({token, quote(token, safe=""), quote(token)}, key=len, reverse=True)


def redact(text: str) -> str:
    text = SECRET_QUERY.sub(r"\1[redacted]", TOKEN.sub(r"\1[redacted]", text))
    for secret in _configured_secrets():
        text = text.replace(secret, "[redacted]")
    return text


def _redacted_args(args: Any) -> Any:
    if isinstance(args, dict):
        return {key: redact(value) if isinstance(value, str) else value for key, value in args.items()}
    if isinstance(args, tuple):
        return tuple(redact(value) if isinstance(value, str) else value for value in args)
    return args


class RedactTokens(logging.Filter):
    """Rewrites any bearer token in a log line (message and traceback) to its kind alone, and any
    query value named token, secret or key, and the configured metrics token, to "[redacted]".

    On every handler that writes (Django's console handler, gunicorn's and so uvicorn's: see
    commhub.serving). The arguments are redacted one by one, keeping the record's shape for
    formatters that read them (uvicorn's access formatter unpacks its five); only a token hidden
    in some other object's text makes the message be rendered and replaced whole.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            # Not the format string itself: redacting a query value there ("?token=%s") would leave
            # an argument without its placeholder. Its rendering is checked below.
            record.args = _redacted_args(record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
