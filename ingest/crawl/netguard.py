"""The SSRF guard: which addresses a crawler may connect to, and an httpx transport that resolves
each host itself, vets every address and connects only to the address it vetted.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable

import httpcore
import httpx

from store.errors import FetchError

#: Cloud metadata endpoints stay blocked even when a tenant allows private networks: they hand
#: out the server's credentials, and no website is published there.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _addresses_to_judge(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The address itself plus any IPv4 address it tunnels to.

    IPv4-mapped and NAT64 addresses are judged by the IPv4 address alone (their IPv6 ranges
    count as reserved); 6to4 and Teredo addresses must pass as both.
    """
    if isinstance(ip, ipaddress.IPv4Address):
        return [ip]
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _NAT64:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip, ip.sixtofour]
    if ip.teredo is not None:
        return [ip, ip.teredo[1]]
    return [ip]


def address_block_reason(address: str, allow_private: bool = False) -> str | None:
    """None when a crawler may connect to ``address``, else ``blocked_private_address``.

    Refuses loopback, private, link-local, multicast, reserved, unspecified, shared (CGNAT)
    and documentation ranges, for IPv4 and IPv6 and for IPv4 tunnelled in IPv6.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "blocked_private_address"
    candidates = _addresses_to_judge(ip)
    if any(c in _METADATA_ADDRESSES for c in candidates):
        return "blocked_private_address"
    if allow_private:
        return None
    for candidate in candidates:
        if not candidate.is_global or candidate.is_multicast or candidate.is_reserved:
            return "blocked_private_address"
        if candidate.is_unspecified or candidate.is_loopback or candidate.is_link_local:
            return "blocked_private_address"
    return None


class _TransientFetchError(FetchError):
    """A failure worth retrying, raised inside this package only: ``Fetcher.get`` retries it
    and raises a plain FetchError with the same message and reason when retries run out."""


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, refuses blocked addresses and connects to the address it
    vetted, so a DNS answer that changes between check and connect (rebinding) cannot slip
    through. TLS still verifies and sends SNI for the URL's host name (httpcore does that).
    """

    def __init__(self, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port)
        for address in addresses:
            if (reason := address_block_reason(address, self._allow_private)) is not None:
                # One bad address refuses the host: a name that resolves to both a public and
                # a private address is the classic rebinding set-up.
                raise FetchError(f"{host} resolves to a refused address {address}", reason=reason)
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )  # fmt: skip
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self, *args: object, **kwargs: object
    ) -> httpcore.AsyncNetworkStream:
        raise FetchError("unix sockets are not crawled", reason="blocked_private_address")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        # EAI_AGAIN is the resolver saying "try later"; any other answer will not change.
        error = _TransientFetchError if exc.errno == socket.EAI_AGAIN else FetchError
        raise error(f"cannot resolve {host}: {exc.strerror}", reason="dns_error") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport with the connection pool swapped for one on the guarded backend.

    Reusing AsyncHTTPTransport keeps httpx's request mapping and exception translation; the
    swap relies on its ``_pool`` attribute (stable since httpx 0.18), checked at construction.
    """

    def __init__(self, allow_private: bool) -> None:
        ssl_context = httpx.create_ssl_context()
        super().__init__(verify=ssl_context, trust_env=False)
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("unsupported httpx version: cannot install the SSRF guard")
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_GuardedBackend(allow_private),
        )
