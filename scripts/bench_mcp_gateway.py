"""What Souz adds in front of an external MCP server (issue 15), measured with the official
Python SDK client (tests/clients/.venv, installed by scripts/clients.sh):

  * latency per `tools/call` of server-everything's `echo`, called directly and through Souz
    (re-exported as `mcp__<server>__echo` on `/mcp`, or through `souz mcp-stdio`), with a
    policy rule allowing the tool so nobody is asked; p50/p99 and the added p50/p99, over
    stdio (Souz runs the server as its child) and streamable HTTP (Souz connects to it);
  * time from `souz serve` starting to the external tools being listed in `/v1/tools`, and
    the same minus the server's own start (spawn, initialize, tools/list measured directly).

Usage: scripts/bench.sh mcp-gateway   (or: python bench_mcp_gateway.py SOUZ_BIN [CALLS])
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2 as httpx

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "tests" / "clients"
NODE = str(CLIENTS / "node_modules" / ".bin" / "node")
EVERYTHING = str(CLIENTS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


async def timed_calls(client, tool, calls):
    for _ in range(10):  # warm-up
        await client.call_tool(tool, {"message": "warm"})
    latencies = []
    for n in range(calls):
        started = time.perf_counter()
        result = await client.call_tool(tool, {"message": f"ping {n}"})
        latencies.append((time.perf_counter() - started) * 1000)
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result}")
    return latencies


async def over_stdio(command, args, tool, calls, env=None):
    parameters = StdioServerParameters(command=command, args=args, env=env or dict(os.environ))
    async with Client(parameters, mode="legacy") as client:
        return await timed_calls(client, tool, calls)


async def over_http(url, tool, calls, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = create_mcp_http_client(headers=headers)
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            return await timed_calls(client, tool, calls)


class Daemon:
    """`souz serve` in a fresh home with `config`."""

    def __init__(self, souz, config):
        self.home = tempfile.mkdtemp(prefix="souz-bench-home-")
        self.user = tempfile.mkdtemp(prefix="souz-bench-user-")
        Path(self.home, "config.toml").write_text(config)
        env = {**os.environ, "SOUZ_HOME": self.home, "HOME": self.user, "SOUZ_PORT": "0", "SOUZ_LOG": "warn",
               "SOUZ_NO_MODEL_DOWNLOADS": "1"}
        self.env = env
        self.started = time.perf_counter()
        self.child = subprocess.Popen([souz, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        info = Path(self.home, "daemon.json")
        while not info.exists() or not info.read_text().strip():
            time.sleep(0.005)
        time.sleep(0.01)
        self.url = json.loads(info.read_text())["url"]
        self.token = Path(self.home, "token").read_text().strip()

    def listed(self, tool, timeout=60):
        """Seconds from the spawn until `/v1/tools` lists `tool`."""
        deadline = time.perf_counter() + timeout
        with httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}) as api:
            while time.perf_counter() < deadline:
                names = [item["name"] for item in api.get("/v1/tools").json()["items"]]
                if tool in names:
                    return time.perf_counter() - self.started
                time.sleep(0.005)
        raise SystemExit(f"{tool} was never listed")

    def stop(self):
        self.child.terminate()
        self.child.wait(timeout=20)


def allow(tool):
    return f'\n[[approvals.rules]]\naction = "allow"\ntool = "{tool}"\n'


async def server_start_seconds():
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=NODE, args=[EVERYTHING], env=dict(os.environ)), mode="legacy") as client:
        await client.list_tools()
        return time.perf_counter() - started


def row(label, direct, through):
    p50d, p99d = statistics.median(direct), percentile(direct, 0.99)
    p50t, p99t = statistics.median(through), percentile(through, 0.99)
    print(f"{label:<6} direct p50 {p50d:7.2f} ms p99 {p99d:7.2f} ms | through Souz p50 {p50t:7.2f} ms "
          f"p99 {p99t:7.2f} ms | added p50 {p50t - p50d:+7.2f} ms p99 {p99t - p99d:+7.2f} ms", flush=True)


async def main():
    souz = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    print(f"{calls} sequential calls of server-everything's echo per row", flush=True)

    # stdio: the server as the client's child vs Souz's child behind `souz mcp-stdio`
    direct = await over_stdio(NODE, [EVERYTHING], "echo", calls)
    daemon = Daemon(souz, f'[mcp.servers.everything]\ncommand = "{NODE}"\nargs = ["{EVERYTHING}"]\n'
                    + allow("mcp__everything__echo"))
    try:
        startup = daemon.listed("mcp__everything__echo")
        subprocess.run([souz, "mcp-config", "claude-desktop"], env=daemon.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        through = await over_stdio(souz, ["mcp-stdio"], "mcp__everything__echo", calls, env=daemon.env)
    finally:
        daemon.stop()
    row("stdio", direct, through)

    # streamable HTTP: the server on its own port, directly vs through Souz's /mcp
    port = free_port()
    server = subprocess.Popen([NODE, EVERYTHING, "streamableHttp"], env={**os.environ, "PORT": str(port)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        direct = await over_http(url, "echo", calls)
        daemon = Daemon(souz, f'[mcp.servers.web]\nurl = "{url}"\nallow_private_network = true\n'
                        + allow("mcp__web__echo"))
        try:
            daemon.listed("mcp__web__echo")
            through = await over_http(f"{daemon.url}/mcp", "mcp__web__echo", calls, daemon.token)
        finally:
            daemon.stop()
    finally:
        server.terminate()
        server.wait(timeout=20)
    row("http", direct, through)

    own = await server_start_seconds()
    print(f"start: `souz serve` to mcp__everything__echo listed {startup * 1000:.0f} ms; the server's own "
          f"start (spawn, initialize, tools/list) {own * 1000:.0f} ms; Souz's share {(startup - own) * 1000:.0f} ms",
          flush=True)


anyio.run(main)
