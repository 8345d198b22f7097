"""gunicorn's settings for CommHub; gunicorn reads this file from the directory it starts in (the
project root, as README's Production command runs it).

Every line gunicorn and its uvicorn workers log (access lines with their query strings, errors)
passes the filter that rewrites bearer tokens to `ntok_[redacted]` (commhub/serving.py).

With PROMETHEUS_MULTIPROC_DIR set, each worker writes its metrics to files there and /metrics adds
them up (commhub/metrics.py): the directory starts empty, and a worker that exits takes its live
gauges (open streams) with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

logger_class = "commhub.serving.GunicornLogger"
# uvicorn on uvloop and httptools (README's command names it too; docs/PERFORMANCE.md "Serving").
worker_class = "commhub.serving.UvicornWorker"


def on_starting(server: Any) -> None:
    # A previous run's files would be added to this run's counts (prometheus_client's advice: wipe it).
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()


def post_fork(server: Any, worker: Any) -> None:
    # Traces (commhub.tracing), if OTEL_* switch them on: each worker its own exporter and instrumentation,
    # before it builds the app (commhub.asgi's own call then does nothing).
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
    from commhub import tracing

    tracing.configure()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
