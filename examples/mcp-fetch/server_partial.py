"""The mcp-fetch server in partial mode: the same JSON-RPC server as
server.py, run by plain python3, with only its `fetch` tool confined.

`fetch` below is an @sandbox function: each call goes to a sandboxed
worker (python-sb, under .py-sandboxes-partial), and its text or its
exception comes back. The JSON-RPC loop, stdin and stdout stay in this
unconfined process; a prompt injection that steers the tool meets the
sandbox, not the server. Run it as `python3 server_partial.py`, from any
directory: from a checkout it finds the pysandboxes package in python/ and
the launcher in build/.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import pysandboxes  # noqa: F401
except ImportError:  # not installed: the checkout's own copy
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                 "python"))
from pysandboxes import (SandBoxError, sandbox, sandbox_denials,  # noqa: E402
                         sandboxes)

import server  # noqa: E402

RULES = os.path.join(HERE, ".py-sandboxes-partial")


@sandbox
def fetch(url):
    """server.fetch, unchanged, in the sandbox."""
    return server.fetch(url)


def fetch_tool(url):
    """The tool's (text, is_error), as server.fetch_tool gives it, with the
    fetch made in the sandbox. The model gets the same text as under
    python-sb; the rule behind a refusal goes to the server's log
    (stderr, which an MCP client shows as the server's log)."""
    try:
        return fetch(url), False
    except SandBoxError as e:  # the worker died or timed out: no answer
        return f"{type(e).__name__}: {e}", True
    except Exception as e:
        for denial in sandbox_denials(e):
            print(f"mcp-fetch: {url}: refused by the sandbox: {denial}",
                  file=sys.stderr, flush=True)
        return f"{type(e).__name__}: {e}", True


def main():
    # MCP_FETCH_DIR: the directory the rules expose, wherever this runs
    envs = dict(os.environ, MCP_FETCH_DIR=HERE)
    with sandboxes(sandboxes_config=RULES, envs=envs):
        server.serve(fetch_tool)


if __name__ == "__main__":
    # @sandbox sends a function by reference (module and name) and the
    # worker cannot import __main__: serve with this file's importable twin.
    import server_partial
    server_partial.main()
