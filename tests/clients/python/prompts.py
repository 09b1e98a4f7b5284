"""Souz's skills as MCP prompts, driven by the official Python SDK (`mcp` on PyPI).

Usage:
    prompts.py DAEMON_URL TOKEN NEW_SKILL_FOLDER

The daemon has the skill `notes` installed and enabled and `dormant` installed but disabled;
NEW_SKILL_FOLDER holds the skill `pdf-forms`, installed during the run through the daemon's
API (as the Skills page or `souz skills install` would). Each check that holds prints
`ok <name>`; a failed one raises (non-zero exit).
"""

import sys

import anyio
import httpx2 as httpx

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

CLIENT = Implementation(name="souz-e2e-prompts", version="1.0")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Watch:
    def __init__(self):
        self.prompts_changed = anyio.Event()

    async def on_message(self, message):
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method == "notifications/prompts/list_changed":
            self.prompts_changed.set()


async def prompt_names(client):
    listed = await client.list_prompts(cache_mode="bypass")
    return {prompt.name: prompt for prompt in listed.prompts}


async def run(client, api, watch, new_folder):
    capabilities = client.server_capabilities
    check(capabilities.prompts is not None, f"prompts capability: {capabilities}")
    check(capabilities.prompts.list_changed is True, "prompts list_changed declared")
    prompts = await prompt_names(client)
    check("notes" in prompts, f"the enabled skill is a prompt: {list(prompts)}")
    check("dormant" not in prompts, f"a disabled skill is not: {list(prompts)}")
    check(prompts["notes"].description == "Take notes in ~/notes.", prompts["notes"])
    check(not prompts["notes"].arguments, "a skill prompt takes no arguments")
    print("ok prompts-list", flush=True)

    got = await client.get_prompt("notes")
    check(got.description == "Take notes in ~/notes.", got)
    check(len(got.messages) == 1 and got.messages[0].role == "user", got.messages)
    body = got.messages[0].content.text
    check("Skill `notes`: Take notes in ~/notes." in body, body)
    check("Write each note as a Markdown file." in body, body)
    print("ok prompts-get", flush=True)

    failed = None
    try:
        await client.get_prompt("dormant")
    except Exception as error:  # the SDK raises its McpError for a JSON-RPC error
        failed = error
    check(failed is not None and "dormant" in str(failed), f"a disabled skill is not served: {failed!r}")
    print("ok prompts-get-disabled", flush=True)

    answer = await api.post("/v1/skills", json={"path": new_folder})
    check(answer.status_code == 201, f"install: {answer.status_code} {answer.text}")
    with anyio.fail_after(10):
        await watch.prompts_changed.wait()
    prompts = await prompt_names(client)
    check("pdf-forms" in prompts, f"the new skill is listed: {list(prompts)}")
    print("ok prompts-list-changed", flush=True)


async def main():
    url, token, new_folder = sys.argv[1], sys.argv[2], sys.argv[3]
    watch = Watch()
    api = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"})
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with api, http:
        async with Client(
            streamable_http_client(f"{url}/mcp", http_client=http),
            mode="legacy",
            client_info=CLIENT,
            message_handler=watch.on_message,
        ) as client:
            await run(client, api, watch, new_folder)
    print("all prompt checks passed", flush=True)


anyio.run(main)
