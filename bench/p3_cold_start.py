"""Benchmark P3: cold start of the ``tether`` command.

Median wall time (N rounds of one run each, after one warm-up round) of:
- ``python -c pass`` — the floor: no CLI can start faster than the interpreter;
- ``tether --version``;
- ``tether -p "hi" --no-session`` with the scripted model (``TETHER_SCRIPTED``): a whole run;
- ``tether -p "hi"`` the same, storing the session (SQLite, messages validated): what a user runs;
- ``tether -p --no-session`` with 20 skills, 20 prompt templates and 5 extensions in the user's
  config folder (their own home): what the user's files cost, over the same run without them;
- ``pi --version`` — the reference, the pi coding agent CLI from npm (installed on first use
  into ``bench/reference/pi-cli/node_modules``, git-ignored).
Goal: tether <= 150 ms and at most half of pi's time.

``--tracing`` measures the two ``tether -p`` runs with OpenTelemetry off and on instead, side by
side: on, ``OTEL_EXPORTER_OTLP_ENDPOINT`` points at an OTLP/HTTP receiver in this process, so each
run loads the SDK and the exporter, records its spans and metrics and sends them before exiting.

Bytecode caching is on for the measured commands (``PYTHONDONTWRITEBYTECODE`` is dropped from
their environment): a user's installed tether has its ``.pyc`` files, and the warm-up run writes
them for an editable install. Without them every run recompiles tether's ~80 modules.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _summary import record_paired

RUNS = 15
HERE = Path(__file__).resolve().parent
PI_DIR = HERE / "reference" / "pi-cli"


def measure(argv: list[str], env: dict[str, str], runs: int = RUNS) -> float:
    """Median seconds of ``runs`` executions (one extra warm-up run first)."""
    return statistics.median(measure_together([(argv, env)], runs)[0])


def measure_together(commands: list[tuple[list[str], dict[str, str]]], runs: int = RUNS) -> list[list[float]]:
    """Seconds of each command in each of ``runs`` rounds (after a warm-up round), one run of each
    per round: this machine's speed drifts by a quarter within a minute, and taking the commands
    in turn spreads the drift over all of them instead of whichever ran last (and ratios taken
    within a round pair runs made under the same load)."""
    times: list[list[float]] = [[] for _ in commands]
    for i in range(runs + 1):
        for (argv, env), samples in zip(commands, times, strict=True):
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, check=False)
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(
                    f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}"
                )
            if i:
                samples.append(elapsed)
    return times


def tether_command() -> list[str]:
    script = Path(sys.executable).with_name("tether")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tether.cli"]


def pi_command() -> list[str] | None:
    binary = PI_DIR / "node_modules" / ".bin" / "pi"
    if not binary.exists():
        if shutil.which("npm") is None:
            return None
        print("installing the pi CLI into bench/reference/pi-cli (once) ...", file=sys.stderr)
        install = ["npm", "ci"] if (PI_DIR / "package-lock.json").exists() else ["npm", "install"]
        subprocess.run([*install, "--no-audit", "--no-fund"], cwd=PI_DIR, check=True, capture_output=True)
    return [str(binary)]


def print_tracing(tether: list[str], env: dict[str, str]) -> None:
    from tether.testing.otlp_receiver import OtlpReceiver

    commands = [
        ("tether -p --no-session", ["-p", "hi", "--no-session"]),
        ("tether -p (session stored)", ["-p", "hi"]),
    ]
    plain = {key: value for key, value in env.items() if not key.startswith("OTEL_")}
    with OtlpReceiver() as receiver:
        traced = {**plain, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        rows = [
            (name, measure([*tether, *args], plain), measure([*tether, *args], traced))
            for name, args in commands
        ]
        if not receiver.bodies("/v1/traces"):
            raise SystemExit("tracing on exported nothing: is the otel extra installed?")
    print(f"P3 cold start with OpenTelemetry off and on (OTLP/HTTP to 127.0.0.1), median of {RUNS} runs")
    print(f"{'command':<30} {'off ms':>8} {'on ms':>8} {'on/off':>8}")
    for name, off, on in rows:
        print(f"{name:<30} {off * 1000:8.1f} {on * 1000:8.1f} {on / off:8.2f}")


def write_user_files(config: Path, skills: int = 20, templates: int = 20, extensions: int = 5) -> None:
    """A config folder with ``skills`` skills, ``templates`` prompt templates and ``extensions``
    extensions, each a small but realistic file (front matter, a body; a tool, a command, a hook)."""
    for i in range(skills):
        folder = config / "skills" / f"skill-{i:02}"
        folder.mkdir(parents=True)
        body = "\n".join(f"{n}. Step {n} of the procedure, with its details." for n in range(1, 30))
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:02}\ndescription: >-\n  Use when the task is of kind {i}: a description\n"
            f"  folded over two lines.\nlicense: MIT\nmetadata:\n  author: bench\n---\n# Skill {i}\n\n{body}\n"
        )
    (config / "prompts").mkdir(parents=True)
    for i in range(templates):
        (config / "prompts" / f"prompt-{i:02}.md").write_text(
            f"---\ndescription: Template number {i}\nargument-hint: FILE\n---\nReview $1 for problem {i}: $ARGUMENTS\n"
        )
    (config / "extensions").mkdir(parents=True)
    for i in range(extensions):
        (config / "extensions" / f"ext_{i}.py").write_text(
            "from tether.agent import tool\n\n\n"
            "def setup(api):\n"
            f"    @api.register_tool\n    @tool\n    def tool_{i}(text: str, times: int = 1) -> str:\n"
            f'        """Tool {i}: repeat a text."""\n        return text * times\n\n'
            f"    api.register_command('cmd-{i}', lambda args, ctx: args, description='command {i}')\n\n"
            "    @api.on('tool_call')\n    def check(context):\n        return None\n"
        )


def main(argv: list[str] | None = None) -> None:
    """``argv`` are this benchmark's options; ``bench/run.py`` passes none (its own argv names benchmarks)."""
    parser = argparse.ArgumentParser(description="P3: cold start of the tether command")
    parser.add_argument("--tracing", action="store_true", help="OpenTelemetry off and on, side by side")
    tracing = parser.parse_args(argv or []).tracing
    with tempfile.TemporaryDirectory() as home:
        script = Path(home) / "script.json"
        script.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["hello"]}]}]))
        env = {**os.environ, "TETHER_HOME": home, "TETHER_SCRIPTED": str(script), "NO_COLOR": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        tether = tether_command()
        if tracing:
            print_tracing(tether, env)
            return
        user_home = Path(home) / "with-user-files"
        write_user_files(user_home / "config")
        with_files = {**env, "TETHER_HOME": str(user_home)}
        commands = [
            ("python -c pass (floor)", [sys.executable, "-c", "pass"], env),
            ("tether --version", [*tether, "--version"], env),
            ("tether -p --no-session", [*tether, "-p", "hi", "--no-session"], env),
            ("tether -p (session stored)", [*tether, "-p", "hi"], env),
            ("tether -p, 20+20+5 user files", [*tether, "-p", "hi", "--no-session"], with_files),
        ]
        pi = pi_command()
        if pi is not None:  # in the same rounds, so that every ratio pairs runs of one round
            commands.append(("pi --version (reference)", [*pi, "--version"], env))
        samples = measure_together([(argv, command_env) for _, argv, command_env in commands])
    names = [name for name, _, _ in commands]
    runs = dict(zip(names, samples, strict=True))
    floor = statistics.median(samples[0])
    pi_runs = runs.get("pi --version (reference)")
    print(
        f"P3 cold start, median of {RUNS} interleaved rounds (ratios: the median of per-round ratios, "
        f"range); Python {sys.version.split()[0]} ({sys.executable})"
    )
    print(f"{'command':<30} {'ms':>8} {'x floor':>8} {'x pi':>20}")
    for name in names:
        seconds = statistics.median(runs[name])
        vs_pi = f"{'-':>20}"
        if pi_runs is not None and name not in (names[0], "pi --version (reference)"):
            paired = record_paired(name, runs[name], pi_runs, "pi --version")
            vs_pi = f"{statistics.median(paired):8.2f} ({min(paired):.2f}-{max(paired):.2f})".rjust(20)
        print(f"{name:<30} {seconds * 1000:8.1f} {seconds / floor:8.2f} {vs_pi}")
    if pi_runs is None:
        print("pi --version: npm not available, reference skipped")
    plain, loaded = runs["tether -p --no-session"], runs["tether -p, 20+20+5 user files"]
    paired = record_paired(
        "user files (20 skills, 20 templates, 5 ext.)", loaded, plain, "tether -p --no-session"
    )
    cost = (statistics.median(loaded) - statistics.median(plain)) * 1000
    print(
        f"20 skills, 20 templates, 5 extensions cost {cost:.1f} ms "
        f"({statistics.median(paired):.2f}x, {min(paired):.2f}-{max(paired):.2f})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
