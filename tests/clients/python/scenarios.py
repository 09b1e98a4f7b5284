"""Souz's MCP server driven by the official Python SDK (`mcp` on PyPI), as a real client would.

Usage:
    scenarios.py http  DAEMON_URL TOKEN        # streamable HTTP at DAEMON_URL/mcp
    scenarios.py stdio DAEMON_URL TOKEN SOUZ   # through `SOUZ mcp-stdio` (SOUZ_HOME inherited)
    scenarios.py modern DAEMON_URL TOKEN       # HTTP with protocol 2026-07-28 (server/discover)

The daemon must run with `[mcp] approval_wait_seconds = 3` and `progress_interval_seconds = 1`.
The person's decisions are made through the daemon's HTTP API (`POST
/v1/approvals/{id}/decision`), as the menu bar or `souz approvals` would. Each scenario that
holds prints `ok <name>`; any failed expectation raises (non-zero exit). The calling Rust test
checks the files on disk and the audit log.
"""

import os
import sys
import time

import anyio
import httpx2 as httpx

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

CLIENT = Implementation(name="souz-e2e-python", version="1.0")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


class Person:
    """Decides approvals through the daemon's API."""

    def __init__(self, url, token):
        self.api = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"})

    async def pending(self, tool, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = await self.api.get("/v1/approvals", params={"status": "pending"})
            answer.raise_for_status()
            for approval in answer.json()["items"]:
                if approval["tool"] == tool:
                    return approval
            await anyio.sleep(0.05)
        raise AssertionError(f"no pending approval for {tool}")

    async def decide(self, approval_id, decision, scope="once"):
        answer = await self.api.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"decision": decision, "scope": scope, "via": "e2e"},
        )
        check(answer.status_code == 200, f"decision refused: {answer.status_code} {answer.text}")

    async def approval(self, approval_id):
        answer = await self.api.get(f"/v1/approvals/{approval_id}")
        answer.raise_for_status()
        return answer.json()


class Watch:
    """Progress messages and notifications seen by the client."""

    def __init__(self):
        self.progress = []
        self.logs = []
        self.list_changed = anyio.Event()
        self.waiting = anyio.Event()

    async def on_progress(self, progress, total, message):
        self.progress.append(message or "")
        if message and "Waiting for approval in Souz" in message:
            self.waiting.set()

    async def on_log(self, params):
        self.logs.append(params.data)

    async def on_message(self, message):
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method == "notifications/tools/list_changed":
            self.list_changed.set()


async def scenarios(client, person, home, watch):
    # initialize
    check(client.server_info.name == "souz", f"server name {client.server_info}")
    check(client.protocol_version in ("2025-06-18", "2025-11-25"), client.protocol_version)
    check("AwaitApproval" in (client.instructions or ""), "instructions explain AwaitApproval")
    print("ok initialize", flush=True)

    # tools/list: annotations, schemas, and the marks of the policy
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("ListFiles", "NewFile", "EditFile", "AwaitApproval"):
        check(name in tools, f"{name} listed")
    check(tools["ListFiles"].annotations.read_only_hint is True, "ListFiles is read-only")
    check(tools["ListFiles"].output_schema is not None, "ListFiles has an output schema")
    check(not (tools["ListFiles"].meta or {}).get("anthropic/requiresUserInteraction"), "ListFiles does not ask")
    check(tools["NewFile"].meta.get("anthropic/requiresUserInteraction") is True, "NewFile asks")
    check(tools["NewFile"].annotations.destructive_hint is True, "NewFile is destructive")
    # A tool that asks may answer "waiting for approval", so it comes without an output schema.
    check(tools["RunCommand"].meta.get("anthropic/requiresUserInteraction") is True, "RunCommand asks")
    check(tools["RunCommand"].output_schema is None, "a tool that asks has no output schema")
    print("ok tools-list", flush=True)

    # a read-only call runs at once
    listed = await client.call_tool("ListFiles", {"path": "~"})
    check(not listed.is_error, text(listed))
    check("seed.txt" in text(listed), f"listing shows seed.txt: {text(listed)}")
    check(listed.structured_content is not None, "structured result")
    print("ok read-only-call", flush=True)

    # a call that waits, with progress and a log message, and is approved by the person
    await client.set_logging_level("info")

    async def approve_when_waiting():
        await watch.waiting.wait()
        approval = await person.pending("NewFile")
        check(approval["requester"]["client_name"] == CLIENT.name, approval["requester"])
        check(approval["requester"]["session_id"], f"the MCP session is recorded: {approval['requester']}")
        check("souz-e2e-python" in approval["requester_label"], approval["requester_label"])
        await person.decide(approval["id"], "approve")

    async with anyio.create_task_group() as group:
        group.start_soon(approve_when_waiting)
        approved = await client.call_tool(
            "NewFile", {"path": "~/approved.txt", "text": "approved"}, progress_callback=watch.on_progress
        )
    check(not approved.is_error, text(approved))
    check(any("Waiting for approval in Souz" in message for message in watch.progress), watch.progress)
    check(
        any(isinstance(log, dict) and log.get("approval_id") for log in watch.logs),
        f"a log message names the approval: {watch.logs}",
    )
    print("ok approved-call", flush=True)

    # a call the person denies
    async def deny():
        approval = await person.pending("NewFile")
        await person.decide(approval["id"], "deny")

    async with anyio.create_task_group() as group:
        group.start_soon(deny)
        denied = await client.call_tool("NewFile", {"path": "~/denied.txt", "text": "no"})
    check(denied.is_error, "a denial is an error result")
    check("denied" in text(denied), text(denied))
    print("ok denied-call", flush=True)

    # a call that outlives the wait budget, then is picked up with AwaitApproval
    started = time.monotonic()
    later = await client.call_tool("NewFile", {"path": "~/later.txt", "text": "later"})
    waited = time.monotonic() - started
    check(2.5 <= waited < 10, f"answered after the budget, not before and not much later ({waited:.1f} s)")
    check(not later.is_error, "waiting is a normal result")
    approval_id = (later.meta or {}).get("souz/approvalId")
    check(approval_id and approval_id in text(later), f"the result names the approval: {text(later)}")
    check("AwaitApproval" in text(later) and '"approval_id"' in text(later), text(later))
    await_schema = tools["AwaitApproval"].input_schema["properties"]
    check(set(await_schema) == {"approval_id", "wait_seconds"}, f"AwaitApproval's parameters: {await_schema}")
    still = await client.call_tool("AwaitApproval", {"approval_id": approval_id, "wait_seconds": 0})
    check("Waiting for approval" in text(still), f"still waiting: {text(still)}")
    await person.decide(approval_id, "approve")
    picked = await client.call_tool("AwaitApproval", {"approval_id": approval_id, "wait_seconds": 3})
    check(not picked.is_error, text(picked))
    check(os.path.exists(os.path.join(home, "later.txt")), "the original call ran once approved")
    # The camelCase spellings are accepted too.
    again = await client.call_tool("AwaitApproval", {"approvalId": approval_id})
    check(again.is_error and "already returned" in text(again), f"delivered once: {text(again)}")
    print("ok await-approval", flush=True)

    # a call the client cancels: its approval is withdrawn
    watch.waiting = anyio.Event()
    with anyio.move_on_after(15):
        async with anyio.create_task_group() as group:

            async def doomed():
                await client.call_tool(
                    "NewFile", {"path": "~/cancelled.txt", "text": "never"}, progress_callback=watch.on_progress
                )

            group.start_soon(doomed)
            await watch.waiting.wait()
            pending = await person.pending("NewFile")
            group.cancel_scope.cancel()
    deadline = time.monotonic() + 10
    while True:
        state = await person.approval(pending["id"])
        if state["status"] != "pending" or time.monotonic() > deadline:
            break
        await anyio.sleep(0.05)
    check(state["status"] == "expired" and state.get("expiry_reason") == "withdrawn", f"withdrawn: {state}")
    print("ok cancelled-call", flush=True)

    # a scoped approval changes this client's tool list: tools/list_changed
    async def approve_for_this_client():
        approval = await person.pending("NewFile")
        await person.decide(approval["id"], "approve", scope="requester")

    async with anyio.create_task_group() as group:
        group.start_soon(approve_for_this_client)
        granted = await client.call_tool("NewFile", {"path": "~/granted.txt", "text": "granted"})
    check(not granted.is_error, text(granted))
    with anyio.fail_after(10):
        await watch.list_changed.wait()
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check(not (tools["NewFile"].meta or {}).get("anthropic/requiresUserInteraction"), "NewFile no longer asks")
    print("ok list-changed", flush=True)


async def modern(client, person, home, watch):
    """Protocol 2026-07-28 (no handshake, `server/discover`, metadata on every request)."""
    check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check(tools["NewFile"].meta.get("anthropic/requiresUserInteraction") is True, "NewFile asks")
    listed = await client.call_tool("ListFiles", {"path": "~"})
    check(not listed.is_error and "seed.txt" in text(listed), text(listed))

    async def approve():
        await watch.waiting.wait()
        approval = await person.pending("NewFile")
        check(approval["requester"]["client_name"] == CLIENT.name, approval["requester"])
        await person.decide(approval["id"], "approve")

    async with anyio.create_task_group() as group:
        group.start_soon(approve)
        made = await client.call_tool(
            "NewFile", {"path": "~/modern.txt", "text": "modern"}, progress_callback=watch.on_progress
        )
    check(not made.is_error, text(made))
    check(os.path.exists(os.path.join(home, "modern.txt")), "the approved call ran")
    print("ok modern-protocol", flush=True)

    # No session to push to: a `subscriptions/listen` stream hears that a scoped approval
    # changed this client's tool list.
    async with client.listen(tools_list_changed=True) as subscription:
        check(subscription.honored.tools_list_changed, f"listen honored: {subscription.honored}")

        async def approve_for_this_client():
            approval = await person.pending("NewFile")
            await person.decide(approval["id"], "approve", scope="requester")

        async with anyio.create_task_group() as group:
            group.start_soon(approve_for_this_client)
            granted = await client.call_tool("NewFile", {"path": "~/modern-granted.txt", "text": "granted"})
        check(not granted.is_error, text(granted))
        with anyio.fail_after(10):
            event = await subscription.__anext__()
        check(type(event).__name__ == "ToolsListChanged", f"event {event!r}")
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check(not (tools["NewFile"].meta or {}).get("anthropic/requiresUserInteraction"), "NewFile no longer asks")
    print("ok modern-list-changed", flush=True)


async def main():
    transport, url, token = sys.argv[1], sys.argv[2], sys.argv[3]
    home = os.environ["HOME"]
    person = Person(url, token)
    watch = Watch()
    if transport == "modern":
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            async with Client(
                streamable_http_client(f"{url}/mcp", http_client=http), mode="auto", client_info=CLIENT
            ) as client:
                await modern(client, person, home, watch)
        return
    if transport == "http":
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            async with Client(
                streamable_http_client(f"{url}/mcp", http_client=http),
                mode="legacy",
                client_info=CLIENT,
                message_handler=watch.on_message,
                logging_callback=watch.on_log,
            ) as client:
                await scenarios(client, person, home, watch)
    else:
        souz = sys.argv[4]
        parameters = StdioServerParameters(command=souz, args=["mcp-stdio"], env=dict(os.environ))
        async with Client(
            parameters,
            mode="auto",
            client_info=CLIENT,
            message_handler=watch.on_message,
            logging_callback=watch.on_log,
        ) as client:
            await scenarios(client, person, home, watch)
    print("all scenarios passed", flush=True)


anyio.run(main)
