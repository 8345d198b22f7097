"""The MCP tool catalogue's size (issue 24): bytes and tokens of each tool profile's tools/list, in the
era without output schemas (2025-03-26, what a client that sends no MCP-Protocol-Version gets) and in
the latest (2026-07-28, output schemas included), and of the server instructions a client reads once.

Bytes are the HTTP body of the JSON-RPC answer, as POST /mcp?tools=PROFILE sends it. Tokens are counted
with tiktoken's o200k_base (the GPT-4o / Codex family) and cl100k_base encodings; Anthropic publishes no
offline tokenizer for Claude (its count_tokens is an API call), so these are the estimate. tiktoken
downloads its vocabularies at first use, which this machine cannot; the `bpe-openai` package ships the
same files inside its wheel, so they are put in a private tiktoken cache first, and tiktoken checks
each one against the SHA-256 it expects before using it. Without those two packages (bench/requirements.txt)
only bytes are printed.

    .venv/bin/python -m bench.catalogue
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
import os
import tempfile
from collections.abc import Callable

ERAS = {"2025-03-26": "no output schemas", "2026-07-28": "latest, output schemas"}
ENCODINGS = ("o200k_base", "cl100k_base")
# Issue 24's targets, in bytes of the tool list.
TARGETS = {"contract": 8_000, "agent": 16_000, "all": 30_000}
_VOCABULARY = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"  # tiktoken's cache key


def tokenizers() -> dict[str, Callable[[str], int]]:
    """Token counters by encoding name; none when tiktoken or bpe-openai is not installed."""
    try:
        import tiktoken
    except ImportError:
        return {}
    cache = os.environ.setdefault("TIKTOKEN_CACHE_DIR", tempfile.mkdtemp(prefix="tiktoken-"))
    counters = {}
    for name in ENCODINGS:
        try:
            packed = importlib.resources.files("bpe_openai.data").joinpath(f"{name}.tiktoken.gz").read_bytes()
        except ModuleNotFoundError:
            return {}
        key = hashlib.sha1(_VOCABULARY.format(name).encode()).hexdigest()
        with open(os.path.join(cache, key), "wb") as file:
            file.write(gzip.decompress(packed))
        encoding = tiktoken.get_encoding(name)  # checks the file's SHA-256 against tiktoken's own
        counters[name] = lambda text, encoding=encoding: len(encoding.encode(text, disallowed_special=()))
    return counters


def measure() -> list[dict[str, object]]:
    """One row per (era, profile): the tools/list answer's bytes and tools, and the instructions'."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
    django.setup()
    from django.test import Client
    from django.test.utils import setup_test_environment

    from hub_mcp.handlers import INSTRUCTIONS
    from hub_tools.profiles import NAMES

    setup_test_environment()  # the test client's host is allowed
    client = Client()
    rows: list[dict[str, object]] = []
    for version in ERAS:
        for profile in NAMES:
            body: dict[str, object] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            headers = {"MCP-Protocol-Version": version}
            if version == "2026-07-28":
                body["params"] = {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": version,
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                }
                headers["Mcp-Method"] = "tools/list"
            reply = client.post(
                f"/mcp?tools={profile}", json.dumps(body), content_type="application/json", headers=headers
            )
            assert reply.status_code == 200, reply.content[:500]
            text = reply.content.decode()
            tools = len(json.loads(text)["result"]["tools"])
            rows.append({"era": version, "profile": profile, "tools": tools, "text": text})
    rows.append({"era": "any", "profile": "instructions", "tools": "", "text": INSTRUCTIONS})
    return rows


def main() -> None:
    counters = tokenizers()
    rows = measure()
    names = list(counters) or ["(tokens: pip install -r bench/requirements.txt)"]
    print(f"{'era':<12} {'profile':<13} {'tools':>5} {'bytes':>7} " + " ".join(f"{n:>12}" for n in names))
    for row in rows:
        text = str(row["text"])
        tokens = " ".join(f"{counters[name](text):>12}" for name in counters)
        print(f"{row['era']:<12} {row['profile']:<13} {row['tools']:>5} {len(text.encode()):>7} {tokens}")
    latest = {row["profile"]: len(str(row["text"]).encode()) for row in rows if row["era"] == "2026-07-28"}
    bare = {row["profile"]: len(str(row["text"]).encode()) for row in rows if row["era"] == "2025-03-26"}
    print()
    for profile, target in TARGETS.items():
        print(
            f"target {profile:<9} <= {target:>6} bytes: {bare[profile]:>6} without output schemas "
            f"({'met' if bare[profile] <= target else 'missed'}), {latest[profile]:>6} with them "
            f"({'met' if latest[profile] <= target else 'missed'})"
        )
    if counters:
        print(f"\ntokens: tiktoken {', '.join(counters)} (vocabularies from bpe-openai, checked by tiktoken)")


if __name__ == "__main__":
    main()
