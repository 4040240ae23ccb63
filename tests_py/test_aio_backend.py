"""The worker's HTTP/1.1 transport (nmc.adapters.aio_backend) against raw asyncio servers:
keep-alive reuse, a connection the server closed while idle, chunked, close-delimited and
gzip bodies, large bodies both ways, Connection: close, timeouts (read, pool), refused
connections, a server that speaks out of turn, and a cancelled call that stays cancelled.
And the worker's client on top of it (LeanAsyncClient): the request httpx would build, sent
straight to the transport, and httpx's own path for what it leaves out."""

import asyncio
import gzip
import socket

import httpx
import pytest

from nmc.adapters.aio_backend import AsyncioTransport, LeanAsyncClient


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length) if length else b""


class Server:
    """Answers each request with `body` (or the raw bytes of `raw`); `close_after` closes the
    connection after that many answers; `silent` never answers."""

    def __init__(
        self,
        body: bytes = b"ok",
        close_after: int | None = None,
        silent=False,
        raw: bytes | None = None,
    ):
        self.body, self.close_after, self.silent, self.raw = body, close_after, silent, raw
        self.connections = 0
        self.received: list[bytes] = []
        self.heads: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        answered = 0
        try:
            while True:
                head, body = await _read_request(reader)
                self.heads.append(head)
                self.received.append(body)
                if self.silent:
                    await asyncio.sleep(10)
                writer.write(
                    self.raw
                    or b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(self.body), self.body)
                )
                await writer.drain()
                answered += 1
                if self.close_after is not None and answered >= self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self._server.close()


def client(timeout: float = 2.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=timeout, transport=AsyncioTransport())


async def test_keep_alive_reuses_one_connection():
    server = Server(b'{"a": 1}')
    async with server as url, client() as http:
        answers = [await http.post(url, json={"n": n}) for n in range(5)]
    assert [a.json() for a in answers] == [{"a": 1}] * 5
    assert server.connections == 1
    assert server.received == [b'{"n":%d}' % n for n in range(5)]


async def test_a_connection_the_server_closed_while_idle_is_not_reused():
    server = Server(close_after=1)
    async with server as url, client() as http:
        first = await http.get(url)
        await asyncio.sleep(0.05)  # the server's close arrives while the connection idles
        second = await http.get(url)
    assert (first.text, second.text) == ("ok", "ok")
    assert server.connections == 2


async def test_large_bodies_both_ways():
    big = bytes(range(256)) * 8192  # 2 MiB
    server = Server(big)
    async with server as url, client() as http:
        answer = await http.post(url, content=big)
    assert answer.content == big
    assert server.received == [big]


async def test_a_silent_server_is_a_read_timeout():
    async with Server(silent=True) as url, client(timeout=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(url)


async def test_a_refused_connection_is_a_connect_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nobody listens there
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_a_cancelled_call_stays_cancelled():
    async with Server(silent=True) as url, client(timeout=5.0) as http:
        call = asyncio.create_task(http.get(url))
        await asyncio.sleep(0.1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call


async def test_chunked_close_delimited_and_gzip_bodies():
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end"
    packed = gzip.compress(b'{"z": true}')
    zipped = b"HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (
        len(packed),
        packed,
    )
    async with client() as http:
        async with Server(raw=chunked) as url:
            assert (await http.get(url)).text == "abcde"
        async with Server(raw=until_close, close_after=1) as url:
            assert (await http.get(url)).text == "to the end"
        async with Server(raw=zipped) as url:
            answer = await http.get(url)
            assert (answer.status_code, answer.json()) == (201, {"z": True})


async def test_connection_close_is_not_reused():
    server = Server(raw=b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
    async with server as url, client() as http:
        assert [(await http.get(url)).text for _ in range(3)] == ["ok"] * 3
    assert server.connections == 3


async def test_a_server_that_speaks_out_of_turn_spoils_its_connection():
    # Two answers to one request: the second arrives while the connection is idle.
    twice = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na" * 2
    server = Server(raw=twice)
    async with server as url, client() as http:
        assert (await http.get(url)).text == "a"
        await asyncio.sleep(0.05)
        assert (await http.get(url)).text == "a"
    assert server.connections == 2


async def test_garbage_is_a_protocol_error():
    async with Server(raw=b"SMTP ready\r\n\r\n") as url, client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(url)


async def test_a_full_pool_is_a_pool_timeout():
    transport = AsyncioTransport(limits=httpx.Limits(max_connections=1))
    timeout = httpx.Timeout(5.0, pool=0.1)
    server = Server(silent=True)
    async with server as url, httpx.AsyncClient(timeout=timeout, transport=transport) as http:
        holder = asyncio.create_task(http.get(url))
        await asyncio.sleep(0.05)
        with pytest.raises(httpx.PoolTimeout):
            await http.get(url)
        holder.cancel()


def _self_signed(tmp_path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


async def test_https_verifies_the_server_and_reuses_the_connection(tmp_path):
    import ssl

    cert_file, key_file = _self_signed(tmp_path)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert_file, key_file)
    server = Server(b"geheim")
    tcp = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=server_side)
    url = f"https://127.0.0.1:{tcp.sockets[0].getsockname()[1]}/"
    try:
        trusting = ssl.create_default_context(cafile=cert_file)
        transport = AsyncioTransport(ssl_context=trusting)
        async with httpx.AsyncClient(timeout=2.0, transport=transport) as http:
            assert [(await http.get(url)).text for _ in range(2)] == ["geheim"] * 2
        assert server.connections == 1
        # Without the certificate among the trusted ones the connection is refused.
        async with client() as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(url)
    finally:
        tcp.close()


# ------------------------------------------------------------------------ LeanAsyncClient


def lean(timeout: float = 2.0) -> LeanAsyncClient:
    return LeanAsyncClient(timeout=timeout, transport=AsyncioTransport())


@pytest.mark.parametrize(
    ("method", "url", "arguments"),
    [
        (
            "POST",
            "http://127.0.0.1:8000/v2/notifications/email",
            {"json": {"a": "é", "b": [1, 2]}, "headers": {"Authorization": "Bearer x"}},
        ),
        (
            "POST",
            "https://h.example/cb?x=1",
            {"content": b"{}", "headers": {"Content-Type": "application/x", "Nmc-Cursor": "c"}},
        ),
        ("GET", "http://127.0.0.1:8000/v2/notifications", {"params": {"reference": "r 1&"}}),
        ("GET", "http://127.0.0.1:8000/v2/notifications/abc", {}),
        ("POST", "http://127.0.0.1:8000/x", {}),
        ("POST", "http://127.0.0.1:8000/x", {"content": b""}),
        ("post", "http://127.0.0.1:8000/x", {"json": {}, "headers": {"user-agent": "me"}}),
        ("PUT", "http://127.0.0.1:8000/x", {"headers": [("X-A", "1"), ("X-A", "2")]}),
    ],
)
async def test_the_lean_client_builds_the_request_httpx_builds(method, url, arguments):
    async with lean(timeout=7.0) as ours, httpx.AsyncClient(timeout=7.0) as theirs:
        built = ours.lean_request(method, url, **arguments)
        expected = theirs.build_request(method, url, **arguments)
        await expected.aread()
    assert (built.method, built.url, built.headers.raw) == (
        expected.method,
        expected.url,
        expected.headers.raw,
    )
    assert (built.content, built.extensions) == (expected.content, expected.extensions)


async def test_the_lean_client_over_the_transport():
    server = Server(b'{"a": 1}')
    async with server as url, lean() as http:
        answers = [await http.post(url, json={"n": n}, headers={"X-N": str(n)}) for n in range(3)]
        second = await http.get(f"{url}/lijst", params={"reference": "r"})
    assert [a.json() for a in answers] == [{"a": 1}] * 3
    assert [a.request.headers["x-n"] for a in answers] == ["0", "1", "2"]
    assert server.received[:3] == [b'{"n":%d}' % n for n in range(3)]
    assert server.heads[3].startswith(b"GET /lijst?reference=r HTTP/1.1\r\n")
    assert (second.status_code, server.connections) == (200, 1)
    packed = gzip.compress(b'{"z": true}')
    zipped = b"HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (
        len(packed),
        packed,
    )
    async with Server(raw=zipped) as url, lean() as http:
        answer = await http.get(url)
    assert (answer.status_code, answer.json()) == (201, {"z": True})
    async with Server(silent=True) as url, lean(timeout=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(url)


async def test_the_lean_client_takes_httpx_path_for_what_it_leaves_out():
    moved = b"HTTP/1.1 302 Found\r\nLocation: /elders\r\nContent-Length: 0\r\n\r\n"
    async with Server(raw=moved) as url, lean() as http:
        assert (await http.get(url)).status_code == 302  # not followed, as httpx by default
        with pytest.raises(httpx.TooManyRedirects):
            await http.get(url, follow_redirects=True)
    server = Server()
    async with server as url, lean() as http:
        await http.get(url, auth=("wie", "wat"))
        await http.get(url.replace("http://", "http://wie:wat@"))
        await http.get(url, timeout=1.0)
    assert [b"Authorization: Basic d2llOndhdA==" in h for h in server.heads] == [True, True, False]


async def test_the_lean_client_keeps_no_cookies():
    server = Server(raw=b"HTTP/1.1 200 OK\r\nSet-Cookie: s=1\r\nContent-Length: 2\r\n\r\nok")
    async with server as url, lean() as http:
        await http.get(url)
        await http.get(url)
        assert len(http.cookies) == 0
    assert not any(b"cookie:" in h.lower() for h in server.heads)
