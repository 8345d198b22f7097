"""One signed POST of one event body to a checked address: never following a redirect, the whole
attempt bounded by its timeout, the answer read only as far as the excerpt the deliveries page shows.

httpx's timeouts bound each socket operation, not a request: a receiver sending its answer a byte at
a time could hold a POST for ever, past the deliverer's lease (another deliverer would then send the
event again, and later ones before it ends). So the deliverers' client (`webhook_client`) runs on a
network backend that gives each connect, read and write only what is left of the attempt's deadline
(`post_event` sets it, per thread), and the attempt ends as a timeout when it is spent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from hub_core.errors import HubError
from hub_webhooks.addresses import webhook_target
from hub_webhooks.signing import SIGNATURE_HEADER, signature

USER_AGENT = "CommHub-Webhooks/1"
EXCERPT_CHARS = 1000  # of a response body, kept with the delivery
ERROR_CHARS = 500


@dataclass(frozen=True)
class Answer:
    """How one attempt went: a status (any) or an error (no answer, or not sent)."""

    status_code: int | None
    error: str
    excerpt: str
    duration_ms: int
    refused: bool = False  # not sent at all: the address check failed

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class _Deadline(threading.local):
    at: float | None = None  # time.monotonic() by which this thread's attempt must be over


_DEADLINE = _Deadline()


def _left(timeout: float | None) -> float | None:
    """A socket operation's timeout, cut to what is left of the attempt."""
    if _DEADLINE.at is None:
        return timeout
    left = _DEADLINE.at - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the attempt took its whole timeout")
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _BoundedStream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        return _BoundedStream(self._backend.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def webhook_client() -> httpx.Client:
    """The client deliverers POST with: every attempt bounded as a whole (see above), no proxy
    from the environment (the POST must go to the address just checked), keep-alive connections."""
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx offers no hook for the network backend: the pool it built is replaced by the same pool
    # on ours (tests/hub_webhooks/test_send.py holds a dripping receiver to its timeout).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False), network_backend=_BoundedBackend()
    )
    return httpx.Client(transport=transport, trust_env=False)


def body_for(frame: dict[str, Any]) -> bytes:
    """The exact bytes signed and sent (compact, UTF-8, keys in the frame's order)."""
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode()


def post_event(
    *,
    client: httpx.Client,
    url: str,
    secret: str,
    event_id: str,
    event_type: str,
    body: bytes,
    timeout: float,
) -> Answer:
    started = time.monotonic()
    try:
        # Checked again now, not only at save: the name may resolve elsewhere since. The request
        # goes to the address just checked (Host and TLS SNI keep the name, so certificates are
        # verified against it): a second lookup by the HTTP client could answer differently.
        target = webhook_target(url)
    except HubError as refusal:
        return Answer(None, refusal.message[:ERROR_CHARS], "", _ms(started), refused=True)
    request_url = httpx.URL(url).copy_with(host=target.address)
    stamp = int(time.time())
    headers = {
        "Host": httpx.URL(url).netloc.decode("ascii"),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: signature(secret=secret, timestamp=stamp, body=body),
        "CommHub-Event-Id": event_id,
        "CommHub-Event-Type": event_type,
    }
    _DEADLINE.at = started + timeout
    try:
        with client.stream(
            "POST",
            request_url,
            content=body,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            extensions={"sni_hostname": target.host},
            follow_redirects=False,
        ) as response:
            excerpt = _excerpt(response)
            return Answer(response.status_code, "", excerpt, _ms(started))
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Answer(None, error[:ERROR_CHARS], "", _ms(started))
    finally:
        _DEADLINE.at = None


def _excerpt(response: httpx.Response) -> str:
    """The start of the answer's body, read no further than needed (and within the attempt's deadline)."""
    kept = bytearray()
    try:
        for chunk in response.iter_bytes():
            kept.extend(chunk)
            if len(kept) >= EXCERPT_CHARS * 4:
                break
    except httpx.TimeoutException:
        pass  # the answer's status came in time: a body still dripping when time is up is cut there
    return kept.decode("utf-8", errors="replace")[:EXCERPT_CHARS]


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
