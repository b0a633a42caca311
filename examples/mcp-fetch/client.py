#!/usr/bin/env python3
"""A minimal MCP-style client for server.py: it starts the server, speaks
JSON-RPC 2.0 over the server's stdin and stdout (one message per line),
initializes, lists the tools and calls `fetch` once per URL.

    client.py URL...              the server under python-sb (complete mode)
    client.py --partial URL...    server_partial.py under plain python3,
                                  its fetch in an @sandbox worker
    client.py --no-sandbox URL... the same server under plain python3
    client.py --demo              start two local web servers and try the
                                  allowed one, file:///etc/passwd,
                                  localhost on another port and 10.0.0.1

In --demo the allowed host is the first local server (FETCH_ALLOWED_HOST
and FETCH_ALLOWED_PORT are set for .py-sandboxes); the 10.0.0.1 fetch is
made only under the sandbox, whose guard refuses it before any packet is
sent. Standard library only.
"""
import argparse
import http.server
import json
import os
import pathlib
import subprocess
import sys
import threading

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
INTRANET = "http://10.0.0.1/"


class McpClient:
    def __init__(self, argv, env=None, cwd=HERE):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.next_id = 0

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server ended without answering "
                               f"{method}: {self.close()[1].strip()}")
        answer = json.loads(line)
        if answer.get("id") != self.next_id:
            raise RuntimeError(f"answer to another request: {answer}")
        return answer

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self):
        answer = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcp-fetch-client", "version": "1.0"}})
        self.notify("notifications/initialized")
        return answer

    def fetch(self, url):
        answer = self.request("tools/call", {"name": "fetch",
                                             "arguments": {"url": url}})
        result = answer["result"]
        return result["isError"], result["content"][0]["text"]

    def close(self):
        """(exit status, stderr) of the server."""
        self.proc.stdin.close()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.wait(timeout=30), err


class Page(http.server.BaseHTTPRequestHandler):
    body = b"<html><title>allowed page</title>hello from the test host</html>"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def local_server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def show(url, failed, text):
    text = " ".join(text.split())
    print(f"fetch {url}: {'REFUSED' if failed else 'OK'}: {text[:160]}")


def main():
    ap = argparse.ArgumentParser(description="Drive server.py over stdio.")
    ap.add_argument("urls", nargs="*", metavar="URL")
    ap.add_argument("--demo", action="store_true",
                    help="local servers and the four fetches")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--partial", action="store_true",
                      help="run server_partial.py (partial mode: only the "
                      "fetch is sandboxed)")
    mode.add_argument("--no-sandbox", action="store_true",
                      help="run the server under plain python3")
    ap.add_argument("--python-sb", metavar="PATH",
                    default=str(REPO / "build" / "python-sb"))
    args = ap.parse_args()

    env = dict(os.environ)
    servers = []
    urls = list(args.urls)
    if args.demo:
        allowed, other = local_server(), local_server()
        servers = [allowed, other]
        env["FETCH_ALLOWED_HOST"] = "127.0.0.1"
        env["FETCH_ALLOWED_PORT"] = str(allowed.server_address[1])
        urls += [f"http://127.0.0.1:{allowed.server_address[1]}/",
                 "file:///etc/passwd",
                 f"http://127.0.0.1:{other.server_address[1]}/"]
        if args.no_sandbox:
            print(f"(not fetching {INTRANET} without the sandbox: "
                  "it would really be sent)")
        else:
            urls.append(INTRANET)
    if not urls:
        ap.error("give URLs, or --demo")

    if args.partial:
        # its workers run under this python-sb (pysandboxes finds the
        # checkout's package and launcher by itself otherwise)
        env["PYSB_PYTHON_SB"] = args.python_sb
        server = [sys.executable, "server_partial.py"]
        shown = "python3 server_partial.py"
    elif args.no_sandbox:
        server, shown = [sys.executable, "server.py"], "python3 server.py"
    else:
        server, shown = [args.python_sb, "server.py"], "python-sb server.py"
    print(f"$ {shown}   (in {HERE})")
    client = McpClient(server, env=env)
    try:
        info = client.initialize()["result"]["serverInfo"]
        tools = client.request("tools/list")["result"]["tools"]
        print(f"initialize: {info['name']} {info['version']}; tools: "
              f"{', '.join(t['name'] for t in tools)}")
        for url in urls:
            show(url, *client.fetch(url))
    finally:
        status, err = client.close()
        for s in servers:
            s.shutdown()
            s.server_close()
    for line in err.strip().splitlines():
        print(f"server stderr: {line}")
    return status


if __name__ == "__main__":
    sys.exit(main())
