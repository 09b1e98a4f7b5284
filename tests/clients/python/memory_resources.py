"""Souz's memory facts as MCP resources, driven by the official Python SDK (`mcp` on PyPI).

Usage:
    memory_resources.py DAEMON_URL TOKEN FACT_ID

The daemon holds the global fact FACT_ID ("Tea") and a session fact, which is not a resource.
During the run a second fact is stored through the daemon's API (as the Memory page would).
Each check that holds prints `ok <name>`; a failed one raises (non-zero exit).
"""

import sys

import anyio
import httpx2 as httpx

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

CLIENT = Implementation(name="souz-e2e-memory", version="1.0")
PREFIX = "souz://memory/facts/"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Watch:
    def __init__(self):
        self.resources_changed = anyio.Event()

    async def on_message(self, message):
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method == "notifications/resources/list_changed":
            self.resources_changed.set()


async def resources(client):
    listed = await client.list_resources(cache_mode="bypass")
    return {str(resource.uri): resource for resource in listed.resources}


async def run(client, api, watch, fact_id):
    capabilities = client.server_capabilities
    check(capabilities.resources is not None, f"resources capability: {capabilities}")
    check(capabilities.resources.list_changed is True, "resources list_changed declared")
    listed = await resources(client)
    uri = PREFIX + fact_id
    check(list(listed) == [uri], f"only the global fact is a resource: {list(listed)}")
    tea = listed[uri]
    check(tea.name == "Tea", tea)
    check(tea.mime_type == "text/markdown", tea)
    check(tea.description == "preference memory, global scope", tea)
    print("ok resources-list", flush=True)

    read = await client.read_resource(uri, cache_mode="bypass")
    check(len(read.contents) == 1, read)
    content = read.contents[0]
    check(content.mime_type == "text/markdown", content)
    for part in ("# Tea", "Prefers green tea", "- Kind: preference", "- Scope: global",
                 "- Canonical key: user.preference.tea", "- Updated: "):
        check(part in content.text, f"{part!r} in {content.text!r}")
    print("ok resources-read", flush=True)

    templates = await client.list_resource_templates(cache_mode="bypass")
    forms = [template.uri_template for template in templates.resource_templates]
    check(PREFIX + "{id}" in forms, forms)
    print("ok resources-templates", flush=True)

    failed = None
    try:
        await client.read_resource(PREFIX + "no-such-fact", cache_mode="bypass")
    except Exception as error:  # the SDK raises its McpError for a JSON-RPC error
        failed = error
    check(failed is not None and "no-such-fact" in str(failed), f"an unknown fact is not served: {failed!r}")
    print("ok resources-read-unknown", flush=True)

    answer = await api.post("/v1/memory", json={"body": "Deploys happen on Tuesdays", "title": "Deploys"})
    check(answer.status_code == 201, f"create: {answer.status_code} {answer.text}")
    new_id = answer.json()["id"]
    with anyio.fail_after(10):
        await watch.resources_changed.wait()
    listed = await resources(client)
    check(PREFIX + new_id in listed and uri in listed, f"the new fact is listed: {list(listed)}")
    print("ok resources-list-changed", flush=True)


async def main():
    url, token, fact_id = sys.argv[1], sys.argv[2], sys.argv[3]
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
            await run(client, api, watch, fact_id)
    print("all memory resource checks passed", flush=True)


anyio.run(main)
