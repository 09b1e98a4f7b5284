"""An editor driving `souz acp` with the reference ACP client (the `agent-client-protocol`
Python package, module `acp`), for tests/e2e/acp.rs.

Usage: acp_editor.py CWD COMMAND [ARG...]  (COMMAND runs the agent: `souz acp`)

Scenarios, in order, in one session:
  1. a prompt whose tool call the editor allows;
  2. one whose tool call it rejects;
  3. one whose permission request it holds open: it prints {"event": "holding"} and waits for
     a line on stdin (the test decides the approval through the Souz API meanwhile); when the
     agent withdraws the request ($/cancel_request), the editor answers it anyway ("reject"),
     late;
  4. a prompt cancelled (session/cancel) once its answer starts streaming.
Each prompt's stop reason, streamed text and tool-call statuses, and the whole exchange's raw
messages, are reported as one JSON object on stdout ({"event": "report", ...}).
"""

import asyncio
import json
import os
import sys

from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)

WAIT = 30


def emit(message):
    print(json.dumps(message), flush=True)


class Editor:
    """The client side: records updates, answers permission requests as told."""

    def __init__(self):
        self.updates = []
        self.asked = []
        self.answer = "allow_once"
        self.held = None
        self.holding = asyncio.Event()

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append(
            {
                "sessionId": session_id,
                "toolCallId": tool_call.tool_call_id,
                "title": tool_call.title,
                "options": [[o.option_id, o.kind] for o in options],
            }
        )
        option = self.answer
        if option == "hold":
            self.held = asyncio.get_running_loop().create_future()
            self.holding.set()
            option = await self.held
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))

    async def session_update(self, session_id, update, **kwargs):
        if isinstance(update, AgentMessageChunk):
            self.updates.append(("text", getattr(update.content, "text", "")))
        elif isinstance(update, ToolCallStart):
            self.updates.append(("status", update.tool_call_id, update.status, update.kind))
        elif isinstance(update, ToolCallProgress) and update.status is not None:
            self.updates.append(("status", update.tool_call_id, update.status, None))

    def seen(self, start):
        text = "".join(u[1] for u in self.updates[start:] if u[0] == "text")
        statuses = [u[2] for u in self.updates[start:] if u[0] == "status"]
        return text, statuses


async def wait_until(predicate, what):
    for _ in range(WAIT * 50):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(what)


async def main():
    cwd, command = sys.argv[1], sys.argv[2:]
    editor = Editor()
    withdrawn = []
    raw = []

    def observe(event):
        message = event.message
        raw.append({"direction": event.direction.value, "method": message.get("method")})
        if event.direction.value == "incoming" and message.get("method") == "$/cancel_request":
            withdrawn.append(message["params"]["requestId"])

    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )
    conn = ClientSideConnection(editor, process.stdin, process.stdout, observers=[observe])
    report = {"event": "report", "turns": {}}
    try:
        initialized = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="test-editor", version="1.0"),
        )
        report["agent"] = initialized.agent_info.name if initialized.agent_info else None
        report["protocolVersion"] = initialized.protocol_version
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        report["session"] = session.session_id

        async def turn(name, text, answer):
            editor.answer = answer
            start = len(editor.updates)
            ended = await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
            seen_text, statuses = editor.seen(start)
            report["turns"][name] = {
                "stopReason": ended.stop_reason,
                "text": seen_text,
                "statuses": statuses,
            }

        await turn("allowed", "Write allowed.txt", "allow_once")
        await turn("rejected", "Write rejected.txt", "reject")

        # Held open while the test decides the approval through the Souz API.
        held = asyncio.create_task(turn("fromSouz", "Write from-souz.txt", "hold"))
        await asyncio.wait_for(editor.holding.wait(), WAIT)
        emit({"event": "holding"})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await asyncio.wait_for(held, WAIT)
        await wait_until(lambda: withdrawn, "the permission request was never withdrawn")
        report["withdrawn"] = withdrawn
        # The late answer: the agent must ignore it.
        editor.held.set_result("reject")
        await asyncio.sleep(0.3)

        # Cancelled once the answer streams.
        start = len(editor.updates)
        editor.answer = "allow_once"
        running = asyncio.create_task(
            conn.prompt(session_id=session.session_id, prompt=[text_block("Think hard")])
        )
        await wait_until(lambda: "Thinking" in editor.seen(start)[0], "no answer streamed")
        await conn.cancel(session_id=session.session_id)
        ended = await asyncio.wait_for(running, WAIT)
        seen_text, statuses = editor.seen(start)
        report["turns"]["cancelled"] = {
            "stopReason": ended.stop_reason,
            "text": seen_text,
            "statuses": statuses,
        }
        report["asked"] = editor.asked
        report["raw"] = raw
        emit(report)
    finally:
        await conn.close()
        if process.stdin:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
        print(json.dumps({"event": "exited", "code": process.returncode}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
