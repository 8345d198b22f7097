"""One POST is bounded as a whole by its timeout: a receiver that drips its answer a byte at a time
cannot hold a deliverer past it (httpx alone bounds each read, not the request), so it can never
outlive the deliverer's lease; an answer whose status came in time counts even if its body drips."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from hub_webhooks.send import post_event, webhook_client


@pytest.fixture
def dripping() -> Iterator[tuple[str, list[bytes]]]:
    """A server on 127.0.0.1 answering `HTTP/1.1 200 OK` + headers (and a body), a byte every 0.1 s
    from the byte the test sets; the URL and a box for what it should send."""
    listener = socket.create_server(("127.0.0.1", 0))
    answer: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                peer, _ = listener.accept()
            except TimeoutError:
                continue
            with peer:
                peer.recv(65536)
                whole, fast = answer
                try:
                    peer.sendall(whole[: len(fast)])
                    for byte in whole[len(fast) :]:
                        if stop.is_set():
                            return
                        peer.sendall(bytes([byte]))
                        time.sleep(0.1)
                except OSError:
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook", answer
    stop.set()
    thread.join(5)
    listener.close()


def post(url: str, timeout: float):
    with webhook_client() as client:
        started = time.monotonic()
        answer = post_event(
            client=client, url=url, secret="s", event_id="n:1", event_type="t", body=b"{}", timeout=timeout
        )
        return answer, time.monotonic() - started


def test_an_answer_dripping_its_headers_ends_as_a_timeout_at_the_deadline(settings, dripping):
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = True
    url, answer = dripping
    headers = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Slow: " + b"x" * 100 + b"\r\n\r\nok"
    answer += [headers, b"HTTP/1.1 2"]  # the status line's start at once, then a byte every 0.1 s

    got, took = post(url, timeout=1.0)

    assert got.status_code is None and "Timeout" in got.error and not got.ok
    assert took < 2.0  # each byte came within httpx's read timeout: only the deadline ends it


def test_a_status_in_time_counts_though_its_body_drips(settings, dripping):
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = True
    url, answer = dripping
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n"
    answer += [head + b"y" * 200, head + b"yy"]

    got, took = post(url, timeout=1.0)

    assert got.status_code == 200 and got.ok and got.excerpt.startswith("yy")
    assert took < 2.0
