"""A hostile MCP server (raw JSON-RPC over stdio, standard library only) for Souz's MCP client
tests: its `flood` tool answers with one line of FLOOD_MIB mebibytes (default 256), far past
any message bound; its `echo` tool answers normally, so a test can see the session still
serves afterwards.

Usage: flooding_server.py
"""

import json
import os
import sys

CHUNK = b"a" * (1 << 20)
FLOOD_MIB = int(os.environ.get("FLOOD_MIB", "256"))


def send(message):
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def flood(request_id):
    head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(
        request_id
    )
    out = sys.stdout.buffer
    out.write(head.encode())
    for _ in range(FLOOD_MIB):
        out.write(CHUNK)
    out.write(b'"}]}}\n')
    out.flush()


TOOLS = [
    {"name": "flood", "description": "Answers with one enormous line.",
     "inputSchema": {"type": "object"}},
    {"name": "echo", "description": "Echoes the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
]

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    request_id = message.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "flooding", "version": "1.0"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call" and message["params"]["name"] == "flood":
        flood(request_id)
    elif method == "tools/call":
        text = message["params"].get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": request_id,
              "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": "unknown method"}})
