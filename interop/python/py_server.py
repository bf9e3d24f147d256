#!/usr/bin/env python3
"""A server built on the official Python SDK v2 (``mcp`` 2.3.0) for the strict client's
interop tests (tests/client_interop.rs): tools, a resource, a prompt and
``subscriptions/listen``, all with fixed, recognisable values the tests assert.

Usage (run with the interop venv's python, .interop/venv/bin/python):

    py_server.py               stdio
    py_server.py --http PORT   Streamable HTTP on http://127.0.0.1:PORT/mcp (0: any free port);
                               the first stdout line is {"listening":"http://127.0.0.1:PORT/mcp"}

Tools:
    echo          {text} -> "<text>"
    confirm_echo  {text} -> one input round through the SDK's resolvers (``Resolve`` +
                            ``Elicit``): round 1 answers input_required with one form
                            elicitation {confirm: boolean} and a sealed requestState;
                            round 2 answers "confirmed: <text>" (confirm true) or "declined"
    touch_tools   {}     -> publishes notifications/tools/list_changed, then "touched tools"
    sleep         {ms}   -> waits ms (a cancelled request stops waiting), then "slept <ms>"
    count         {n}    -> n notifications/progress (i of n, "step i") when the request has a
                            progressToken, then "counted <n>"
    fail          {}     -> raises ToolError("boom"): the SDK answers an isError result
    touch         {}     -> publishes notifications/resources/updated for the resource, then
                            "touched"
Resource: strict://interop/greeting (text/plain) "hello from the py server"
Prompt:   greet {name} -> one user message "Hello, <name>!"
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Annotated

import anyio
from pydantic import BaseModel

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError

RESOURCE_URI = "strict://interop/greeting"
RESOURCE_TEXT = "hello from the py server"

mcp = MCPServer(name="strict-mcp-interop-py", version="0.1.0")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the given text back."""
    return text


class Confirm(BaseModel):
    """The one answer confirm_echo asks for."""

    confirm: bool


def ask_confirm(text: str) -> Elicit[Confirm]:
    """The question of confirm_echo's single input round."""
    return Elicit(f'Echo "{text}"?', Confirm)


@mcp.tool()
def confirm_echo(text: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
    """Ask for confirmation (one input round), then echo the text."""
    if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
        return f"confirmed: {text}"
    return "declined"


@mcp.tool()
async def touch(ctx: Context) -> str:
    """Announce an update of the greeting resource to listen streams subscribed to it."""
    await ctx.notify_resource_updated(RESOURCE_URI)
    return "touched"


@mcp.tool()
async def touch_tools(ctx: Context) -> str:
    """Announce a change of the tool list to listen streams that asked for it."""
    await ctx.notify_tools_changed()
    return "touched tools"


@mcp.tool()
async def sleep(ms: int) -> str:
    """Wait ms milliseconds (a cancelled request cancels the wait), then answer."""
    await anyio.sleep(ms / 1000)
    return f"slept {ms}"


@mcp.tool()
async def count(n: int, ctx: Context) -> str:
    """Report progress n times (when the request asked for it), then answer."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted {n}"


@mcp.tool()
def fail() -> str:
    """Always fails: its error is the tool result."""
    raise ToolError("boom")


@mcp.resource(RESOURCE_URI, name="greeting", title="Greeting", description="A fixed greeting.", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return RESOURCE_TEXT


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


async def serve_http(port: int) -> None:
    import uvicorn

    # Bind first so the port is known (port 0 picks a free one), then hand the socket over.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    bound = sock.getsockname()[1]
    app = mcp.streamable_http_app(stateless_http=True, host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.01)
        sys.stdout.write(json.dumps({"listening": f"http://127.0.0.1:{bound}/mcp"}, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main(argv: list[str]) -> int:
    if not argv:
        mcp.run("stdio")
        return 0
    if len(argv) == 2 and argv[0] == "--http" and argv[1].isdigit():
        anyio.run(serve_http, int(argv[1]))
        return 0
    sys.stderr.write("usage: py_server.py [--http PORT]\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
