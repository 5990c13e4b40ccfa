"""moot as an inspect_ai solver: each sample's input is debated, the chosen answer is the
sample's output, and every agent's turn is recorded in inspect's transcript.

    from inspect_ai import Task, eval
    from moot.inspect import debate

    task = Task(dataset=..., solver=debate(protocol="free-mad-n", agents=3, rounds=1,
                                           config="agents.toml"), scorer=match())
    eval(task, model="mockllm/model")   # the debate's agents are moot's, not inspect's model

Needs ``inspect-ai``. With ``sim=True`` the simulated agents are told each sample's target.
"""

from __future__ import annotations

from typing import Any, Optional

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

import moot


@solver
def debate(
    protocol: Optional[str] = None,
    agents: Optional[int] = None,
    rounds: Optional[int] = None,
    config: Any = None,
    store: Any = "memory:",
    sim: bool = False,
    **ask_options: Any,
) -> Solver:
    """A solver that answers each sample by a moot debate (see :func:`moot.ask` for the
    arguments); the store keeps each debate, whose run id is in the sample's metadata."""
    shared = moot._store(store)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = await moot.ask_async(
            state.input_text,
            protocol=protocol,
            agents=agents,
            rounds=rounds,
            config=config,
            store=shared,
            sim=sim,
            gold=state.target.text if sim else None,
            **ask_options,
        )
        log = transcript()
        for call in shared.calls(result.run_id):
            log.info(
                {
                    "round": call.get("round"),
                    "agent": call.get("agent_id"),
                    "slot": call.get("slot"),
                    "answer": call.get("answer"),
                    "response": call.get("response_text"),
                },
                source=f"moot {result.protocol}",
            )
        log.info(
            {
                "answer": result.answer,
                "rule": result.rule,
                "run_id": result.run_id,
                "ncomm": result.ncomm,
                "tokens": result.tokens,
            },
            source=f"moot {result.protocol}: decision",
        )
        answer = result.answer or ""
        state.messages.append(ChatMessageAssistant(content=answer))
        state.output = ModelOutput.from_content(model=f"moot/{result.protocol}", content=answer)
        state.metadata["moot_run_id"] = result.run_id
        return state

    return solve
