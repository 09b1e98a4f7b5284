"""The official reference MCP servers (`@modelcontextprotocol/server-filesystem` and
`@modelcontextprotocol/server-memory`, stdio) behind Souz, called through Souz's `/mcp` by the
official Python SDK (`mcp` on PyPI) under a client token, as Claude Code would call them. Every
call passes Souz's gate: the person (this script, with the operator token) approves or denies.

Usage:
    reference_servers.py filesystem DAEMON_URL CLIENT_TOKEN OPERATOR_TOKEN ALLOWED_DIR OUTSIDE_FILE
    reference_servers.py memory     DAEMON_URL CLIENT_TOKEN OPERATOR_TOKEN

The daemon runs with `[mcp.servers.fs]` (server-filesystem with ALLOWED_DIR as its only
allowed directory) or `[mcp.servers.memory]` (server-memory, its file in a temporary folder),
and no rule for their tools: each call asks. The client token is named `reference-client`.
Each scenario that holds prints `ok <name>`.
"""

import sys
import time
from pathlib import Path

import anyio
import httpx2 as httpx

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

CLIENT = Implementation(name="souz-reference-python", version="1.0")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def decide(api, tool, decision, timeout=20.0):
    """Waits for the pending approval of `tool`, checks who asks, and decides it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = await api.get("/v1/approvals", params={"status": "pending"})
        answer.raise_for_status()
        for approval in answer.json()["items"]:
            if approval["tool"] == tool:
                check(approval.get("server") == tool.split("__")[1], f"approval names its server: {approval}")
                requester = approval["requester"]
                check(requester["kind"] == "mcp", f"the requester is the MCP client: {approval}")
                check(requester.get("token_name") == "reference-client", f"under its client token: {approval}")
                decided = await api.post(
                    f"/v1/approvals/{approval['id']}/decision",
                    json={"decision": decision, "scope": "once", "via": "e2e"},
                )
                check(decided.status_code == 200, decided.text)
                return approval
        await anyio.sleep(0.05)
    raise AssertionError(f"no pending approval for {tool}")


async def call(client, api, tool, arguments, decision="approve"):
    """Calls `tool` through Souz while the person decides its approval."""
    result = None
    async with anyio.create_task_group() as group:
        group.start_soon(decide, api, tool, decision)
        result = await client.call_tool(tool, arguments)
    return result


async def filesystem(client, api, allowed, outside):
    tools = {tool.name for tool in (await client.list_tools()).tools}
    for name in ("read_text_file", "write_file", "list_directory", "list_allowed_directories"):
        check(f"mcp__fs__{name}" in tools, f"mcp__fs__{name} listed: {sorted(tools)}")
    print("ok listed", flush=True)

    written = Path(allowed) / "approved.txt"
    result = await call(client, api, "mcp__fs__write_file", {"path": str(written), "content": "through souz"})
    check(not result.is_error, text(result))
    check(written.read_text() == "through souz", "the approved write is on disk")
    print("ok approved-write", flush=True)

    refused = Path(allowed) / "denied.txt"
    result = await call(client, api, "mcp__fs__write_file", {"path": str(refused), "content": "no"}, "deny")
    check(result.is_error and "denied" in text(result).lower(), f"a denial is an error result: {text(result)}")
    check(not refused.exists(), "a denied write wrote nothing")
    print("ok denied-write", flush=True)

    # Souz lets the call through (approved); the server itself refuses the path.
    result = await call(client, api, "mcp__fs__read_text_file", {"path": outside})
    check(result.is_error, f"a read outside the allowed folder is an error result: {text(result)}")
    check("access denied" in text(result).lower(), f"the server's own refusal reaches the caller: {text(result)}")
    check("outside secret" not in text(result), f"nothing of the file leaked: {text(result)}")
    print("ok outside-refused", flush=True)

    # The session still works after the server's refusal.
    result = await call(client, api, "mcp__fs__read_text_file", {"path": str(written)})
    check(not result.is_error and text(result) == "through souz", text(result))
    print("ok read-back", flush=True)


async def memory(client, api):
    tools = {tool.name for tool in (await client.list_tools()).tools}
    for name in ("create_entities", "read_graph", "search_nodes"):
        check(f"mcp__memory__{name}" in tools, f"mcp__memory__{name} listed: {sorted(tools)}")
    print("ok listed", flush=True)

    entities = [
        {"name": "Souz", "entityType": "project", "observations": ["a Rust daemon", "gates every tool call"]},
        {"name": "Gate", "entityType": "component", "observations": ["asks the person"]},
    ]
    result = await call(client, api, "mcp__memory__create_entities", {"entities": entities})
    check(not result.is_error and "Souz" in text(result), text(result))
    print("ok created", flush=True)

    result = await call(client, api, "mcp__memory__read_graph", {})
    check(not result.is_error, text(result))
    graph = result.structured_content or {}
    names = {entity["name"] for entity in graph.get("entities", [])}
    check(names == {"Souz", "Gate"}, f"the graph holds what was created: {graph or text(result)}")
    print("ok read-graph", flush=True)

    result = await call(client, api, "mcp__memory__search_nodes", {"query": "Rust daemon"})
    check(not result.is_error, text(result))
    found = {entity["name"] for entity in (result.structured_content or {}).get("entities", [])}
    check(found == {"Souz"}, f"the search finds the entity by observation: {result.structured_content or text(result)}")
    print("ok search-nodes", flush=True)


async def main():
    kind, url, client_token, operator_token = sys.argv[1:5]
    api = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {operator_token}"})
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {client_token}"})
    async with http:
        async with Client(
            streamable_http_client(f"{url}/mcp", http_client=http),
            mode="legacy",
            client_info=CLIENT,
        ) as client:
            if kind == "filesystem":
                await filesystem(client, api, sys.argv[5], sys.argv[6])
            else:
                await memory(client, api)
    print(f"all {kind} scenarios passed", flush=True)


anyio.run(main)
