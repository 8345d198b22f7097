"""A webhook receiver for tests: a real HTTP server on 127.0.0.1 in a thread, recording every
request it gets (event id, type, whether its signature is valid) and the status it answered."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hub_webhooks.signing import signature_valid


@dataclass(frozen=True)
class Received:
    event_id: str
    event_type: str
    frame: dict[str, Any]
    headers: dict[str, str]
    signed: bool  # the signature checks out with the receiver's secret and is recent
    status: int  # what the receiver answered

    @property
    def seq(self) -> int:
        return int(self.event_id.rsplit(":", 1)[1])


class Receiver:
    """receiver.answer(status) sets what it answers next; stop() closes the port, start() opens it
    again on the same port. receiver.delay: seconds to wait before answering."""

    def __init__(self, secret: str = "") -> None:
        self.secret = secret
        self.received: list[Received] = []
        self.status = 200
        self.delay = 0.0
        self.answer_with: Callable[[Received], int] | None = None
        self.lock = threading.Lock()
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.delay:
                    time.sleep(receiver.delay)
                headers = {key.lower(): value for key, value in self.headers.items()}
                with receiver.lock:
                    got = Received(
                        event_id=headers.get("commhub-event-id", ""),
                        event_type=headers.get("commhub-event-type", ""),
                        frame=json.loads(body),
                        headers=headers,
                        signed=signature_valid(
                            secret=receiver.secret,
                            header=headers.get("commhub-signature", ""),
                            body=body,
                            now=time.time(),
                        ),
                        status=0,
                    )
                    status = receiver.answer_with(got) if receiver.answer_with else receiver.status
                    receiver.received.append(
                        Received(got.event_id, got.event_type, got.frame, got.headers, got.signed, status)
                    )
                reply = b'{"thanks": true}' if status < 300 else b"receiver says no"
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def snapshot(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def accepted(self) -> list[int]:
        """The seqs of the events it answered 2xx, in the order it got them."""
        return [got.seq for got in self.snapshot() if 200 <= got.status < 300]


def assert_in_order_at_least_once(received: list[Received], expected: list[int], *, redelivered_ok: int = 0) -> None:
    """Every expected event arrived, in order; an event arrived again only after an answer that was
    not 2xx (or, up to `redelivered_ok` times, after a 2xx its deliverer died before recording)."""
    seqs = [got.seq for got in received]
    collapsed = [seq for n, seq in enumerate(seqs) if n == 0 or seqs[n - 1] != seq]
    assert collapsed == expected, (
        f"out of order or missing: first difference at {_first_difference(collapsed, expected)}"
    )
    accepted_again = 0
    for before, after in itertools.pairwise(received):
        if before.seq == after.seq and 200 <= before.status < 300:
            accepted_again += 1
    assert accepted_again <= redelivered_ok, f"{accepted_again} events sent again after a 2xx"
    assert all(got.signed for got in received), "a request without a valid signature"


def _first_difference(got: list[int], expected: list[int]) -> str:
    for n, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            return f"position {n}: got {a}, expected {b}"
    return f"lengths {len(got)} and {len(expected)}"
