"""Which URLs a webhook may be sent to: http(s) only, and by default never to an address inside
the hub's own networks (loopback, private, link-local, ...), checked when a subscription is saved
and again right before each POST, which then connects to the address that was checked (DNS may
answer differently the second time). COMMHUB_WEBHOOKS_ALLOW_PRIVATE=true lifts the address rule."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from hub_core.errors import unusable_argument

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (address) and what to ask for (url, host for Host and TLS)."""

    url: str
    host: str
    address: str


def _forbidden(ip: IPAddress) -> str | None:
    """Why an address is not one a webhook may reach, or None."""
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv4 address inside an IPv6 one (mapped, 6to4, Teredo's client) is judged as itself.
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None and (inside := _forbidden(inner)) is not None:
            return f"{inside} inside {ip}"
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
    for flag, name in (
        ("is_loopback", "a loopback"),
        ("is_private", "a private"),
        ("is_link_local", "a link-local"),
        ("is_multicast", "a multicast"),
        ("is_reserved", "a reserved"),
        ("is_unspecified", "an unspecified"),
    ):
        if getattr(ip, flag):
            return f"{name} address ({ip})"
    if not ip.is_global:  # shared address space (100.64/10) and the like
        return f"not a public address ({ip})"
    return None


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:  # no such name, a label too long, ...
        raise unusable_argument("url", f"names a host that does not resolve ({host}: {exc})") from exc
    # Scope ids ("fe80::1%eth0") are dropped; the address itself is what is judged.
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


def webhook_target(url: str) -> Target:
    """Check a webhook URL now: its scheme, and every address its host resolves to. Raises
    HubError (invalid_argument on `url`) saying what is wrong; returns where to connect. The status
    is 409: the URL's shape is the schema's (hub_tools.webhook_tools, 400 there), what it names is
    what this refuses, as every refusal of schema-valid input."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise unusable_argument("url", f"is not a URL ({exc})") from exc
    if parts.scheme not in ("http", "https"):
        raise unusable_argument("url", "must start with http:// or https://")
    if not parts.hostname:
        raise unusable_argument("url", "names no host")
    if parts.username is not None or parts.password is not None:
        raise unusable_argument("url", "holds credentials; drop them: receivers check the CommHub-Signature header")
    if parts.fragment:
        raise unusable_argument("url", "has a #fragment, which is never sent; drop it")
    port = port or (443 if parts.scheme == "https" else 80)
    addresses = _resolve(parts.hostname, port)
    if not addresses:
        raise unusable_argument("url", f"names a host with no address ({parts.hostname})")
    if not settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE:
        # Every address must pass: a name that resolves to one public and one private address
        # would otherwise reach the private one whenever the resolver puts it first.
        for ip in addresses:
            if problem := _forbidden(ip):
                raise unusable_argument(
                    "url",
                    f"resolves to {problem}, which webhooks may not reach"
                    " (set COMMHUB_WEBHOOKS_ALLOW_PRIVATE=true to allow it on a trusted network)",
                )
    return Target(url=url, host=parts.hostname, address=str(addresses[0]))
