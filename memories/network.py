"""Who is asking: the client address every per-address rule uses.

Behind a reverse proxy every request arrives from the proxy's address. Only a
peer inside TRUSTED_PROXIES may say who the client is, in any of the three
headers proxies use: X-Forwarded-For, Forwarded (RFC 7239, its `for=`) and
X-Real-IP. One rule reads them all (`resolve_client`): in each header present,
the client is the right-most address that is not itself a trusted proxy (a
client can prepend anything it likes, but cannot change what the trusted
proxies appended after it). A header whose hops are all trusted proxies has no
opinion (a client-sent `X-Real-IP: 127.0.0.1` passed through untouched names
nobody); headers that name different clients, or a hop that is not an address,
leave the client unknown, never the proxy's own address. A request that carries
forwarding headers from a peer we do not trust is marked as such, so that a
proxy on the same host (which the operator forgot to name) never makes the
whole Internet look like loopback to /metrics.

One function (`client_of`) serves /metrics, the bad-key limit, admin login
throttling and the logs; nothing else reads REMOTE_ADDR. Limits count a client
by `client_bucket`: an IPv4 address, or an IPv6 client's /64 (one host or
household owns a whole /64 and can pick any address in it).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Headers a proxy uses to name the client (WSGI META spelling); any of them from an untrusted peer
# means the peer is forwarding for someone we cannot identify.
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")

_UNREADABLE = object()  # a hop that is not an address ("unknown", "_hidden", garbage)


@dataclass(frozen=True)
class Client:
    """The address a request is attributed to, and whether it is vouched for."""

    address: str  # "" when unknown
    # The peer sent forwarding headers but is not a trusted proxy, or the trusted proxies' headers
    # do not say who the client is: the real client is unknown.
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


def _address(text: str) -> IPAddress | None:
    text = text.strip().strip('"')
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


def forwarded_for_hops(header: str) -> list[str]:
    """The `for=` of each element of an RFC 7239 Forwarded header, left to right ("" for an element
    without one, which says nothing about the client). Commas and semicolons inside quotes are kept."""
    hops = []
    for element in re.findall(r'(?:[^,"]|"[^"]*")+', header):
        found = ""
        for pair in re.findall(r'(?:[^;"]|"[^"]*")+', element):
            name, _, value = pair.partition("=")
            if name.strip().lower() == "for":
                found = value.strip() or "unknown"
        hops.append(found)
    return hops


def _header_client(hops: list[str], trusted: tuple[IPNetwork, ...]) -> IPAddress | object | None:
    """One header's opinion: the right-most hop not a trusted proxy; None when every hop is trusted
    (no opinion); _UNREADABLE when a hop before the client is not an address."""
    for hop in reversed([hop for hop in hops if hop.strip()]):
        hop_address = _address(hop)
        if hop_address is None:
            return _UNREADABLE
        if not any(hop_address in network for network in trusted):
            return hop_address
    return None


def resolve_client(peer: str, forwarded_for: str = "", *, trusted: tuple[IPNetwork, ...], forwarded: str = "",
                   real_ip: str = "") -> Client:
    """The decision, pure: `peer` is the TCP peer, the others the X-Forwarded-For, Forwarded and
    X-Real-IP headers ("" when absent). Every header present is read the same way; they must agree."""
    peer_address = _address(peer)
    chains = [hops for hops in (forwarded_for.split(","), forwarded_for_hops(forwarded), real_ip.split(","))
              if any(hop.strip() for hop in hops)]
    if peer_address is None:
        return Client("", bool(chains))
    if not any(peer_address in network for network in trusted):
        return Client(str(peer_address), bool(chains))
    opinions = [_header_client(hops, trusted) for hops in chains]
    named = {opinion for opinion in opinions if opinion is not None}
    if len(named) > 1 or _UNREADABLE in named:  # headers disagree, or one is garbage: nobody is vouched for
        return Client("", True)
    if named:
        return Client(str(named.pop()))
    if chains:  # every hop trusted (a proxy's own request): the left-most hop, as the proxy said
        return Client(str(_address(next(hop for hop in chains[0] if hop.strip()))))
    return Client(str(peer_address))


def client_of(meta: Mapping[str, str]) -> Client:
    """The client of a request, from its WSGI META (or an ASGI scope translated to it)."""
    return resolve_client(
        meta.get("REMOTE_ADDR", ""), meta.get("HTTP_X_FORWARDED_FOR", ""),
        trusted=parse_networks(tuple(settings.TRUSTED_PROXIES)),
        forwarded=meta.get("HTTP_FORWARDED", ""), real_ip=meta.get("HTTP_X_REAL_IP", ""))


def client_bucket(address: str) -> str:
    """Pure: what a per-client limit counts an address as. An IPv6 client is its /64 (one host or
    household is handed a whole /64 and can walk through it, one address per guess); an IPv4 client
    its address; an unknown client ("") one shared bucket, so spoofing headers buys no fresh count."""
    parsed = _address(address)
    if parsed is None:
        return "unknown"
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


def meta_of_asgi_scope(scope: Mapping[str, object]) -> dict[str, str]:
    """The part of a WSGI META that `client_of` reads, from an ASGI scope (the MCP transport)."""
    client = scope.get("client") or ("", 0)
    meta = {"REMOTE_ADDR": str(client[0] or "")}  # type: ignore[index]
    for name, value in scope.get("headers") or []:  # type: ignore[attr-defined]
        key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
        if key in FORWARDING_HEADERS:
            meta[key] = f"{meta[key]},{value.decode('latin-1')}" if key in meta else value.decode("latin-1")
    return meta
