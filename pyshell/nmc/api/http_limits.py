"""Bounds on the request head (request line and header fields), below the app.

httptools (llhttp), the HTTP parser uvicorn uses when it is installed, has no limit of its
own: it gathers a header field of any size in memory before the app sees the request, so a
32 MB header was read in full before authentication, and ten at once took a few hundred MB.
uvicorn offers a bound for its h11 parser only (`h11_max_incomplete_event_size`, answered
with a 400). So `nmc api` runs uvicorn with `HeadLimitedHttpToolsProtocol`, its httptools
protocol with two checks:

* the bytes of a head: once NMC_API_MAX_HEADER_BYTES have come without the end of the head,
  nothing more is handed to the parser;
* the number of header fields: more than NMC_API_MAX_HEADERS is refused the same way.

Either way the answer is `431 Request Header Fields Too Large` with `Connection: close`.
The rest of what the client sends is read and dropped for a moment (a lingering close, so the
client gets to read the 431 rather than a reset), then the connection is closed. Body bytes
do not count: a head that ends within the limit is followed by its body as usual. The count
is exact for every head that starts a read; a pipelined head that starts inside the same read
as the end of the previous request may pass the limit by at most that one read.

Without httptools uvicorn uses h11, bounded with `h11_max_incomplete_event_size` (serve.py).
"""

import functools
import logging
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from nmc.api.settings import HeadLimits

log = logging.getLogger(__name__)

LINGER_SECONDS = 2.0


@functools.cache
def head_limits() -> HeadLimits:
    """The limits of this process, read once from the environment."""
    return HeadLimits.from_env(os.environ)


class _HeadTooLarge(Exception):
    """Raised from a parser callback: httptools turns it into an HttpParserError."""


class HeadLimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded request head (see the module docstring)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._limits = head_limits()
        # Bytes of the current head seen so far; None while a body is being read.
        self._head_bytes: int | None = 0
        self._header_count = 0
        self._refused = False

    # The bytes of the head ---------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        while data and not self._refused:
            if self._head_bytes is None:  # a body: the parser takes it all
                super().data_received(data)
                return
            room = self._limits.max_head_bytes - self._head_bytes
            if len(data) <= room:
                self._head_bytes += len(data)
                super().data_received(data)
                return
            part, data = data[:room], data[room:]
            self._head_bytes += len(part)
            if part:
                super().data_received(part)
            if self._refused or self.transport.is_closing():
                return
            if self._head_bytes == self._limits.max_head_bytes:
                self._refuse()  # the head did not end within the limit
                return
            # The head ended within `part`: the rest is its body or the next request.

    # Parser callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._header_count = 0
        super().on_message_begin()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self._limits.max_headers:
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0  # what follows is the next request's head

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer to a parser error; a callback of ours caused it when the header
        # count passed its limit.
        if self._header_count > self._limits.max_headers:
            self._refuse()
        else:
            super().send_400_response(msg)

    # The refusal ---------------------------------------------------------------------------

    def _refuse(self) -> None:
        self._refused = True
        log.warning(
            "request head refused with 431: more than %d bytes or %d header fields",
            self._limits.max_head_bytes,
            self._limits.max_headers,
        )
        message = b"Request Header Fields Too Large"
        content = [b"HTTP/1.1 431 Request Header Fields Too Large\r\n"]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: text/plain; charset=utf-8\r\n",
                b"content-length: " + str(len(message)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                message,
            ]
        )
        self.transport.write(b"".join(content))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        # Read and drop what the client still sends for a moment, then close.
        self.loop.call_later(LINGER_SECONDS, self._close)

    def _close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

    def eof_received(self) -> bool | None:
        if self._refused:
            self._close()
        return super().eof_received()
