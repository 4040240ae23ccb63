"""The request head is bounded: a huge or crowded head is refused with 431 before it is read.

A real `nmc api` process (uvicorn with the installed HTTP parser, as in production), spoken to
over raw sockets: the limits sit in the HTTP protocol, below the app. Memory is the process's
peak resident set (VmHWM), read from /proc.
"""

import contextlib
import socket
import threading
from dataclasses import dataclass

import httpx
import pytest

MIB = 1024 * 1024


@dataclass
class Outcome:
    status_line: bytes


def send_head(port: int, head: bytes, body: bytes = b"") -> Outcome:
    """Send `head` (and `body`) and read the status line of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + body)
        received = b""
        try:
            while b"\r\n" not in received:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                received += chunk
        except ConnectionResetError:
            pass
    return Outcome(received.split(b"\r\n", 1)[0])


def get_with(headers: list[tuple[str, str]] | None = None, path: str = "/health/live") -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers or []]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def test_a_32_mib_header_is_refused_early_with_431(api_process):
    head = get_with([("X-Groot", "a" * (32 * MIB))])
    with socket.create_connection(("127.0.0.1", api_process.port), timeout=10) as sock:
        # The first MiB only: the head has not ended, and the answer comes all the same.
        sock.sendall(head[:MIB])
        answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 431 "), answer
        assert b"\r\nconnection: close\r\n" in answer.lower()
        # The rest is read and dropped (or the connection is gone by now).
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head[MIB:])
    # Sent whole, as a client that does not read before it has written would.
    outcome = send_head(api_process.port, head)
    assert outcome.status_line.startswith(b"HTTP/1.1 431"), outcome.status_line


def test_ten_huge_heads_at_once_leave_the_memory_alone(api_process):
    before = api_process.peak_rss_bytes()
    outcomes: list[Outcome] = []
    head = get_with([("X-Groot", "a" * (32 * MIB))])

    def attack() -> None:
        outcomes.append(send_head(api_process.port, head))

    threads = [threading.Thread(target=attack) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(outcomes) == 10
    assert all(o.status_line.startswith(b"HTTP/1.1 431") for o in outcomes), outcomes
    grown = api_process.peak_rss_bytes() - before
    assert grown < 20 * MIB, f"peak memory grew by {grown / MIB:.0f} MiB"
    assert httpx.get(f"http://127.0.0.1:{api_process.port}/health/live").status_code == 200


def test_too_many_headers_are_refused_with_431(api_process):
    crowded = [(f"X-Veld-{n}", "x") for n in range(200)]
    outcome = send_head(api_process.port, get_with(crowded))
    assert outcome.status_line.startswith(b"HTTP/1.1 431"), outcome.status_line


def test_a_head_within_the_limits_is_served(api_process):
    # A bearer token of the largest size the verifier reads (16 KiB) and a crowd of ordinary
    # headers below the count limit.
    headers = [("Authorization", "Bearer " + "a" * 16 * 1024)]
    headers += [(f"X-Veld-{n}", "x" * 100) for n in range(90)]
    outcome = send_head(api_process.port, get_with(headers))
    assert outcome.status_line == b"HTTP/1.1 200 OK"


def test_the_body_does_not_count_against_the_head(api_process):
    # Head and a 1 MiB body in one write: the body is not part of the head. The route refuses
    # the body for its own reason (not 431).
    body = b"{" + b" " * MIB + b"}"
    head = (
        "POST /api/nmc/v1/decentraal/notificaties HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    outcome = send_head(api_process.port, head, body)
    assert outcome.status_line.startswith(b"HTTP/1.1 401"), outcome.status_line


def test_a_pipelined_huge_head_after_a_small_request_is_refused(api_process):
    small = get_with().replace(b"Connection: close\r\n", b"")
    with socket.create_connection(("127.0.0.1", api_process.port), timeout=30) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(small + get_with([("X-Groot", "a" * (8 * MIB))]))
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
    assert received.startswith(b"HTTP/1.1 200 OK"), received[:200]
    assert received.count(b"HTTP/1.1 ") == 2, received[:200]
    assert b"HTTP/1.1 431" in received


def test_the_limits_are_settings_checked_at_start(monkeypatch):
    from nmc.api.serve import http_protocol
    from nmc.api.settings import HeadLimits
    from nmc.errors import NmcError

    assert HeadLimits.from_env({}) == HeadLimits(max_head_bytes=64 * 1024, max_headers=100)
    limits = HeadLimits.from_env({"NMC_API_MAX_HEADER_BYTES": "8192", "NMC_API_MAX_HEADERS": "20"})
    assert (limits.max_head_bytes, limits.max_headers) == (8192, 20)
    monkeypatch.setenv("NMC_API_MAX_HEADERS", "veel")
    with pytest.raises(NmcError, match="NMC_API_MAX_HEADERS"):
        http_protocol()
    monkeypatch.delenv("NMC_API_MAX_HEADERS")
    assert http_protocol() == {"http": "nmc.api.http_limits:HeadLimitedHttpToolsProtocol"}
