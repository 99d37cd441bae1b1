"""The shortest tether program: a plain answer, then a typed one, without async.

    python examples/hello_sync.py

The model is $EXAMPLE_MODEL (e.g. anthropic/claude-sonnet-4-5), else tether's default choice.
"""

import os

from pydantic import BaseModel

import tether

MODEL = os.environ.get("EXAMPLE_MODEL")


class City(BaseModel):
    name: str
    country: str


print(tether.run_sync("Say hello in French.", model=MODEL))
city = tether.run_sync("Which city hosts the Louvre?", model=MODEL, output=City)
print(f"{city.name} is in {city.country}")
