"""Messages/s through AutoGen AgentChat's RoundRobinGroupChat with trivial in-process agents.

The counterpart of `cargo bench -p runtime --bench floor`, part (c): agents that answer at
once with a fixed text, taking turns in a fixed order, so what is measured is the group
chat's own machinery. Counts every message of the run, the task included (as the ofc side
counts the user's messages).

    python3 -m venv /tmp/agvenv && /tmp/agvenv/bin/pip install autogen-agentchat
    /tmp/agvenv/bin/python bench/autogen_roundrobin.py [--agents 4] [--messages 2000] [--runs 5]
"""

import argparse
import asyncio
import statistics
import time
from typing import Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken


class Trivial(BaseChatAgent):
    """Answers "ok" at once."""

    def __init__(self, name: str) -> None:
        super().__init__(name, description="a trivial agent")

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        return Response(chat_message=TextMessage(content="ok", source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    team = RoundRobinGroupChat(
        [Trivial(f"a{i}") for i in range(args.agents)],
        termination_condition=MaxMessageTermination(args.messages),
    )
    # Warm-up run.
    await team.run(task="go")
    await team.reset()
    rates = []
    for _ in range(args.runs):
        started = time.perf_counter()
        result = await team.run(task="go")
        elapsed = time.perf_counter() - started
        await team.reset()
        rates.append(len(result.messages) / elapsed)
        print(f"run: {len(result.messages)} messages in {elapsed:.3f} s = {rates[-1]:.0f} messages/s")
    print(
        f"autogen-agentchat RoundRobinGroupChat, {args.agents} trivial agents: "
        f"median {statistics.median(rates):.0f} messages/s, best {max(rates):.0f} messages/s"
    )


if __name__ == "__main__":
    asyncio.run(main())
