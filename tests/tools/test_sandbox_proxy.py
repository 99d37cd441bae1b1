"""The sandbox's network proxy (``sandbox.allowHosts``) spoken to directly, as a confined program
would through its forwarder: which ports of an allowed host it opens, and malformed targets."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from tools_support import Names

from tether.tools.sandbox_proxy import _may_reach, host_proxy  # pyright: ignore[reportPrivateUsage]

MANY_DIGITS = "1" * 5000
"""More than ``int`` takes from a string (4,300 digits), fewer than a request head may hold."""


async def ask(patterns: Sequence[str], request: str) -> str:
    """What the proxy for ``patterns`` answers ``request`` with, up to closing the connection."""
    async with host_proxy(patterns) as path, asyncio.timeout(10):
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(request.encode("latin-1"))
        answer = await reader.read()
        writer.close()
    return answer.decode("latin-1")


async def test_an_allowed_host_is_open_on_the_web_ports_only(listener: int) -> None:
    """``allowHosts: ["localhost"]`` tunnelled ``CONNECT localhost:<any port>``: an allowed
    package index's SSH server, or any service on it, was reachable."""
    answer = await ask(["localhost"], f"CONNECT localhost:{listener} HTTP/1.1\r\n\r\n")
    assert answer.startswith("HTTP/1.1 403") and "hello" not in answer
    assert f"localhost:{listener}" in answer  # says how to open it
    plain = await ask(["localhost"], f"GET http://localhost:{listener}/ HTTP/1.1\r\n\r\n")
    assert plain.startswith("HTTP/1.1 403")


async def test_an_entry_naming_a_port_opens_that_port(listener: int) -> None:
    answer = await ask([f"localhost:{listener}"], f"CONNECT localhost:{listener} HTTP/1.1\r\n\r\n")
    assert answer == "HTTP/1.1 200 Connection established\r\n\r\nhello"
    other = await ask([f"localhost:{listener}"], "CONNECT localhost:443 HTTP/1.1\r\n\r\n")
    assert other.startswith("HTTP/1.1 403")  # only the port it names
    six = await ask([f"[::1]:{listener}"], f"CONNECT [::1]:{listener} HTTP/1.1\r\n\r\n")
    assert six.startswith("HTTP/1.1 502")  # let through (the server listens on IPv4 only)


@pytest.mark.parametrize("host", ["x" * 64 + ".localhost", "a..localhost", ".localhost"])
async def test_a_host_that_cannot_be_looked_up_is_a_400(host: str) -> None:
    """A name that does not encode as IDNA raised ``UnicodeError`` out of the connection attempt,
    past its ``except``: the client waited for ever, and asyncio logged a traceback."""
    answer = await ask(["*.localhost"], f"CONNECT {host}:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith("HTTP/1.1 400") and "bad target" in answer


@pytest.mark.parametrize(
    ("patterns", "request_line"),
    [
        (["localhost"], "CONNECT localhost:\xb2 HTTP/1.1"),
        (["localhost"], "GET http://localhost:\xb3/ HTTP/1.1"),
        (["localhost:\xb9"], "CONNECT localhost:443 HTTP/1.1"),
    ],
)
async def test_a_port_in_superscript_digits_is_no_port(patterns: list[str], request_line: str) -> None:
    """A superscript two is a digit to ``str.isdigit`` and none to ``int``: a confined command's
    ``CONNECT localhost:²`` raised ValueError in the proxy (the client got no answer, asyncio logged
    a traceback), and an allowHosts entry ``localhost:¹`` made every request do so."""
    answer = await ask(patterns, f"{request_line}\r\n\r\n")
    assert answer.startswith(("HTTP/1.1 400", "HTTP/1.1 403")), answer


@pytest.mark.parametrize(
    ("patterns", "request_line", "status"),
    [
        (["localhost"], f"CONNECT localhost:{MANY_DIGITS} HTTP/1.1", "400 Bad Request"),
        (["localhost"], f"GET http://localhost:{MANY_DIGITS}/ HTTP/1.1", "400 Bad Request"),
        ([f"localhost:{MANY_DIGITS}"], "CONNECT localhost:443 HTTP/1.1", "403 Forbidden"),
    ],
)
async def test_a_port_of_thousands_of_digits_is_no_port(
    patterns: list[str], request_line: str, status: str
) -> None:
    """``int`` refuses a string of more than 4,300 digits, and a request head may hold 16 KiB: a
    confined command's ``CONNECT localhost:111...`` raised ValueError in the proxy (no answer, a
    traceback logged), and such an allowHosts entry made every request do so."""
    answer = await ask(patterns, f"{request_line}\r\n\r\n")
    assert answer.startswith(f"HTTP/1.1 {status}"), answer[:100]


@pytest.mark.parametrize("address", ["127.0.0.1", "::ffff:127.0.0.1"])
async def test_a_name_allowed_by_a_wildcard_reaches_no_private_address(
    listener: int, names: Names, address: str
) -> None:
    """``*.example.test`` let a name under it that DNS answers with 127.0.0.1 (or a cloud's
    metadata address) tunnel to the host's loopback: whoever runs a name under an allowed domain
    chooses where it points. A wildcard now reaches public addresses only."""
    names.answers["inner.example.test"] = [[address]]
    answer = await ask(
        [f"*.example.test:{listener}"], f"CONNECT inner.example.test:{listener} HTTP/1.1\r\n\r\n"
    )
    assert answer.startswith("HTTP/1.1 403") and "hello" not in answer
    assert f"resolves to {address}, no public address" in answer
    # named itself, or by its address, or loopback with localhost allowed: reached
    for entry in (f"inner.example.test:{listener}", f"127.0.0.1:{listener}", f"localhost:{listener}"):
        patterns = [f"*.example.test:{listener}", entry]
        answer = await ask(patterns, f"CONNECT inner.example.test:{listener} HTTP/1.1\r\n\r\n")
        assert answer == "HTTP/1.1 200 Connection established\r\n\r\nhello", entry


async def test_the_address_checked_is_the_address_reached(listener: int, names: Names) -> None:
    """One lookup per connection: a second one could answer otherwise (DNS rebinding)."""
    names.answers["inner.example.test"] = [["127.0.0.1"], ["10.255.255.1"]]
    patterns = [f"*.example.test:{listener}", f"127.0.0.1:{listener}"]
    answer = await ask(patterns, f"CONNECT inner.example.test:{listener} HTTP/1.1\r\n\r\n")
    assert answer == "HTTP/1.1 200 Connection established\r\n\r\nhello"
    assert names.looked_up == ["inner.example.test"]


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("169.254.169.254", False),
        ("fd00:ec2::254", False),
        ("10.1.2.3", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("::ffff:169.254.169.254", False),
        # an IPv4 address in IPv6 clothes is judged as itself
        ("::a9fe:a9fe", False),  # IPv4-compatible
        ("::7f00:1", False),
        ("::ffff:0:a9fe:a9fe", False),  # IPv4-translated
        ("2002:a9fe:a9fe::1", False),  # 6to4
        ("2002:7f00:1::", False),
        ("64:ff9b::a9fe:a9fe", False),  # NAT64
        ("64:ff9b::7f00:1", False),
        ("64:ff9b::5db8:d70e", True),
        ("2002:5db8:d70e::1", True),
        ("::5db8:d70e", True),
        ("fe80::1%lo", False),
        ("93.184.215.14", True),
        ("2606:4700::1111", True),
    ],
)
def test_a_wildcard_reaches_public_addresses_only(address: str, public: bool) -> None:
    assert _may_reach("a.example.test", address, 443, ["*.example.test"]) is public
