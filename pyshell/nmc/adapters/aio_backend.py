"""A lean HTTP/1.1 transport for httpx: the worker's outbound calls straight on the event
loop, parsed by httptools (llhttp, the parser uvicorn uses).

httpx's default transport (httpcore over anyio, parsing with h11 in Python) cost the
worker about two thirds of its CPU per send: every read and write opened an anyio cancel
scope, the connection pool walked every pooled connection twice per request asking each
whether it was still usable, and h11 parsed every byte in Python. This transport keeps
httpx's client API, its request building, redirects, auth and the worker's
`MeasuredTransport` above it, and replaces what is below: a pool of idle keep-alive
connections per origin (taken and given back in O(1)), one asyncio protocol per
connection, the response read whole (the adapters read every body anyway).

What it keeps of httpcore's behaviour, so the adapters and the metrics see no difference:
at most `max_connections` calls at once (others wait, `PoolTimeout` after the pool
timeout), `keepalive_expiry` and `max_keepalive_connections` for idle connections, TLS
verified with httpx's default context, and the same error classes: `ConnectTimeout`,
`ConnectError`, `WriteTimeout`, `WriteError`, `ReadTimeout`, `RemoteProtocolError` (the
server closed the connection without a whole response, or sent something that is not
HTTP). A connection is reused only after a whole response that allows keep-alive, and
never when anything arrived while it was idle. No HTTP/2, no Expect: 100-continue, no
streaming of request or response bodies.

Measured against the maintained alternatives (benchmarks/bench_transport.py, interleaved on
the send drain): httpx's own transport costs the worker about 9x the CPU per send of
LeanAsyncClient over this transport, httpx over aiohttp about 1.8x, and aiohttp called
directly, without httpx's objects, still about 1.5x per call. That margin (well above the 20%
that would be worth the upkeep) is why it stays, with httpx pinned exactly (pyproject.toml).

`LeanAsyncClient` is the httpx client the worker puts on top of it: httpx's own
`AsyncClient.request` (a new request merged with the client's base URL, cookies and
parameters, sent through its auth, redirect and cookie machinery; every response parsed again
by urllib to look for cookies) cost the worker more CPU per send than this transport does.
"""

import asyncio
import ssl
import time
from collections import deque
from json import dumps as json_dumps
from typing import Any

import httptools
import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Connection(asyncio.Protocol):
    """One keep-alive connection: the protocol feeds httptools; one response at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.error: Exception | None = None
        self.busy = False  # a request is under way (data while idle spoils the connection)
        self.spoiled = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.complete = False
        self.keep_alive = False

    # asyncio protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if not self.busy:
            self.spoiled = True  # the server spoke out of turn: never reuse
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self.error = error
            self.spoiled = True
            self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is not None and self.error is None:
            self.error = exc
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        if self._writable is None or self._writable.done():
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    # httptools callbacks; anything after the one response asked for spoils the connection
    def on_message_begin(self) -> None:
        if self.complete:
            self.spoiled = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.complete:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if not self.complete:
            self.status = self.parser.get_status_code()
            self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # used by the transport
    def usable(self, now: float, expiry: float | None) -> bool:
        return not (
            self.closed
            or self.spoiled
            or self.transport is None
            or self.transport.is_closing()
            or (expiry is not None and now - self.idle_since > expiry)
        )

    async def exchange(self, data: bytes, write_timeout, read_timeout) -> None:
        """Send one request and wait until its whole response is in."""
        self._reset()
        self.busy = True
        if self.closed or self.transport is None or self.transport.is_closing():
            raise httpx.WriteError("the connection is closed")
        self.transport.write(data)
        if self._writable is not None and not self._writable.done():
            await _wait(self._writable, write_timeout, httpx.WriteTimeout)
        while not self.complete:
            if self.error is not None or self.spoiled:
                raise httpx.RemoteProtocolError(f"invalid response: {type(self.error).__name__}")
            if self.closed:
                if self.status and not self._framed():
                    # A body without length or chunking ends with the connection.
                    self.complete, self.keep_alive = True, False
                    break
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a complete response."
                )
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(self._waiter, read_timeout, httpx.ReadTimeout)
            finally:
                self._waiter = None
        self.busy = False

    def _framed(self) -> bool:
        """Whether the response says where its body ends (length or chunked)."""
        return any(
            name.lower() in (b"content-length", b"transfer-encoding") for name, _ in self.headers
        )

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


async def _wait(future: asyncio.Future[None], timeout: float | None, error: type[Exception]):
    """Wait for `future`; after `timeout` seconds (None: no limit) raise `error`. A
    cancellation of the waiting task itself stays a cancellation."""
    timer = None
    if timeout is not None:
        timer = asyncio.get_running_loop().call_later(timeout, _expire, future)
    try:
        await future
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise error("timed out") from None
    finally:
        if timer is not None:
            timer.cancel()


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.cancel()


class AsyncioTransport(httpx.AsyncBaseTransport):
    """httpx transport: HTTP/1.1 keep-alive on asyncio with httptools (see the module)."""

    def __init__(
        self, *, limits: httpx.Limits | None = None, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        limits = limits or httpx.Limits()
        self._max_connections = limits.max_connections
        self._max_idle = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry
        self._ssl = ssl_context
        self._slots: asyncio.Semaphore | None = None
        self._idle: dict[tuple[str, str, int, str], deque[_Connection]] = {}
        self._idle_count = 0
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport is closed")
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        scheme = url.scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"unsupported scheme {scheme!r}")
        # A call pinned to a checked address (nmc.adapters.webhook_validatie.Doel) connects to the
        # address in the URL and names its host in TLS (SNI, certificate): httpcore's
        # `sni_hostname` extension. Connections are pooled per name too, so one opened for
        # one host is never reused for another that shares its address.
        sni = request.extensions.get("sni_hostname") or url.host
        origin = (scheme, url.host, url.port or _DEFAULT_PORTS[scheme], sni)
        body = await request.aread()
        data = _encode(request, body)

        await self._acquire(timeouts.get("pool"))
        connection = None
        try:
            connection = self._take_idle(origin)
            if connection is None:
                connection = await self._connect(origin, timeouts.get("connect"))
            await connection.exchange(data, timeouts.get("write"), timeouts.get("read"))
        except BaseException:
            if connection is not None:
                connection.close()
            raise
        finally:
            self._slots.release()  # type: ignore[union-attr]
        response = httpx.Response(
            connection.status,
            headers=connection.headers,
            stream=httpx.ByteStream(b"".join(connection.body)),
            extensions={"http_version": b"HTTP/1.1"},
        )
        self._give_back(origin, connection)
        return response

    async def _acquire(self, timeout: float | None) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_connections or 2**31)
        if not self._slots.locked():
            await self._slots.acquire()
            return
        try:
            async with asyncio.timeout(timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no connection free in time") from None

    def _take_idle(self, origin: tuple[str, str, int, str]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()  # the most recently used: the least likely to be stale
            self._idle_count -= 1
            if connection.usable(now, self._expiry):
                return connection
            connection.close()
        return None

    def _give_back(self, origin: tuple[str, str, int, str], connection: _Connection) -> None:
        full = self._max_idle is not None and self._idle_count >= self._max_idle
        if self._closed or full or not connection.keep_alive or connection.closed:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.setdefault(origin, deque()).append(connection)
        self._idle_count += 1

    async def _connect(
        self, origin: tuple[str, str, int, str], timeout: float | None
    ) -> _Connection:
        scheme, host, port, sni = origin
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()
            context = self._ssl
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, connection = await loop.create_connection(
                    _Connection, host, port, ssl=context, server_hostname=sni if context else None
                )
        except TimeoutError:
            raise httpx.ConnectTimeout("connect timed out") from None
        except (OSError, ssl.SSLError) as error:
            raise httpx.ConnectError(str(error)) from None
        return connection

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            while idle:
                idle.pop().close()
        self._idle_count = 0


def _lower(name: bytes) -> str:
    return name.decode("latin-1").lower()


def _encode(request: httpx.Request, body: bytes) -> bytes:
    """The request head and body as bytes (a body is always sent with its length)."""
    url = request.url
    target = url.raw_path or b"/"
    lines = [request.method.encode("ascii") + b" " + target + b" HTTP/1.1"]
    has_length = False
    for name, value in request.headers.raw:
        lowered = name.lower()
        if lowered == b"transfer-encoding":
            continue  # the body was read whole: it goes with Content-Length
        if lowered == b"content-length":
            has_length = True
        lines.append(name + b": " + value)
    if body and not has_length:
        lines.append(b"Content-Length: " + str(len(body)).encode("ascii"))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class LeanAsyncClient(httpx.AsyncClient):
    """An `httpx.AsyncClient` whose `request` (and so `get`, `post`, …) goes straight to its
    transport: it builds the request httpx builds (the same head in the same order: `Host`,
    the client's default headers, the call's, the body's length and type;
    tests_py/test_aio_backend.py compares the two), sends it, and reads the response whole.

    What is left out is what the NMC's calls never use: a base URL and event hooks (this
    constructor takes neither), client auth, cookies (a response's are not kept), following
    redirects (a 3xx is returned, as httpx does by default). A call that asks for more
    (`auth=`, `cookies=`, `follow_redirects=True`, a per-call `timeout=`, form data, a
    streamed body, credentials in the URL, …) takes httpx's full path, and so does `send`.
    Parsed URLs are cached: the worker calls a handful of URLs over and over.
    """

    _URL_CACHE_SIZE = 256

    def __init__(
        self,
        *,
        transport: httpx.AsyncBaseTransport,
        timeout: httpx.Timeout | float | None = 5.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(transport=transport, timeout=timeout, headers=headers)
        self._direct = transport
        self._urls: dict[str, httpx.URL] = {}

    async def request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: Any = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        params: Any = None,
        headers: Any = None,
        cookies: Any = None,
        auth: Any = httpx.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx.USE_CLIENT_DEFAULT,
        timeout: Any = httpx.USE_CLIENT_DEFAULT,
        extensions: Any = None,
    ) -> httpx.Response:
        target = self._url(url)
        lean = (
            (content is None or isinstance(content, bytes))
            and data is None
            and files is None
            and cookies is None
            and auth is httpx.USE_CLIENT_DEFAULT
            and follow_redirects in (httpx.USE_CLIENT_DEFAULT, False)
            and timeout is httpx.USE_CLIENT_DEFAULT
            and not extensions
            and not target.userinfo  # credentials in the URL: httpx's basic auth
            and self.auth is None
            and not self.follow_redirects
            and not self.cookies
        )
        if not lean:
            return await super().request(
                method,
                url,
                content=content,
                data=data,
                files=files,
                json=json,
                params=params,
                headers=headers,
                cookies=cookies,
                auth=auth,
                follow_redirects=follow_redirects,
                timeout=timeout,
                extensions=extensions,
            )
        request = self.lean_request(
            method, target, content=content, json=json, params=params, headers=headers
        )
        response = await self._direct.handle_async_request(request)
        response.request = request
        try:
            # A body the transport already holds (ours) is read without async iteration.
            if isinstance(response.stream, httpx.SyncByteStream):
                response.read()
            else:
                await response.aread()
        except BaseException:
            await response.aclose()
            raise
        return response

    def lean_request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: bytes | None = None,
        json: Any = None,
        params: Any = None,
        headers: Any = None,
    ) -> httpx.Request:
        """The request `build_request` would make for these arguments, built in one pass
        (httpx's merges a header list into another and looks every name up again)."""
        target = self._url(url)
        if params:
            target = httpx.URL(target, params=params)  # replaces the query, as httpx does
        method = method.upper()
        body_headers: list[tuple[bytes, bytes]] = []
        if content is not None:
            body = content
            if body:
                body_headers.append((b"Content-Length", str(len(body)).encode("ascii")))
        elif json is not None:
            body = json_dumps(
                json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
            body_headers.append((b"Content-Length", str(len(body)).encode("ascii")))
            body_headers.append((b"Content-Type", b"application/json"))
        else:
            body = b""
        own = httpx.Headers(headers)
        overridden = {name for name, _ in own.multi_items()}  # lower case
        merged = [(n, v) for n, v in self.headers.raw if _lower(n) not in overridden]
        merged += own.raw
        present = {_lower(n) for n, _ in merged}
        merged += [(n, v) for n, v in body_headers if _lower(n) not in present]
        present.update(_lower(n) for n, _ in body_headers)
        auto: list[tuple[bytes, bytes]] = []
        if "host" not in present and target.host:
            auto.append((b"Host", target.netloc))
        if method in ("POST", "PUT", "PATCH") and not present & {
            "content-length",
            "transfer-encoding",
        }:
            auto.append((b"Content-Length", b"0"))
        request = httpx.Request(
            method,
            target,
            headers=auto + merged,
            stream=httpx.ByteStream(body),
            extensions={"timeout": self.timeout.as_dict()},
        )
        request.read()  # the body is in hand: a transport's aread() then returns it at once
        return request

    def _url(self, url: httpx.URL | str) -> httpx.URL:
        if isinstance(url, httpx.URL):
            return url
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= self._URL_CACHE_SIZE:
                self._urls.clear()  # URLs with an id in them: start over rather than grow
            parsed = self._urls[url] = httpx.URL(url)
        return parsed
