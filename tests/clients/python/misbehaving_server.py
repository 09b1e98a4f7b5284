"""An MCP server (official Python SDK, stdio) that misbehaves on request, for Souz's MCP client
tests: it crashes, hangs, or describes a tool differently from one start to the next.

Usage: misbehaving_server.py STATE_DIR
    STATE_DIR/starts        one line appended per start (the tests count restarts)
    STATE_DIR/description   if present, the description of `echo` (a changed definition)
    STATE_DIR/echo_name     if present, the name `echo` is listed under (a renamed tool)
Tools: echo(text), crash_once() (exits the process the first time, answers after a
restart), hang() (never answers), fail() (an error result).
"""

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

state = Path(sys.argv[1])
state.mkdir(parents=True, exist_ok=True)
with open(state / "starts", "a") as starts:
    starts.write(f"{os.getpid()}\n")

description_file = state / "description"
description = (
    description_file.read_text().strip() if description_file.exists() else "Echoes the text back."
)
name_file = state / "echo_name"
echo_name = name_file.read_text().strip() if name_file.exists() else "echo"

server = MCPServer("misbehaving")


@server.tool(name=echo_name, description=description)
def echo(text: str) -> str:
    return text


@server.tool(description="Exits the process the first time; answers after a restart.")
def crash_once() -> str:
    marker = state / "crashed"
    if not marker.exists():
        marker.write_text("yes")
        os._exit(1)
    return "recovered"


@server.tool(description="Never answers.")
async def hang() -> str:
    (state / "hanging").write_text("yes")
    await anyio.sleep(3600)
    return "late"


@server.tool(description="Always fails.")
def fail() -> str:
    raise ValueError("this tool always fails")


if __name__ == "__main__":
    server.run("stdio")
