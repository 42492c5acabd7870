"""Who is asking: the client address every per-address rule uses.

Behind a reverse proxy every request arrives from the proxy's address. Only a
peer inside TRUSTED_PROXIES may say who the client is (X-Forwarded-For); the
client is then the right-most address in the chain that is not itself a
trusted proxy (a client can prepend anything it likes, but cannot change what
the trusted proxies appended after it). A request that carries forwarding
headers from a peer we do not trust is marked as such, so that a proxy on the
same host (which the operator forgot to name) never makes the whole Internet
look like loopback to /metrics.

One function (`client_of`) serves /metrics, the bad-key limit, admin login
throttling and the logs; nothing else reads REMOTE_ADDR.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Headers a proxy uses to name the client (WSGI META spelling); any of them from an untrusted peer
# means the peer is forwarding for someone we cannot identify.
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


@dataclass(frozen=True)
class Client:
    """The address a request is attributed to, and whether it is vouched for."""

    address: str  # "" when unknown
    # The peer sent forwarding headers but is not a trusted proxy: the real client is unknown.
    forwarded_by_untrusted_peer: bool = False


@lru_cache(maxsize=8)
def parse_networks(spellings: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """Networks as written in settings ("10.0.0.0/8", "127.0.0.1"); a bad one raises ValueError naming it."""
    networks = []
    for spelling in spellings:
        try:
            networks.append(ipaddress.ip_network(spelling.strip(), strict=False))
        except ValueError as error:
            raise ValueError(f"not a network: {spelling!r} ({error})") from None
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[::1]:8080"
        text = text[1:text.index("]")]
    elif text.count(":") == 1:  # "1.2.3.4:5678"
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def in_networks(address: str, networks: Iterable[IPNetwork]) -> bool:
    parsed = _address(address)
    return parsed is not None and any(parsed in network for network in networks)


def resolve_client(peer: str, forwarded_for: str, *, trusted: tuple[IPNetwork, ...],
                   other_forwarding: bool = False) -> Client:
    """The decision, pure: `peer` is the TCP peer, `forwarded_for` the X-Forwarded-For
    header ("" when absent), `other_forwarding` whether Forwarded / X-Real-IP came too."""
    peer_address = _address(peer)
    forwarded = bool(forwarded_for.strip()) or other_forwarding
    if peer_address is None:
        return Client("", forwarded)
    if not any(peer_address in network for network in trusted):
        return Client(str(peer_address), forwarded)
    client = peer_address
    for hop in reversed([part for part in forwarded_for.split(",") if part.strip()]):
        hop_address = _address(hop)
        if hop_address is None:  # garbage appended by someone we trust: the client is unknown
            return Client("", True)
        client = hop_address
        if not any(hop_address in network for network in trusted):
            break
    return Client(str(client))


def client_of(meta: Mapping[str, str]) -> Client:
    """The client of a request, from its WSGI META (or an ASGI scope translated to it)."""
    return resolve_client(
        meta.get("REMOTE_ADDR", ""), meta.get("HTTP_X_FORWARDED_FOR", ""),
        trusted=parse_networks(tuple(settings.TRUSTED_PROXIES)),
        other_forwarding=any(meta.get(header) for header in FORWARDING_HEADERS[1:]))


def meta_of_asgi_scope(scope: Mapping[str, object]) -> dict[str, str]:
    """The part of a WSGI META that `client_of` reads, from an ASGI scope (the MCP transport)."""
    client = scope.get("client") or ("", 0)
    meta = {"REMOTE_ADDR": str(client[0] or "")}  # type: ignore[index]
    for name, value in scope.get("headers") or []:  # type: ignore[attr-defined]
        key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
        if key in FORWARDING_HEADERS:
            meta[key] = f"{meta[key]},{value.decode('latin-1')}" if key in meta else value.decode("latin-1")
    return meta
