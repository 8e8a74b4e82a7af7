"""An MCP server (stdio) whose tools misbehave on purpose, for agentry-mcp's fault tests.

Written with the official `mcp` package's MCPServer (FastMCP in mcp 1.x).
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("faults")

# The pipe the client reads. The SDK moves the protocol to a private duplicate of fd 1 and points
# fd 1 elsewhere, so that stray prints cannot corrupt it; `garbage` finds that duplicate on purpose.
WIRE = os.fstat(1).st_ino


def wire_fd() -> int:
    for fd in range(1, 256):
        try:
            if os.fstat(fd).st_ino == WIRE:
                return fd
        except OSError:
            continue
    return 1


def log(line: str) -> None:
    """Appends a line to the file FAULTS_LOG names, for the tests to read."""
    path = os.environ.get("FAULTS_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Returns its input."""
    return text


@server.tool()
def crash(text: str) -> str:
    """Exits the whole server in the middle of the call."""
    print("faults: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def hang(seconds: float = 3600) -> str:
    """Never answers in time."""
    print("faults: hanging", file=sys.stderr, flush=True)
    log("hang started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        log("hang cancelled")
        raise
    return "woke up"


@server.tool()
def garbage() -> str:
    """Writes something that is not JSON-RPC on stdout."""
    print("faults: about to write garbage", file=sys.stderr, flush=True)
    os.write(wire_fd(), b"this is not JSON-RPC\n")
    return "never seen"


@server.tool()
def huge(size: int) -> str:
    """Returns `size` bytes of text."""
    return "x" * size


@server.tool()
def fail(reason: str) -> str:
    """Fails: the result has isError true."""
    raise ToolError(f"cannot do that: {reason}")


@server.tool(annotations=ToolAnnotations(destructiveHint=True, readOnlyHint=False))
def wipe(path: str) -> str:
    """Pretends to delete a path."""
    return f"wiped {path}"


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Reports progress `count` times."""
    for i in range(count):
        await ctx.report_progress(i + 1, count, f"step {i + 1}")
        await asyncio.sleep(0.01)
    return f"{count} steps"


def extra(text: str) -> str:
    """A tool added while the server runs."""
    return f"extra: {text}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and tells the client its tool list changed."""
    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "added extra"


if __name__ == "__main__":
    server.run("stdio")
