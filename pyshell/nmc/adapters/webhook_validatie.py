"""Validating a DV's webhook before it is used, and when its URL changes (SPEC §7).

Two checks, in this order:

1. **The target** (SSRF): every address the URL's host resolves to must be a public one.
   Loopback, link-local, private (RFC 1918, unique local), shared (100.64/10), reserved,
   multicast and unspecified addresses are refused (`adres-geweigerd`), also when carried in
   an IPv6 form (IPv4-mapped, -compatible or -translated, NAT64, 6to4; see
   `Adresbeleid.weigering`), unless they lie in a network that is explicitly allowed:
   `NMC_WEBHOOK_TOEGESTANE_NETWERKEN`, a comma-separated list of CIDRs (for example
   `127.0.0.0/8,::1/128` for tests and demos whose receivers listen on loopback). A name that
   does not resolve is `onbereikbaar`.
2. **The handshake** of the CloudEvents HTTP webhook spec that the NL GOV profile for
   CloudEvents adopts: `OPTIONS <url>` with `WebHook-Request-Origin: <the NMC's origin>`
   (`NMC_WEBHOOK_ORIGIN`; default the host of NMC_API_SERVER_URL, else `nmc`). The endpoint
   agrees with a 2xx carrying `WebHook-Allowed-Origin` equal to that origin or `*`; anything
   else is `geen-handshake`, no answer (a connection error or a timeout) `onbereikbaar`.
   Redirects are not followed.

The outcome (`Validatie`) is recorded with nmc.record_webhookvalidatie: `nmc admin dv apply`
validates a new or changed URL and reports it, and the webhook task validates a URL that is
not validated yet before its first delivery (and again, with backoff, while it fails). The
error classes name no URL, address or content.

The address check is made again before every call, not only at validation (`pin_target`):
the host is resolved, every address checked, and the call connects to the checked address
(`Doel`: `Host`, SNI and certificate verification still name the host), for the handshake,
each webhook delivery and each https: beheer report. A name that later resolves to a refused
address (a DNS change, DNS rebinding) is refused at that call; one that resolves elsewhere
between check and connect is not followed. The platform's egress policy is the second line.
"""

import asyncio
import ipaddress
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from nmc import settings_env
from nmc.errors import NmcError

REQUEST_ORIGIN = "WebHook-Request-Origin"
ALLOWED_ORIGIN = "WebHook-Allowed-Origin"
ALLOWED_NETWORKS_ENV = "NMC_WEBHOOK_TOEGESTANE_NETWERKEN"
ORIGIN_ENV = "NMC_WEBHOOK_ORIGIN"
TIMEOUT_SECONDS = 10.0

GELDIG = "geldig"
ADRES_GEWEIGERD = "adres-geweigerd"
GEEN_HANDSHAKE = "geen-handshake"
ONBEREIKBAAR = "onbereikbaar"
ONGELDIGE_URL = "ongeldige-url"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]


@dataclass(frozen=True)
class Validatie:
    """The outcome word (nmc.webhookvalidatie.uitkomst) and a short error class."""

    uitkomst: str
    detail: str | None = None

    @property
    def geldig(self) -> bool:
        return self.uitkomst == GELDIG

    def describe(self) -> str:
        return self.uitkomst if self.detail is None else f"{self.uitkomst} ({self.detail})"


@dataclass(frozen=True)
class Adresbeleid:
    """Which non-public networks a webhook may point into after all (none by default)."""

    toegestaan: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> "Adresbeleid":
        networks = []
        for part in (text or "").replace(" ", ",").split(","):
            if not part:
                continue
            try:
                networks.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise NmcError(
                    f"{ALLOWED_NETWORKS_ENV}: {part!r} is not a network (CIDR, e.g. 127.0.0.0/8)"
                ) from None
        return cls(tuple(networks))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Adresbeleid":
        env = os.environ if environ is None else environ
        return cls.parse(settings_env.text(env, ALLOWED_NETWORKS_ENV))

    def weigering(self, address: Address) -> str | None:
        """Why `address` is refused as a webhook target (an error class), or None.

        An IPv6 address that carries an IPv4 address is judged by the address it carries
        (a translator or tunnel delivers to that one): IPv4-mapped, NAT64 with the
        well-known prefix, 6to4; the IPv4-compatible and IPv4-translated forms, which no
        public route carries, are refused even when the address they hold may be called.
        The local-use NAT64 prefix and site-local addresses (what they reach is the local
        network's choice) are refused unless allowed."""
        if isinstance(address, ipaddress.IPv4Address):
            return self._judge(address)
        if address.ipv4_mapped is not None:
            return self._judge(address.ipv4_mapped)
        if address in _NAT64_LOKAAL or address.is_site_local:
            return None if self._allowed(address) else "niet-publiek"
        embedded = _embedded_ipv4(address)
        if embedded is None:
            return self._judge(address)
        ipv4, routable = embedded
        reason = self._judge(ipv4)
        if reason is None and not routable and not self._allowed(address):
            return "gereserveerd"
        return reason

    def allows(self, address: str) -> bool:
        """Whether `address` lies in an explicitly allowed network (an http: beheer channel
        may only point there)."""
        parsed = ipaddress.ip_address(address)
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            parsed = parsed.ipv4_mapped
        return self._allowed(parsed)

    def _judge(self, address: Address) -> str | None:
        reason = _not_public(address)
        return None if reason is None or self._allowed(address) else reason

    def _allowed(self, address: Address) -> bool:
        return any(address in network for network in self.toegestaan)


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOKAAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBEL = ipaddress.IPv6Network("::/96")
_IPV4_VERTAALD = ipaddress.IPv6Network("::ffff:0:0:0/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, bool] | None:
    """The IPv4 address an IPv6 transition form carries, and whether that form is routed
    (NAT64, 6to4) or not (IPv4-compatible, IPv4-translated); None for any other address."""
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64:
        return low32, True
    if address.sixtofour is not None:
        return address.sixtofour, True
    if address in _IPV4_VERTAALD or (address in _IPV4_COMPATIBEL and int(address) > 1):
        return low32, False  # :: and ::1 are the unspecified and the loopback address
    return None


def _not_public(address: Address) -> str | None:
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_unspecified:
        return "niet-gespecificeerd"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "privaat"
    if not address.is_global:
        return "niet-publiek"
    return None


def origin_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The NMC's origin in the handshake: NMC_WEBHOOK_ORIGIN, else NMC_API_SERVER_URL's host."""
    env = os.environ if environ is None else environ
    origin = settings_env.text(env, ORIGIN_ENV)
    if origin:
        return origin
    host = urlsplit(settings_env.text(env, "NMC_API_SERVER_URL", "")).hostname
    return host or "nmc"


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for host (socket.gaierror when none)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return sorted({info[4][0] for info in infos})


@dataclass(frozen=True)
class Doel:
    """A target that passed the address check, pinned to the address that was checked.

    The call connects to `adres` (no second lookup: a name that is made to resolve elsewhere
    between the check and the connect, DNS rebinding, is not followed), while the request
    still names the host: `Host` is the URL's host and port, TLS sends it as SNI and the
    certificate is verified against it (httpcore's `sni_hostname` extension, which
    nmc.adapters.aio_backend honours too). `url` stays what was registered (the token's
    `aud`)."""

    url: str
    adres: str

    def request_url(self) -> httpx.URL:
        return httpx.URL(self.url).copy_with(host=self.adres)

    def request_headers(self) -> dict[str, str]:
        return {"Host": httpx.URL(self.url).netloc.decode("ascii")}

    def extensions(self) -> dict[str, str]:
        return {"sni_hostname": httpx.URL(self.url).host}


async def pin_target(
    url: str, beleid: Adresbeleid, resolver: Resolver = system_resolver
) -> Doel | Validatie:
    """The URL pinned to an address of its host when every address it resolves to may be
    called; else the refusal. Made again before every call: an address is never trusted
    because it was fine when the webhook was validated."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return Validatie(ONGELDIGE_URL, "url")
    if parts.scheme not in ("http", "https") or not host:
        return Validatie(ONGELDIGE_URL, "schema-of-host")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses: Iterable[str] = [str(literal)]
    else:
        try:
            addresses = await resolver(host, port)
        except (OSError, UnicodeError):
            return Validatie(ONBEREIKBAAR, "naam-onbekend")
        if not addresses:
            return Validatie(ONBEREIKBAAR, "naam-onbekend")
    checked = [ipaddress.ip_address(text.split("%", 1)[0]) for text in addresses]
    for address in checked:
        reason = beleid.weigering(address)
        if reason is not None:
            return Validatie(ADRES_GEWEIGERD, reason)
    return Doel(url, str(checked[0]))


async def check_target(
    url: str, beleid: Adresbeleid, resolver: Resolver = system_resolver
) -> Validatie | None:
    """None when every address of the URL's host may be called, else the refusal."""
    target = await pin_target(url, beleid, resolver)
    return target if isinstance(target, Validatie) else None


async def send(
    client: httpx.AsyncClient,
    method: str,
    target: Doel,
    *,
    content: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """One call to a pinned target (redirects not followed: the check was for this URL)."""
    return await client.request(
        method,
        target.request_url(),
        content=content,
        headers={**(headers or {}), **target.request_headers()},
        extensions=target.extensions(),
        follow_redirects=False,
    )


async def handshake(client: httpx.AsyncClient, target: Doel | str, origin: str) -> Validatie:
    """The CloudEvents webhook handshake (validation request) against `target` (a URL as it
    is, without a check: tests; or a checked, pinned target)."""
    try:
        if isinstance(target, Doel):
            response = await send(client, "OPTIONS", target, headers={REQUEST_ORIGIN: origin})
        else:
            response = await client.request(
                "OPTIONS", target, headers={REQUEST_ORIGIN: origin}, follow_redirects=False
            )
    except httpx.TimeoutException:
        return Validatie(ONBEREIKBAAR, "timeout")
    except (httpx.TransportError, httpx.InvalidURL):
        return Validatie(ONBEREIKBAAR, "verbinding")
    if not 200 <= response.status_code < 300:
        return Validatie(GEEN_HANDSHAKE, f"http-{response.status_code}")
    allowed = response.headers.get(ALLOWED_ORIGIN)
    if allowed is None:
        return Validatie(GEEN_HANDSHAKE, "geen-allowed-origin")
    if allowed.strip() not in (origin, "*"):
        return Validatie(GEEN_HANDSHAKE, "andere-origin")
    return Validatie(GELDIG)


async def validate(
    client: httpx.AsyncClient,
    url: str,
    *,
    origin: str,
    beleid: Adresbeleid,
    resolver: Resolver = system_resolver,
) -> Validatie:
    """The target check, then (only for an allowed target) the handshake, connecting to the
    address that was checked."""
    target = await pin_target(url, beleid, resolver)
    if isinstance(target, Validatie):
        return target
    return await handshake(client, target, origin)


def validate_now(
    url: str,
    *,
    origin: str | None = None,
    beleid: Adresbeleid | None = None,
    timeout: float = TIMEOUT_SECONDS,
) -> Validatie:
    """`validate` for a synchronous caller (`nmc admin dv apply`), with its own client."""

    async def run() -> Validatie:
        async with httpx.AsyncClient(timeout=timeout) as client:
            return await validate(
                client,
                url,
                origin=origin if origin is not None else origin_from_env(),
                beleid=beleid if beleid is not None else Adresbeleid.from_env(),
            )

    return asyncio.run(run())


@dataclass(frozen=True)
class WebhookValidator:
    """`validate` with the worker's client, origin and address policy (the webhook task)."""

    client: httpx.AsyncClient
    origin: str
    beleid: Adresbeleid
    resolver: Resolver = system_resolver

    async def validate(self, url: str) -> Validatie:
        return await validate(
            self.client, url, origin=self.origin, beleid=self.beleid, resolver=self.resolver
        )
