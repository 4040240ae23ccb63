"""The address check is made for every call and the call connects to the address that was
checked (audit 2, item 8): a name that resolves to a public address when the webhook is
validated and to loopback later is refused at delivery; within one call the name is not
looked up a second time; TLS still names the host (SNI, the certificate is verified against
the host name, not the address). For webhooks, the handshake and https: beheer channels; an
http: beheer channel only into an explicitly allowed network (item 17)."""

import asyncio
import datetime
import ssl

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nmc.adapters.aio_backend import AsyncioTransport, LeanAsyncClient
from nmc.adapters.beheerkanaal import BeheerkanaalClient
from nmc.adapters.http import UnexpectedResponse
from nmc.adapters.webhook import WebhookClient
from nmc.adapters.webhook_validatie import Adresbeleid, Doel, Validatie, WebhookValidator
from nmc.crypto.peppers import new_peppers, parse_peppers
from nmc.feed.feed_cursor import CursorCodec
from nmc.signing.webhook_signing import SigningRing, new_signing_ring, parse_signing_ring

ORIGIN = "nmc.pinning.test"
PUBLIC = "145.21.10.1"
HOOK = "https://dv.example/hook"
PAGE = {
    "events": [
        {
            "eventId": 7, "notificatieId": "0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a11", "sequence": 1,
            "van": None, "naar": "aangenomen", "reden": None,
            "tijdstip": "2025-03-01T09:00:00Z", "xid": "12",
        }
    ],
    "xid": "12", "eventId": 7, "epoch": 1, "uitgegevenOp": "2025-03-01T09:00:00Z",
}  # fmt: skip


class Rebinding:
    """A resolver whose answers change: the first lookups get `first`, later ones `then`."""

    def __init__(self, first: str, then: str, first_count: int = 1) -> None:
        self.answers = [first] * first_count
        self.then = then
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        return [self.answers.pop(0) if self.answers else self.then]


class Recorder:
    """A MockTransport handler: answers the handshake and every POST, keeps each request."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.method == "OPTIONS":
            return httpx.Response(200, headers={"WebHook-Allowed-Origin": ORIGIN})
        return httpx.Response(204)


@pytest.fixture
def ring() -> SigningRing:
    return parse_signing_ring(new_signing_ring("nmc-pin-1"))


def webhook(http: httpx.AsyncClient, ring: SigningRing, resolver, beleid=None) -> WebhookClient:
    return WebhookClient(
        http, ring, issuer="urn:test:nmc", source="urn:test:nmc",
        cursors=CursorCodec(parse_peppers(new_peppers())),
        beleid=beleid or Adresbeleid(), resolver=resolver,
    )  # fmt: skip


async def test_a_name_that_later_resolves_to_loopback_is_refused_at_delivery(ring):
    resolver = Rebinding(PUBLIC, "127.0.0.1")
    recorder = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        validator = WebhookValidator(http, ORIGIN, Adresbeleid(), resolver)
        assert await validator.validate(HOOK) == Validatie("geldig"), "public when validated"
        client = webhook(http, ring, resolver)
        assert await client.target(HOOK) == Validatie("adres-geweigerd", "loopback")
    assert [r.method for r in recorder.requests] == ["OPTIONS"], "no delivery was sent"


async def test_each_call_connects_to_the_address_it_checked_and_names_the_host(ring):
    # A second lookup within the call would get loopback: there is none.
    resolver = Rebinding(PUBLIC, "127.0.0.1", first_count=2)
    recorder = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        validator = WebhookValidator(http, ORIGIN, Adresbeleid(), resolver)
        assert (await validator.validate("https://dv.example:8443/hook?x=1")).geldig
        client = webhook(http, ring, resolver)
        target = await client.target(HOOK)
        assert target == Doel(HOOK, PUBLIC)
        levering = await client.deliver(target, client.batch(1001, PAGE))
    assert levering.uitkomst == "geleverd"
    assert resolver.lookups == ["dv.example", "dv.example"], "one lookup per call"
    options, post = recorder.requests
    assert (options.url.host, options.url.port, options.url.path) == (PUBLIC, 8443, "/hook")
    assert options.headers["Host"] == "dv.example:8443"
    assert options.extensions["sni_hostname"] == "dv.example"
    assert (post.url.host, post.headers["Host"]) == (PUBLIC, "dv.example")
    assert post.extensions["sni_hostname"] == "dv.example"


async def test_an_allowed_network_still_admits_a_loopback_webhook(ring):
    resolver = Rebinding("127.0.0.1", "127.0.0.1")
    async with httpx.AsyncClient(transport=httpx.MockTransport(Recorder())) as http:
        client = webhook(http, ring, resolver, Adresbeleid.parse("127.0.0.0/8"))
        assert await client.target("http://hook.test:8080/x") == Doel(
            "http://hook.test:8080/x", "127.0.0.1"
        )


# --------------------------------------------------------------------------------------------
# The beheer channel


def beheerkanaal(http, ring, resolver, beleid=None) -> BeheerkanaalClient:
    return BeheerkanaalClient(
        http, ring, issuer="urn:test:nmc", source="urn:test:nmc",
        beleid=beleid or Adresbeleid(), resolver=resolver,
    )  # fmt: skip


async def test_the_beheer_channel_is_checked_and_pinned_per_call(ring):
    resolver = Rebinding(PUBLIC, "169.254.169.254")
    recorder = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        client = beheerkanaal(http, ring, resolver)
        await client.post("https://dv.example/beheer", "r-1", "00000001001001001000", {})
        with pytest.raises(UnexpectedResponse, match="beheerkanaal-adres-geweigerd"):
            await client.post("https://dv.example/beheer", "r-1", "00000001001001001000", {})
    [post] = recorder.requests
    assert (post.url.host, post.headers["Host"]) == (PUBLIC, "dv.example")
    assert post.extensions["sni_hostname"] == "dv.example"


async def test_an_http_beheer_channel_is_refused_unless_it_points_into_an_allowed_network(ring):
    recorder = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        public = beheerkanaal(http, ring, Rebinding(PUBLIC, PUBLIC))
        with pytest.raises(UnexpectedResponse, match="beheerkanaal-geen-https"):
            await public.post("http://dv.example/beheer", "r-1", "00000001001001001000", {})
        assert recorder.requests == [], "nothing is sent in plain text"
        loopback = beheerkanaal(
            http, ring, Rebinding("127.0.0.1", "127.0.0.1"), Adresbeleid.parse("127.0.0.0/8")
        )
        await loopback.post("http://beheer.test/r", "r-1", "00000001001001001000", {})
    assert len(recorder.requests) == 1, "tests and demos on loopback keep working"


# --------------------------------------------------------------------------------------------
# TLS: connected to the address, verified against the host name


def _certificate(tmp_path, host: str) -> tuple[str, str]:
    """A self-signed certificate for the DNS name `host` and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / f"{host}.pem", tmp_path / f"{host}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
             if line.lower().startswith(b"content-length:")),
            0,
        )  # fmt: skip
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@pytest.mark.parametrize("transport", ["aio_backend", "httpx"])
async def test_a_pinned_https_call_verifies_the_certificate_against_the_host_name(
    ring, tmp_path, transport
):
    cert_file, key_file = _certificate(tmp_path, "webhook.test")
    other_cert, other_key = _certificate(tmp_path, "elders.test")
    servers, ports = [], []
    for chain in ((cert_file, key_file), (other_cert, other_key)):
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*chain)
        server = await asyncio.start_server(_answer, "127.0.0.1", 0, ssl=context)
        servers.append(server)
        ports.append(server.sockets[0].getsockname()[1])
    trusting = ssl.create_default_context(cafile=cert_file)
    trusting.load_verify_locations(cafile=other_cert)
    if transport == "aio_backend":
        http: httpx.AsyncClient = LeanAsyncClient(
            timeout=2.0, transport=AsyncioTransport(ssl_context=trusting)
        )
    else:
        http = httpx.AsyncClient(timeout=2.0, verify=trusting)
    loopback = Adresbeleid.parse("127.0.0.0/8")
    try:
        async with http:
            client = webhook(http, ring, Rebinding("127.0.0.1", "127.0.0.1", 9), loopback)
            batch = client.batch(1001, PAGE)
            # The name the certificate was made for: verified, though connected by address.
            right = await client.target(f"https://webhook.test:{ports[0]}/hook")
            assert isinstance(right, Doel) and right.adres == "127.0.0.1"
            assert (await client.deliver(right, batch)).uitkomst == "geleverd"
            # A trusted certificate for another name does not pass for this one.
            wrong = await client.target(f"https://webhook.test:{ports[1]}/hook")
            assert (await client.deliver(wrong, batch)).fout == "webhook-verbinding"
    finally:
        for server in servers:
            server.close()
