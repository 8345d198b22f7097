"""Only http(s) URLs, and never (by default) an address inside the hub's own networks: refused when
the subscription is saved, and again when an event is about to be sent."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest

from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.send import post_event
from hub_webhooks.services import webhook_create, webhooks_deliver
from tests.helpers import refused
from tests.hub_webhooks.conftest import FAST

pytestmark = pytest.mark.django_db

PRIVATE = [
    "http://127.0.0.1:8000/hook",
    "http://localhost/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.10/hook",
    "http://172.16.5.4/hook",
    "http://169.254.169.254/latest/meta-data",  # a cloud's metadata service
    "http://[::1]/hook",
    "http://[fd00::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",
    "http://100.64.0.1/hook",
    "http://240.0.0.1/hook",
    "http://[2002:7f00:1::]/hook",  # 6to4 around 127.0.0.1
    "http://[2002:a01:203::]/hook",  # 6to4 around 10.1.2.3
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo, its client 127.0.0.1
]


@pytest.mark.parametrize("url", PRIVATE)
def test_a_private_address_is_refused_by_default(owner, network, url):
    refusal = refused(webhook_create, actor=owner, network_id=network.id, url=url, event_types=[])
    assert refusal.code == "invalid_argument" and refusal.extra["field"] == "url"
    assert "COMMHUB_WEBHOOKS_ALLOW_PRIVATE" in refusal.message
    assert not Subscription.objects.exists()


@pytest.mark.parametrize(
    "url, problem",
    [
        ("ftp://example.com/hook", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("javascript:alert(1)", "http:// or https://"),
        ("http:///hook", "names no host"),
        ("https://user:pw@93.184.215.14/hook", "credentials"),
        ("http://93.184.215.14:99999/", "not a URL"),
    ],
)
def test_only_http_urls_to_a_host(owner, network, url, problem, allow_private):
    assert problem in refused(webhook_create, actor=owner, network_id=network.id, url=url, event_types=[]).message


def test_a_public_address_is_accepted(owner, network):
    subscription, secret = webhook_create(
        actor=owner, network_id=network.id, url="https://93.184.215.14/hook", event_types=["new_task"]
    )
    assert subscription.url == "https://93.184.215.14/hook" and secret.startswith("whsec_")


def test_the_setting_allows_a_private_address(owner, network, allow_private):
    subscription, _ = webhook_create(actor=owner, network_id=network.id, url="http://127.0.0.1:9/hook", event_types=[])
    assert subscription.state == Subscription.State.ACTIVE


def test_the_address_is_checked_again_at_send_time(subscribe, emit, receiver, http, settings):
    subscription = subscribe()  # allowed when it was saved
    emit(2)
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = False  # and no longer (as if DNS now answered 127.0.0.1)

    webhooks_deliver(owner="test-deliverer", client=http, policy=FAST)

    assert receiver.snapshot() == []  # nothing sent
    attempt = Delivery.objects.get(subscription=subscription)
    assert attempt.outcome == Delivery.Outcome.REFUSED and "loopback" in attempt.error
    after = Subscription.objects.get(pk=subscription.pk)
    assert after.cursor == subscription.cursor and after.attempts == 1  # retried later, like any failure


def test_a_redirect_is_not_followed(subscribe, emit, receiver, http):
    subscription = subscribe()
    emit(1)
    receiver.status = 302  # (with no Location: a follower would fail differently; this one records it)

    webhooks_deliver(owner="test-deliverer", client=http, policy=FAST)

    attempt = Delivery.objects.get(subscription=subscription)
    assert attempt.outcome == Delivery.Outcome.FAILED and attempt.status_code == 302
    assert len(receiver.snapshot()) == 1
    assert Subscription.objects.get(pk=subscription.pk).cursor == subscription.cursor


@pytest.fixture
def tls_receiver(tmp_path):
    """An HTTPS server on 127.0.0.1 with a certificate for "localhost" (needs the openssl command)."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            hosts.append(self.headers["Host"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server.server_address[1], cert, hosts
    server.shutdown()
    server.server_close()


def test_https_goes_to_the_checked_address_and_verifies_the_name(tls_receiver, allow_private):
    port, cert, hosts = tls_receiver
    url = f"https://localhost:{port}/hook"
    sent = dict(secret="s", event_id="n:1", event_type="new_task", body=b"{}", timeout=5)
    with httpx.Client(verify=ssl.create_default_context(cafile=str(cert))) as trusting:
        answer = post_event(client=trusting, url=url, **sent)
    assert answer.ok and hosts == [f"localhost:{port}"]  # connected to 127.0.0.1, named localhost
    with httpx.Client() as default:  # the certificate is checked (self-signed: refused)
        answer = post_event(client=default, url=url, **sent)
    assert not answer.ok and "CERTIFICATE_VERIFY_FAILED" in answer.error
