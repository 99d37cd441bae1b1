"""A private PostgreSQL server for tests and benchmarks: ``initdb`` into a temporary folder, then
``postgres`` on 127.0.0.1 on a free port, stopped and deleted on exit.

The server binaries come from ``$TETHER_PG_BIN``, else the ``PATH``, else Debian's
``/usr/lib/postgresql/<version>/bin`` (newest first), where the ``postgresql`` package puts them
without linking them into the ``PATH``. PostgreSQL refuses to run as root, so under root (a CI
container) the cluster belongs to the unprivileged ``nobody`` user and both programs run as it;
the folder is made outside pytest's private temporary tree, which that user could not enter.
Nothing here touches a system cluster: the server has its own data folder, port and no Unix
socket.

Nothing outlives its owner: the server runs in a session of its own (a Ctrl-C of the tests reaches
it only through the orderly stop), so a test run killed outright (``kill -9``, an OOM kill) would
leave it running for good, its folder with it. A watchdog process (``_Watchdog``) holds the read end
of a pipe whose write end only the owner has; the kernel closes that end however the owner ends,
and at its end of file the watchdog stops the server (``pg_ctl stop -m immediate``) and deletes the
folder. ``PR_SET_PDEATHSIG`` would not do: it fires when the *thread* that started the server ends.

    with postgres_server() as server:
        url = server.url()            # postgresql://tether@127.0.0.1:<port>/postgres
        server.crash()                # pg_ctl stop -m immediate: every client connection cut
        server.start_again()          # the same cluster on the same port
        server.freeze()               # SIGSTOP: connected clients get no answer; thaw() undoes it
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tether.errors import TetherError
from tether.testing.llama_server import free_port

BIN_ENV = "TETHER_PG_BIN"
DEBIAN_BINS = Path("/usr/lib/postgresql")
SUPERUSER = "tether"
INSTALL_HINT = (
    "needs the PostgreSQL server programs (initdb, postgres): apt-get install postgresql "
    f"(Debian puts them in {DEBIAN_BINS}/<version>/bin), or set {BIN_ENV} to their folder"
)
STARTUP_TIMEOUT = 60.0
TEST_SETTINGS: Mapping[str, str] = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
"""Fast and crash-unsafe: for a throw-away cluster whose data dies with the test run. Process
crashes of clients (what the tests kill) lose nothing either way: a commit is the server's."""
CRASH_SAFE_SETTINGS: Mapping[str, str] = {**TEST_SETTINGS, "synchronous_commit": "on"}
"""For a server the test crashes (``PostgresServer.crash``): a commit is written out before it is
answered (the machine does not crash, so ``fsync`` may stay off)."""


class PostgresServerError(TetherError, RuntimeError):
    """initdb failed, or the server exited or did not answer in time; the message ends with its log."""


@dataclass(slots=True)
class PostgresServer:
    """A running private server: trust authentication for ``tether``, on 127.0.0.1 only."""

    process: subprocess.Popen[bytes]
    port: int
    folder: Path
    bin_dir: Path | None = None
    user: pwd.struct_passwd | None = None
    settings: Mapping[str, str] = field(default_factory=dict[str, str])

    def crash(self) -> None:
        """``pg_ctl stop -m immediate``: the server stops at once, as in a crash (clients' connections
        cut, no checkpoint; the next start recovers from the WAL)."""
        if self.bin_dir is None:
            raise PostgresServerError("this server cannot be stopped and started again")
        run_as = _RunAs.of(self.user)
        result = subprocess.run(
            [str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.folder / "data"), "-m", "immediate", "-w"],
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            user=run_as.user,
            group=run_as.group,
            extra_groups=run_as.extra_groups,
        )
        if result.returncode != 0:
            raise PostgresServerError(f"pg_ctl stop failed with status {result.returncode}:\n{result.stderr}")
        self.process.wait(timeout=30)

    def start_again(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Start the stopped cluster again on the same port (clients reconnect to the same URL)."""
        if self.bin_dir is None:
            raise PostgresServerError("this server cannot be stopped and started again")
        self.process = _spawn(self.bin_dir, self.folder, self.user, self.settings, self.port)
        if not _wait_until_ready(self, timeout):
            raise PostgresServerError(f"postgres could not bind port {self.port} again:\n{_tail(self)}")

    def freeze(self) -> None:
        """SIGSTOP the server and its processes (each backend is a session of its own): connections
        stay open and the kernel still accepts and acknowledges, but nothing answers, as a hung
        host or a paused virtual machine. ``thaw`` undoes it; ``postgres_server`` thaws on exit."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT what ``freeze`` stopped (nothing if the server is not running)."""
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, number: int) -> None:
        """``number`` to the postmaster first (it forks no backend once stopped), then its children."""
        for pid in (self.process.pid, *_children(self.process.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, number)

    def url(self, database: str = "postgres", **params: str) -> str:
        query = "&".join(f"{key}={value}" for key, value in params.items())
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}" + (f"?{query}" if query else "")

    def log(self) -> str:
        return (self.folder / "server.log").read_text(errors="replace")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's ``/proc``)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:  # after "(command)": state, ppid
            found.append(int(entry.name))
    return found


def find_bin_dir() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``, or ``None`` when PostgreSQL is not installed."""
    configured = os.environ.get(BIN_ENV)
    if configured:
        return Path(configured)
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("postgres") is not None:
        return Path(on_path).resolve().parent
    versions = sorted(DEBIAN_BINS.glob("*/bin/initdb"), key=lambda p: _version_key(p.parent.parent.name))
    return versions[-1].parent if versions else None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isascii() and part.isdigit())


@contextmanager
def postgres_server(
    bin_dir: Path | None = None,
    settings: Mapping[str, str] = TEST_SETTINGS,
    *,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Generator[PostgresServer]:
    """Make a cluster, run it for the ``with`` block, then stop it and delete its folder."""
    bin_dir = bin_dir or find_bin_dir()
    if bin_dir is None:
        raise PostgresServerError(f"PostgreSQL not found: {INSTALL_HINT}")
    user = _unprivileged_user()
    folder = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    watchdog: _Watchdog | None = None
    try:
        if user is not None:
            os.chown(folder, user.pw_uid, user.pw_gid)
        watchdog = _Watchdog(bin_dir, folder, user)
        _initdb(bin_dir, folder, user)
        server = _start(bin_dir, folder, user, settings, startup_timeout)
        try:
            yield server
        finally:
            server.thaw()  # a frozen server takes no signal but this one
            _stop(server.process)
    finally:
        if watchdog is not None:
            watchdog.close()
        shutil.rmtree(folder, ignore_errors=True)


_WATCHDOG_SCRIPT = """
import os, shutil, signal, subprocess, sys
pg_ctl, data, folder = sys.argv[1:]
while os.read(0, 512):  # the owner writes nothing: this returns b"" once it has exited
    pass
try:  # a server the owner froze (PostgresServer.freeze) takes no stop signal: thaw it and its children
    with open(os.path.join(data, "postmaster.pid")) as pid_file:
        postmaster = pid_file.readline().strip()
except OSError:
    postmaster = ""
for entry in os.listdir("/proc") if postmaster else ():
    try:
        with open(f"/proc/{entry}/stat") as stat:
            if entry == postmaster or stat.read().rpartition(")")[2].split()[1] == postmaster:
                os.kill(int(entry), signal.SIGCONT)
    except (OSError, IndexError, ValueError):
        pass
subprocess.run([pg_ctl, "stop", "-D", data, "-m", "immediate", "-w"], stdin=subprocess.DEVNULL,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
shutil.rmtree(folder, ignore_errors=True)
"""


class _Watchdog:
    """Stops the cluster in ``folder`` and deletes the folder once this process has ended, however
    it ended (see the module docstring); ``close`` when the server was stopped in order.

    It runs as the server's user (``pg_ctl`` must be), in a session of its own (a Ctrl-C of the
    tests is not its business), on ``python -I -S`` (nothing of the tests' environment to import).
    Its pipe's write end is not inheritable: a process this one starts cannot keep it open."""

    def __init__(self, bin_dir: Path, folder: Path, user: pwd.struct_passwd | None) -> None:
        read_end, self._write_end = os.pipe()
        run_as = _RunAs.of(user)
        try:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    _WATCHDOG_SCRIPT,
                    str(bin_dir / "pg_ctl"),
                    str(folder / "data"),
                    str(folder),
                ],
                cwd="/",
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                user=run_as.user,
                group=run_as.group,
                extra_groups=run_as.extra_groups,
            )
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)

    def close(self) -> None:
        """The server is stopped: let the watchdog go (it finds no server and deletes the folder)."""
        os.close(self._write_end)
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _unprivileged_user() -> pwd.struct_passwd | None:
    """``nobody`` when running as root (PostgreSQL will not), else ``None``: run as ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        raise PostgresServerError(
            "running as root and there is no 'nobody' user to run PostgreSQL as"
        ) from None


@dataclass(frozen=True, slots=True)
class _RunAs:
    """``subprocess`` arguments that drop root to a user (group and supplementary groups too)."""

    user: int | None = None
    group: int | None = None
    extra_groups: list[int] | None = None

    @classmethod
    def of(cls, user: pwd.struct_passwd | None) -> _RunAs:
        return cls() if user is None else cls(user.pw_uid, user.pw_gid, [])


def _initdb(bin_dir: Path, folder: Path, user: pwd.struct_passwd | None) -> None:
    command = [
        str(bin_dir / "initdb"),
        "--pgdata",
        str(folder / "data"),
        "--username",
        SUPERUSER,
        "--auth",
        "trust",
        "--encoding",
        "UTF8",
        "--locale",
        "C.UTF-8",
        "--no-sync",
    ]
    run_as = _RunAs.of(user)
    result = subprocess.run(
        command,
        cwd=folder,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        user=run_as.user,
        group=run_as.group,
        extra_groups=run_as.extra_groups,
    )
    if result.returncode != 0:
        raise PostgresServerError(f"initdb failed with status {result.returncode}:\n{result.stderr[-2000:]}")


def _start(
    bin_dir: Path,
    folder: Path,
    user: pwd.struct_passwd | None,
    settings: Mapping[str, str],
    timeout: float,
) -> PostgresServer:
    attempts = 3  # the free port can be taken between choosing and binding it
    while True:
        attempts -= 1
        port = free_port()
        server = PostgresServer(
            _spawn(bin_dir, folder, user, settings, port), port, folder, bin_dir, user, settings
        )
        if _wait_until_ready(server, timeout):
            return server
        if not attempts:
            raise PostgresServerError(f"postgres could not bind a free port:\n{_tail(server)}")


def _spawn(
    bin_dir: Path, folder: Path, user: pwd.struct_passwd | None, settings: Mapping[str, str], port: int
) -> subprocess.Popen[bytes]:
    run_as = _RunAs.of(user)
    command = [
        str(bin_dir / "postgres"),
        "-D",
        str(folder / "data"),
        "-p",
        str(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
    ]
    for name, value in settings.items():
        command += ["-c", f"{name}={value}"]
    with (folder / "server.log").open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the tests reaches the server through _stop only
            user=run_as.user,
            group=run_as.group,
            extra_groups=run_as.extra_groups,
        )
    return process


def _wait_until_ready(server: PostgresServer, timeout: float) -> bool:
    """True once the server accepts a connection; False if it exited because its port was taken."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        if server.process.poll() is not None:
            if "could not bind" in server.log() or "Address already in use" in server.log():
                return False
            raise PostgresServerError(
                f"postgres exited with status {server.process.returncode}:\n{_tail(server)}"
            )
        try:
            psycopg.connect(server.url(), connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            pass
        if time.monotonic() > deadline:
            _stop(server.process)
            raise PostgresServerError(
                f"postgres did not accept connections in {timeout:.0f} s:\n{_tail(server)}"
            )
        time.sleep(0.05)


def _tail(server: PostgresServer, lines: int = 30) -> str:
    return "\n".join(server.log().splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT: disconnect clients, checkpoint), then kill if it hangs."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
