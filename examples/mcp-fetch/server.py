"""An MCP-style server with one tool, `fetch`: the kind of tool that a
prompt injection turns against its host (file:///etc/passwd, a service on
localhost, the intranet).

It speaks JSON-RPC 2.0 over stdio, one JSON message per line, as the MCP
stdio transport does: initialize, notifications/initialized, ping,
tools/list and tools/call. Standard library only (no MCP SDK is needed to
show the point). The fetch is deliberately naive: any URL urllib accepts,
file:// included, redirects followed. Confining it is the sandbox's job:
run it as `python-sb server.py` next to its .py-sandboxes.
"""
import json
import sys
import urllib.request

PROTOCOL_VERSION = "2025-06-18"
MAX_BYTES = 64 * 1024

FETCH_TOOL = {
    "name": "fetch",
    "description": "Fetch a URL and return its content as text.",
    "inputSchema": {
        "type": "object",
        "properties": {"url": {"type": "string",
                               "description": "The URL to fetch"}},
        "required": ["url"],
    },
}


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read(MAX_BYTES)
    return body.decode("utf-8", "replace")


def fetch_tool(url):
    """The tool's outcome as the model sees it: (text, is_error). A refusal
    goes back to the model as text, and the server keeps running."""
    try:
        return fetch(url), False
    except Exception as e:
        return f"{type(e).__name__}: {e}", True


def call_tool(params, tool):
    if params.get("name") != "fetch":
        raise RpcError(-32602, f"Unknown tool: {params.get('name')!r}")
    url = (params.get("arguments") or {}).get("url")
    if not isinstance(url, str):
        raise RpcError(-32602, "fetch needs a 'url' string argument")
    text, failed = tool(url)
    return {"content": [{"type": "text", "text": text}], "isError": failed}


def handle(method, params, tool):
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion",
                                              PROTOCOL_VERSION),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-fetch", "version": "1.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [FETCH_TOOL]}
    if method == "tools/call":
        return call_tool(params, tool)
    raise RpcError(-32601, f"Method not found: {method}")


def reply(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def serve(tool=fetch_tool):
    """Answer JSON-RPC requests from stdin until it closes. tool(url) gives
    the fetch tool's (text, is_error): server_partial.py passes one that
    fetches in the sandbox."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError as e:
            reply({"jsonrpc": "2.0", "id": None,
                   "error": {"code": -32700, "message": f"Parse error: {e}"}})
            continue
        if not isinstance(msg, dict) or not isinstance(msg.get("method"),
                                                       str):
            reply({"jsonrpc": "2.0", "id": None,
                   "error": {"code": -32600, "message": "Invalid Request"}})
            continue
        if "id" not in msg:
            continue  # a notification (notifications/initialized...)
        try:
            params = msg.get("params") or {}
            if not isinstance(params, dict):
                raise RpcError(-32602, "params must be an object")
            response = {"result": handle(msg["method"], params, tool)}
        except RpcError as e:
            response = {"error": {"code": e.code, "message": str(e)}}
        reply({"jsonrpc": "2.0", "id": msg["id"], **response})


if __name__ == "__main__":
    serve()
