"""Calls agentry agents served over MCP on stdio with the official Python `mcp` client.

Usage: call_agents.py <server command>. Prints one JSON object a line, for the test to read.
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def out(**fields):
    print(json.dumps(fields), flush=True)


def dump(result):
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


async def main(command: str) -> None:
    # The client passes the server a minimal environment; forward the test's log path.
    env = {k: v for k, v in os.environ.items() if k == "AGENTRY_MCP_SERVE_LOG"}
    params = StdioServerParameters(command=command, args=[], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out(tools=[dump(t) for t in tools.tools])

            progress = []

            async def on_progress(value, total, message):
                progress.append(message)

            result = await session.call_tool("greeter", {"prompt": "ada"}, progress_callback=on_progress)
            out(greeter=dump(result), progress=progress)

            result = await session.call_tool("janitor", {"prompt": "/srv/old"})
            out(janitor=dump(result))

            # Abandoning a call sends notifications/cancelled, which cancels the run.
            with anyio.move_on_after(1.5) as scope:
                await session.call_tool("greeter", {"prompt": "slow down"})
            out(cancelled=scope.cancelled_caught)

            result = await session.call_tool("greeter", {"prompt": "bob"})
            out(after=dump(result))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
