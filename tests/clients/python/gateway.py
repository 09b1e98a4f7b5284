"""External MCP servers' tools re-exported on Souz's `/mcp`, driven by the official Python SDK
(`mcp` on PyPI) as Claude Code would use them: one MCP entry (Souz) in front of every server.

Usage:
    gateway.py http  DAEMON_URL TOKEN STATE_DIR        # streamable HTTP at DAEMON_URL/mcp
    gateway.py stdio DAEMON_URL TOKEN STATE_DIR SOUZ   # through `SOUZ mcp-stdio`

The daemon runs with `[mcp.servers.everything]` (server-everything, stdio) and
`[mcp.servers.odd]` (misbehaving_server.py with STATE_DIR), a rule allowing
`mcp__everything__trigger-long-running-operation` and `mcp__odd__crash_once`, and
`[mcp] approval_wait_seconds = 20`. Each scenario that holds prints `ok <name>`.
"""

import os
import sys
import time
from pathlib import Path

import anyio
import httpx2 as httpx

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

CLIENT = Implementation(name="souz-gateway-python", version="1.0")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


class Watch:
    def __init__(self):
        self.list_changed = anyio.Event()

    async def on_message(self, message):
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method == "notifications/tools/list_changed":
            self.list_changed.set()


async def approve(api, tool, requester_label=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = await api.get("/v1/approvals", params={"status": "pending"})
        answer.raise_for_status()
        for approval in answer.json()["items"]:
            if approval["tool"] == tool:
                check(approval.get("server") == tool.split("__")[1], f"approval names its server: {approval}")
                check(approval["requester"]["kind"] == "mcp", f"the requester is the MCP client: {approval}")
                decided = await api.post(
                    f"/v1/approvals/{approval['id']}/decision",
                    json={"decision": "approve", "scope": "once", "via": "e2e"},
                )
                check(decided.status_code == 200, decided.text)
                return approval
        await anyio.sleep(0.05)
    raise AssertionError(f"no pending approval for {tool}")


async def scenarios(client, api, state, watch):
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("mcp__everything__echo", "mcp__everything__trigger-long-running-operation", "mcp__odd__echo"):
        check(name in tools, f"{name} listed: {sorted(tools)}")
    print("ok listed", flush=True)

    # asked -> approved -> the external server's result
    result = None
    async with anyio.create_task_group() as group:
        group.start_soon(approve, api, "mcp__everything__echo")
        result = await client.call_tool("mcp__everything__echo", {"message": "through souz"})
    check(not result.is_error and "through souz" in text(result), text(result))
    print("ok asked-approved-result", flush=True)

    # the external server's progress reaches this client under its own token
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    done = await client.call_tool(
        "mcp__everything__trigger-long-running-operation",
        {"duration": 1, "steps": 4},
        progress_callback=on_progress,
    )
    check(not done.is_error and "Steps: 4" in text(done), text(done))
    check(len(seen) >= 2, f"progress passed through: {seen}")
    check(all(total == 4 for _, total in seen), f"totals passed through: {seen}")
    check(all(a[0] < b[0] for a, b in zip(seen, seen[1:])), f"progress increases: {seen}")
    print("ok progress", flush=True)

    # a server restarted with a changed tool: the new text is not trusted, so this client keeps
    # seeing the trusted one; a call asks (the change shown), and once it is approved the new
    # list reaches this client
    (Path(state) / "description").write_text("Echoes the text back, louder.")
    crashed = await client.call_tool("mcp__odd__crash_once", {})
    check(not crashed.is_error, text(crashed))
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check("louder" not in (tools["mcp__odd__echo"].description or ""), tools["mcp__odd__echo"].description)
    watch.list_changed = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(approve, api, "mcp__odd__echo")
        echoed = await client.call_tool("mcp__odd__echo", {"text": "changed"})
    check(not echoed.is_error and "changed" in text(echoed), text(echoed))
    with anyio.fail_after(20):
        await watch.list_changed.wait()
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check("louder" in (tools["mcp__odd__echo"].description or ""), tools["mcp__odd__echo"].description)
    print("ok list-changed", flush=True)


async def main():
    transport, url, token, state = sys.argv[1:5]
    api = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"})
    watch = Watch()
    if transport == "http":
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            async with Client(
                streamable_http_client(f"{url}/mcp", http_client=http),
                mode="legacy",
                client_info=CLIENT,
                message_handler=watch.on_message,
            ) as client:
                await scenarios(client, api, state, watch)
    else:
        parameters = StdioServerParameters(command=sys.argv[5], args=["mcp-stdio"], env=dict(os.environ))
        async with Client(parameters, mode="auto", client_info=CLIENT, message_handler=watch.on_message) as client:
            await scenarios(client, api, state, watch)
    print("all gateway scenarios passed", flush=True)


anyio.run(main)
