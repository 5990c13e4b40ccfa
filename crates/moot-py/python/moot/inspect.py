"""moot in inspect_ai, two ways.

As a model provider, registered by the package: ``inspect eval task.py --model moot/PROTOCOL``
answers every generation of any task by a debate under PROTOCOL, run in-process. Model arguments
(``-M key=value`` on the command line, ``model_args`` in Python) are :func:`moot.ask`'s, but
``team`` for its ``config`` (inspect's own ``config`` is the generation settings): ``team`` (a
configuration file or dict: the agents), ``agents``, ``rounds``, ``answer`` (the answer
kind), ``options`` (protocol options, ``KEY=VALUE`` separated by ``;``), ``store`` (where the
debates are recorded; by default in memory). The question is the conversation's user text (its
last user message when there is one alone; otherwise every message, each under its role); the
completion is the decided answer, and the run id is in the output's metadata.

As a solver: each sample's input is debated, the chosen answer is the sample's output, and
every agent's turn is recorded in inspect's transcript.

    from inspect_ai import Task, eval
    from moot.inspect import debate

    task = Task(dataset=..., solver=debate(protocol="free-mad-n", agents=3, rounds=1,
                                           config="agents.toml"), scorer=match())
    eval(task, model="mockllm/model")   # the debate's agents are moot's, not inspect's model

Needs ``inspect-ai``. With ``sim=True`` the simulated agents are told each sample's target.
"""

from __future__ import annotations

from typing import Any, List, Optional

from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolChoice, ToolInfo

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


def _question(messages: List[ChatMessage]) -> str:
    """What a debate is asked: the one user message's text, or the whole conversation (system
    messages included) with each message under its role."""
    users = [m for m in messages if isinstance(m, ChatMessageUser)]
    if len(users) == 1 and len(messages) - len(users) <= 1 and messages[-1] is users[0]:
        system = [m.text for m in messages if m.role == "system"]
        return "\n\n".join(system + [users[0].text]) if system else users[0].text
    return "\n\n".join(f"{m.role}: {m.text}" for m in messages)


class DebateModelAPI(ModelAPI):
    """inspect's model ``moot/PROTOCOL``: every generation is a debate under PROTOCOL."""

    def __init__(
        self,
        model_name: str,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        config: GenerateConfig = GenerateConfig(),
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        known = {"team", "agents", "rounds", "answer", "options", "store"}
        unknown = sorted(set(model_args) - known)
        if unknown:
            raise ValueError(
                f"moot/{model_name}: unknown model argument(s) {', '.join(unknown)} "
                f"(moot reads {', '.join(sorted(known))})"
            )
        options = model_args.get("options")
        if isinstance(options, str):
            options = [o for o in options.split(";") if o.strip()]
        self._ask = {
            "protocol": model_name,
            "config": model_args.get("team"),
            "agents": _int(model_args.get("agents")),
            "rounds": _int(model_args.get("rounds")),
            "answer": model_args.get("answer"),
            "options": options,
        }
        self._store = moot._store(model_args.get("store", "memory:"))

    async def generate(
        self,
        input: List[ChatMessage],
        tools: List[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        result = await moot.ask_async(_question(input), store=self._store, **self._ask)
        answer = result.answer or ""
        output = ModelOutput.from_content(model=f"moot/{result.protocol}", content=answer)
        tokens = result.tokens
        output.usage = ModelUsage(
            input_tokens=int(tokens.get("input") or 0),
            output_tokens=int(tokens.get("output") or 0),
            total_tokens=int(tokens.get("input") or 0) + int(tokens.get("output") or 0),
        )
        output.metadata = {"moot_run_id": result.run_id, "moot_rule": result.rule}
        return output


def _int(value: Any) -> Optional[int]:
    """A model argument that is a count (``-M agents=3`` arrives as text or a number)."""
    return None if value is None else int(value)
