"""Many conversations at once in one process, each with a stored session, against one server.

    python examples/many_sessions.py http://127.0.0.1:8080/v1 qwen3-8b 20

Each conversation is a `tether.AgentSession` of its own; they all run in one event loop. The
provider's connection limit says how many replies stream at the same time (the others wait
for a slot); each conversation's requests reuse its kept-alive connection. The garbage
collector is tuned for many sessions (`tether.tune_gc`), as `docs/library.md` advises.
"""

import asyncio
import sys

import tether
from tether.ai import set_connection_limit
from tether.ai.models import ProviderInfo, register_provider_info


async def main(base_url: str, model_id: str, count: int) -> None:
    register_provider_info(ProviderInfo("my-server", "openai-completions", base_url, None, local=True))
    tether.tune_gc()  # start-up done, many sessions ahead: fewer collections walking them all
    set_connection_limit(4, "my-server")  # at most 4 replies streaming at once
    model = tether.find_model(f"my-server/{model_id}")
    sessions = tether.SessionManager.at("many.db")
    cores = [tether.AgentSession(tether.Agent(model=model), sessions.create(".")) for _ in range(count)]
    try:
        answers = await asyncio.gather(*(core.prompt(f"Question {i}?") for i, core in enumerate(cores)))
        for added in answers:
            print(tether.message_text(added[-1]))
    finally:
        for core in cores:
            await core.close()
    stored = sessions.list()
    print(f"{len(stored)} sessions stored, {sum(s.message_count for s in stored)} messages")
    sessions.close()


if __name__ == "__main__":
    url, model, count = sys.argv[1:] or ["http://127.0.0.1:8080/v1", "default", "20"]
    asyncio.run(main(url, model, int(count)))
