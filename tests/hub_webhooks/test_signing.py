"""The signature round trip: what the hub signs, a receiver verifies (and README's snippet does
the same); a changed body, another secret or an old timestamp fails."""

from __future__ import annotations

import re
import time

from hub_webhooks.signing import secret_new, signature, signature_valid
from tests.helpers import ROOT


def test_a_signature_verifies_and_nothing_else_does():
    secret, body, now = secret_new(), b'{"id":7,"type":"new_task"}', int(time.time())
    header = signature(secret=secret, timestamp=now, body=body)
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", header)
    assert signature_valid(secret=secret, header=header, body=body, now=now + 10)
    assert not signature_valid(secret=secret, header=header, body=body + b" ", now=now)
    assert not signature_valid(secret=secret_new(), header=header, body=body, now=now)
    assert not signature_valid(secret=secret, header=header, body=body, now=now + 301)  # a replay, later
    assert not signature_valid(secret=secret, header="v1=abc", body=body, now=now)


def _readme_snippet() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Webhooks") :]
    return section[section.index("```python") + len("```python") : section.index("```", section.index("```python") + 9)]


def test_the_readme_receiver_snippet_verifies_what_the_hub_signs():
    namespace: dict = {}
    exec(_readme_snippet(), namespace)
    verify = namespace["verify"]
    secret, body, now = secret_new(), b'{"id":1}', int(time.time())
    header = signature(secret=secret, timestamp=now, body=body)
    assert verify(secret, header, body) is True
    assert verify(secret, header, b'{"id":2}') is False
    old = signature(secret=secret, timestamp=now - 600, body=body)
    assert verify(secret, old, body) is False
