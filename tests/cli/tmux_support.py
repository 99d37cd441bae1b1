"""A real terminal for the interactive tests: tmux runs ``tether``, the test types and reads the screen."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable


def input_line(screen: str) -> str:
    """The first line of the input box: the line under the last rule above it."""
    if "─" * 20 not in screen:
        return ""  # not drawn (yet)
    below = screen.rsplit("─" * 20, 1)[-1].lstrip("─").split("\n")
    return below[1].rstrip() if len(below) > 1 else ""


def status_line(screen: str) -> str:
    """The live area's status line (the last one drawn): `` provider/id · thinking LEVEL …``."""
    lines = [line for line in screen.splitlines() if " · thinking " in line]
    return lines[-1].strip() if lines else ""


def started(screen: str) -> bool:
    """Started and fully drawn: the banner, the input box and the status line under it (one frame
    is written in pieces, so the banner alone can be captured before the live area exists)."""
    return "/help for commands" in screen and input_line(screen).startswith("›") and status_line(screen) != ""


NAP = "until [ -e wake ]; do sleep 0.1; done; echo slept"
"""A command that runs until the test touches ``wake`` in the project: a run to act on mid-tool."""


def take_a_nap(terminal: Terminal) -> None:
    """Prompt "take a nap" (the script calls ``bash`` with ``NAP``), allow the command if asked
    (unless the sandbox confines it), and wait until the run is working on it."""
    terminal.type("take a nap")
    terminal.send("Enter")
    screen = terminal.wait_for(lambda s: f"Run command: {NAP}" in s or f"… bash command={NAP}" in s)
    if "Run command" in screen:
        terminal.send("y")
    terminal.wait_for(
        lambda s: "● working" in status_line(s) and "Run command" not in s.split("take a nap")[-1]
    )


class Terminal:
    """A detached tmux session on a private server socket, 100x30."""

    def __init__(self, command: list[str], cwd: str, env: dict[str, str]) -> None:
        self.socket = f"tether-test-{uuid.uuid4().hex[:8]}"
        exports = [f"{key}={value}" for key, value in env.items()]
        self.tmux(
            "new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "-c", cwd, "env", *exports, *command
        )
        self.tmux("set-option", "-t", "t", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False)
        return done.stdout

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", text)

    def screen(self, *, escapes: bool = False) -> str:
        """The visible screen and scrollback; ``escapes`` keeps colour and style sequences.
        On the alternate screen (a full-screen view), only what is visible."""
        while True:  # the same screen before and after the capture: not mid-switch
            full = self.full_screen()
            history = [] if full else ["-S", "-200"]
            text = self.tmux("capture-pane", "-p", "-J", *history, *(["-e"] if escapes else []), "-t", "t")
            if self.full_screen() == full:
                return text

    def full_screen(self) -> bool:
        return self.tmux("display-message", "-p", "-t", "t", "#{alternate_on}").strip() == "1"

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", "t", "#{pane_dead}").strip() == "1"

    def wait_for(self, check: Callable[[str], bool] | str, timeout: float = 20.0) -> str:
        predicate: Callable[[str], bool] = (lambda s: check in s) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {check!r}; screen:\n{screen}")

    def close(self) -> None:
        self.tmux("kill-server")

    def wait_until_dead(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.dead() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.dead(), self.screen()
