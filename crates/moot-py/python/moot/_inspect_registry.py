"""Registers moot with inspect_ai as a model provider: ``inspect eval task.py --model
moot/free-mad-n`` answers each of the task's generations by a debate run in-process (no
server). inspect finds this module through the ``inspect_ai`` entry point in moot's package
metadata; it imports nothing of moot's debate machinery until the provider is used."""

from inspect_ai.model import modelapi


@modelapi(name="moot")
def moot_provider() -> type:
    from .inspect import DebateModelAPI

    return DebateModelAPI
