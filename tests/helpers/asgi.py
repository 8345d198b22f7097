"""One HTTP request straight to an ASGI app (the hub's `commhub.asgi.application`, or Django's own
handler), as a server would hand it over: for comparing what the lean path and Django answer."""

from __future__ import annotations

from typing import Any

from asgiref.testing import ApplicationCommunicator

Answer = tuple[int, dict[str, str], bytes]  # status, headers (lower-case names), body


def scope(
    *, method: str = "POST", path: str = "/mcp", query: str = "", host: str = "127.0.0.1", scheme: str = "http",
    **headers: str,
) -> dict[str, Any]:  # fmt: skip
    """An http scope; keyword headers are sent with `_` as `-` (content_type= is Content-Type)."""
    sent = {"host": host, "content-type": "application/json", **headers}
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": scheme,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(name.replace("_", "-").encode(), value.encode()) for name, value in sent.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def ask(app: Any, request: dict[str, Any], body: bytes = b"") -> Answer:
    """The app's whole answer to one request."""
    talk = ApplicationCommunicator(app, request)
    await talk.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await talk.receive_output(10)
    content = b""
    while True:
        part = await talk.receive_output(10)
        content += part.get("body", b"")
        if not part.get("more_body"):
            break
    await talk.wait(10)
    headers = {name.decode().lower(): value.decode() for name, value in start["headers"]}
    return start["status"], headers, content
