"""A conversation stored on disk, continued by a second run of this program.

    python examples/resume_session.py "My name is Ana."                # prints the session id
    python examples/resume_session.py --resume ID "What is my name?"   # the model remembers

Sessions live in tether's database (`tether sessions` lists them; TETHER_HOME moves it).
The model is $EXAMPLE_MODEL, else the resumed session's, else tether's default choice.
"""

import asyncio
import os
import sys

import tether


async def main(args: list[str]) -> str | None:
    resume = args[1] if args[:1] == ["--resume"] else None
    prompt = " ".join(args[2:] if resume else args) or "Hello!"
    core = tether.create_agent_session(
        tether.AgentOptions(model=os.environ.get("EXAMPLE_MODEL"), tools=[]),
        session=tether.SessionChoice(session_id=resume),  # None: a new session
    )
    try:
        for message in core.messages:  # the stored transcript, loaded on resume
            print(f"[earlier] {message['role']}: {tether.message_text(message)}")
        await core.prompt(prompt)  # recorded message by message as the run goes
        answer = core.last_assistant()
        if answer is not None and answer["stopReason"] in ("error", "aborted"):
            return f"error: {answer.get('errorMessage')}"  # a failed reply: exit 1 saying why
        print(f"assistant: {tether.message_text(core.messages[-1])}")
        print(f"session: {core.session_id}")
    finally:
        await core.close()


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(sys.argv[1:])))
    except tether.TetherError as exc:  # no usable model, a bad setting: the message says what to do
        sys.exit(f"error: {exc}")
