"""Network for a sandboxed command, limited to the hosts the user allowed (``sandbox.allowHosts``).

A confined command has its own network namespace: nothing outside is reachable, not even the
host's loopback. To let it reach a few hosts (a package index, a git server), tether runs an HTTP
proxy for the length of the command, listening on a Unix socket that is the namespace's only way
out. Inside, a tiny forwarder (``FORWARDER``, the standard library only) listens on
``127.0.0.1:PROXY_PORT`` and passes each connection to that socket, and ``HTTP_PROXY``/
``HTTPS_PROXY`` point there, so curl, pip, npm, git and Python's urllib go through it. The proxy
answers ``CONNECT host:port`` (HTTPS) and absolute-URI requests (plain HTTP) for allowed hosts
and refuses the rest with a 403 that names the setting. This is how Claude Code's sandbox opens
the network by domain; a program that ignores the proxy variables reaches nothing.

An allowed host is open on the web's ports only (``WEB_PORTS``), unless its entry names one
(``localhost:8080``): ``pypi.org`` let ``CONNECT pypi.org:22`` tunnel to its SSH server.

A host allowed by a wildcard only (``*.example.com``) reaches public addresses only
(``_may_reach``): whoever runs a name under the domain (a wildcard DNS service, a customer's
subdomain) can point it at ``127.0.0.1`` or a cloud's metadata service at ``169.254.169.254``,
which the user allowed nowhere. A host its entry names is reached wherever it resolves (the user
named that machine; a private package index is one), as is an address an entry names, and
loopback when ``localhost`` is allowed. The proxy resolves the name itself and connects to the
address it checked: a second lookup could answer otherwise (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import tempfile
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

PROXY_PORT = 3128
"""Where the forwarder listens inside the namespace (private to it, so never taken)."""

MAX_HEAD = 16 * 1024
"""The longest request head we read before deciding (a request line and its headers)."""

FORWARDER = r"""
import os, socket, sys, threading
path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(128)
if os.fork():
    server.close()
    os.execvp(argv[0], argv)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    client, _ = server.accept()
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        continue
    for a, b in ((client, upstream), (upstream, client)):
        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
"""
"""Binds first, then the parent execs the command (so the port is listening before it runs) and
the child forwards until the namespace ends with the command."""


WEB_PORTS = (443, 80)
"""The ports of an ``allowHosts`` entry that names none: HTTPS, and HTTP (plain requests)."""


def allowed(host: str, port: int, patterns: Sequence[str], *, wildcards: bool = True) -> bool:
    """``host`` equals a pattern, or (with ``wildcards``) a pattern ``*.example.com`` covers it
    (any depth), and ``port`` is the pattern's (``example.com:8443``) or, when it names none, one
    of ``WEB_PORTS``."""
    return any(port in ports for ports in _ports_of(host, patterns, wildcards=wildcards))


def _ports_of(host: str, patterns: Sequence[str], *, wildcards: bool = True) -> list[tuple[int, ...]]:
    """The ports each ``allowHosts`` entry that covers ``host`` opens (``[::1]:8080``: one);
    without ``wildcards``, of the entries naming ``host`` itself."""
    host = host.lower().rstrip(".")
    found: list[tuple[int, ...]] = []
    for entry in patterns:
        pattern, colon, port = entry.lower().rpartition(":")
        number = _port(port)
        if colon and number is not None and (":" not in pattern or pattern.endswith("]")):
            ports: tuple[int, ...] = (number,)
        else:
            pattern, ports = entry.lower(), WEB_PORTS
        pattern = pattern.strip("[]").rstrip(".")
        wildcard = pattern.startswith("*.")
        if (wildcards and host.endswith(pattern[1:])) if wildcard else host == pattern:
            found.append(ports)
    return found


@contextlib.asynccontextmanager
async def host_proxy(patterns: Sequence[str]) -> AsyncGenerator[Path]:
    """A proxy for ``patterns`` on a fresh Unix socket (its path), stopped when the block ends."""
    folder = Path(tempfile.mkdtemp(prefix="tether-proxy-"))
    path = folder / "proxy.sock"
    tasks: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            tasks.add(task)
        try:
            await _serve(reader, writer, patterns)
        finally:
            writer.close()  # whatever went wrong, the client is not left waiting for an answer
            if task is not None:
                tasks.discard(task)

    server = await asyncio.start_unix_server(handle, path=str(path))
    try:
        yield path
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(OSError):
            path.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, patterns: Sequence[str]) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    if len(head) > MAX_HEAD:
        await _refuse(writer, 431, "request head too large")
        return
    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3:
        await _refuse(writer, 400, "not an HTTP request")
        return
    method, target, _ = parts
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        tunnel = True
    else:
        scheme, _, rest = target.partition("://")
        if scheme.lower() != "http" or not rest:
            await _refuse(writer, 400, "only CONNECT and http:// requests go through the sandbox proxy")
            return
        authority = rest.split("/", 1)[0]
        host, colon, port = authority.rpartition(":")
        # Any digits are a port, judged by _port below (a 400 when they are none): not taken for
        # part of the host, which would make them a 403 naming a host "localhost:99999".
        if not colon or not port.isdigit():
            host, port = authority, "80"
        tunnel = False
    host = host.strip("[]")
    number = _port(port)
    if number is None or not _resolvable(host):
        await _refuse(writer, 400, f"bad target {target!r}")
        return
    if not allowed(host, number, patterns):
        await _refuse(writer, 403, _not_allowed(host, number, patterns))
        return
    try:
        up_reader, up_writer = await asyncio.wait_for(_connect(host, number, patterns), 15)
    except _NotPublic as refused:
        await _refuse(writer, 403, str(refused))
        return
    except (OSError, TimeoutError) as exc:
        await _refuse(writer, 502, f"cannot reach {host}:{port}: {exc}")
        return
    if tunnel:
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    else:
        up_writer.write(head)
    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


class _NotPublic(Exception):
    """A host allowed by a wildcard only resolved to no address it may reach (``_may_reach``)."""


async def _lookup(host: str, port: int) -> list[str]:
    """The addresses of ``host``, as the system's resolver gives them (once per connection)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


async def _connect(
    host: str, port: int, patterns: Sequence[str]
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the first address of ``host`` it may reach that answers: to that address,
    looked up here once, so that what was checked is what is reached (``_NotPublic`` when it may
    reach none of them, the last one's ``OSError`` when none answers)."""
    addresses = await _lookup(host, port)
    usable = [address for address in addresses if _may_reach(host, address, port, patterns)]
    if not usable:
        raise _NotPublic(
            f"{host} is allowed by a wildcard entry only, and resolves to {', '.join(addresses)}, "
            f"no public address: an entry {host}:{port} (or naming the address) in the sandbox's "
            "allowHosts would open it"
        )
    for address in usable[:-1]:
        with contextlib.suppress(OSError):
            return await asyncio.open_connection(address, port)
    return await asyncio.open_connection(usable[-1], port)


def _may_reach(host: str, address: str, port: int, patterns: Sequence[str]) -> bool:
    """Whether a connection to ``host`` may go to ``address``: an entry names the host itself,
    the address is public (an IPv4 address in IPv6 clothes judged as itself: ``_ipv4_within``),
    an entry names the address, or it is loopback and ``localhost`` is allowed."""
    if allowed(host, port, patterns, wildcards=False):
        return True
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        ip = _ipv4_within(ip) or ip
    if ip.is_global and not ip.is_multicast:
        return True
    return allowed(str(ip), port, patterns) or (ip.is_loopback and allowed("localhost", port, patterns))


_IPV4_IN_LOW_BITS = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::/96",  # IPv4-compatible (deprecated), but for :: and ::1, which are themselves
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
        "64:ff9b::/96",  # NAT64's well-known prefix
    )
)
"""IPv6 prefixes whose addresses carry an IPv4 address in their last 32 bits."""


def _ipv4_within(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``ip`` carries when it is one written as IPv6 (mapped, compatible,
    translated, 6to4, NAT64), or ``None``. ``is_global`` judges such an address by its IPv6
    prefix, not by the IPv4 address it leads to (through the kernel or a translator):
    ``::7f00:1`` and ``64:ff9b::a9fe:a9fe`` count as global, though they stand for loopback and
    a cloud's metadata service."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if int(ip) > 1 and any(ip in prefix for prefix in _IPV4_IN_LOW_BITS):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _port(text: str) -> int | None:
    """``text`` as a TCP port, or ``None``: five ASCII digits at most (``str.isdigit`` also takes
    "²", which ``int`` refuses, and ``int`` refuses more than 4,300 digits, which a 16 KiB request
    head holds), from 1 to 65535."""
    if not (len(text) <= 5 and text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        return None
    return int(text)


def _resolvable(host: str) -> bool:
    """Whether ``host`` can be looked up at all: the resolver encodes a name as IDNA first, and a
    name that does not encode (an empty label, one over 63 characters) raises ``UnicodeError``,
    which is no connection failure (a 502) but a malformed request (a 400)."""
    try:
        return bool(host) and bool(host.encode("idna"))
    except UnicodeError:
        return False


def _not_allowed(host: str, port: int, patterns: Sequence[str]) -> str:
    listed = f"the sandbox's allowHosts ({', '.join(patterns)})"
    if _ports_of(host, patterns):
        return f"port {port} of {host} is not in {listed}: an entry {host}:{port} would open it"
    return f"{host} is not in {listed}"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()


async def _refuse(writer: asyncio.StreamWriter, status: int, why: str) -> None:
    body = f"tether sandbox: {why}\n".encode()
    reason = {
        400: "Bad Request",
        403: "Forbidden",
        431: "Request Header Fields Too Large",
        502: "Bad Gateway",
    }
    writer.write(
        f"HTTP/1.1 {status} {reason[status]}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
    writer.close()


def proxy_environment() -> dict[str, str]:
    """The variables that send a confined command's HTTP(S) through the forwarder."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
    return {**dict.fromkeys(names, url), "NO_PROXY": "", "no_proxy": ""}


def forwarded(argv: Sequence[str], socket_path: Path, python: str) -> list[str]:
    """``argv`` behind the forwarder, run by ``python`` (this interpreter: readable inside)."""
    return [python, "-I", "-S", "-c", FORWARDER, str(socket_path), str(PROXY_PORT), *argv]
