"""The servers' access logs, through the token-redacting filter (commhub.security.RedactTokens).

Neither server logs requests through Django's LOGGING on its own:

- daphne (`make run`) writes its access lines straight to a stream (daphne.access.AccessLogGenerator
  on stdout), never through `logging`. `python -m commhub.serving` is daphne's own command line
  (every flag as `python -m daphne`) whose access lines go to the `daphne.access` logger instead:
  they reach the console handler of Django's LOGGING, which redacts them.
- uvicorn workers under gunicorn (production: UvicornWorker below, on uvloop and httptools) log
  each request on `uvicorn.access`, whose handlers the worker takes from gunicorn's access log
  (`--access-logfile`), and errors on `uvicorn.error` with gunicorn's error handlers. GunicornLogger
  (named by gunicorn.conf.py) puts the filter on every handler gunicorn makes, so whatever gunicorn
  or uvicorn writes through them is redacted.

Both servers write a request's access line from within the application's `send` of its last
message (daphne) or its first (uvicorn), so under COMMHUB_LOG_FORMAT=json that line carries the
request's id, caller and network like every other line of it (commhub.logs).
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from typing import Any

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface
from daphne.server import Server
from gunicorn.config import Config
from gunicorn.glogging import Logger
from uvicorn_worker import UvicornWorker as _UvicornWorker

from commhub.logs import JsonFormatter
from commhub.security import RedactTokens

access_logger = logging.getLogger("daphne.access")


class DaphneAccessLog(AccessLogGenerator):
    """daphne's access line, unchanged in form, logged instead of written."""

    def __init__(self) -> None:
        super().__init__(stream=None)

    def write_entry(
        self,
        host: str | None,
        date: datetime,
        request: str,
        status: int | None = None,
        length: int | None = None,
        ident: str | None = None,
        user: str | None = None,
    ) -> None:
        access_logger.info(
            '%s %s %s [%s] "%s" %s %s',
            host,
            ident or "-",
            user or "-",
            date.strftime("%d/%b/%Y:%H:%M:%S"),
            request,
            status or "-",
            length or "-",
        )


class _Server(Server):
    def __init__(self, *args: Any, action_logger: Any = None, **kwargs: Any) -> None:
        # daphne's command line still decides whether there is an access log (-v, --access-log);
        # only where its lines go changes.
        super().__init__(*args, action_logger=DaphneAccessLog() if action_logger else None, **kwargs)


class DaphneCommandLine(CommandLineInterface):
    server_class = _Server


class GunicornLogger(Logger):
    """gunicorn's logger with the redacting filter on every handler it sets up (access and error),
    and under COMMHUB_LOG_FORMAT=json the hub's JSON lines on them too (uvicorn logs each access
    line from within the application's `send`, so it carries the request's id)."""

    def setup(self, cfg: Config) -> None:
        super().setup(cfg)
        # The environment, not Django's settings: gunicorn sets up its logging before it loads the
        # application. A wrong value stops the workers when they read the settings.
        json_lines = os.environ.get("COMMHUB_LOG_FORMAT") == "json"
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                if not any(isinstance(existing, RedactTokens) for existing in handler.filters):
                    handler.addFilter(RedactTokens())
                if json_lines:
                    handler.setFormatter(JsonFormatter())


class UvicornWorker(_UvicornWorker):
    """Production's worker class: uvicorn on uvloop and httptools, named rather than left to
    uvicorn's `auto` (which falls back to asyncio and h11 without a word when either is missing).
    Issue 29 measured it against asyncio+h11 and granian: docs/PERFORMANCE.md "Serving"."""

    CONFIG_KWARGS: dict[str, Any] = {"loop": "uvloop", "http": "httptools"}


if __name__ == "__main__":
    DaphneCommandLine.entrypoint()
