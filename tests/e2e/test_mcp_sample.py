"""The MCP-style fetch server sample (issue 8, seed-spec 9.2), driven over
its stdin and stdout with JSON-RPC 2.0, in both modes: complete
(examples/mcp-fetch/server.py under python-sb, rules .py-sandboxes) and
partial (server_partial.py under plain python3, its fetch an @sandbox
function, rules .py-sandboxes-partial). The rules allow one host; the tests
point it at a local server (FETCH_ALLOWED_HOST/PORT), and check that
file://, localhost on another port and an intranet address are refused
while the allowed URL works, with the same text for the model in both
modes. The intranet fetch sends nothing: the guard refuses the connect (and
Landlock, under os-sandbox=auto, the port). A negative control runs the
same server without the sandbox. Offline.
"""
import http.server
import json
import os
import pathlib
import re
import subprocess
import sys
import threading

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "mcp-fetch"


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"hello from the allowed host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    """Two local servers: the allowed host and a 'service on localhost'."""
    servers = []
    for _ in range(2):
        s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)
    allowed, other = servers
    allowed.redirect_to = f"http://127.0.0.1:{other.server_address[1]}/"
    yield (f"http://127.0.0.1:{allowed.server_address[1]}/",
           f"http://127.0.0.1:{other.server_address[1]}/",
           allowed.server_address[1])
    for s in servers:
        s.shutdown()
        s.server_close()


class Server:
    """The sample server as a child, one request, one answer line."""

    def __init__(self, argv, port, env=None, cwd=SAMPLE):
        env = dict(os.environ, FETCH_ALLOWED_HOST="127.0.0.1",
                   FETCH_ALLOWED_PORT=str(port), **(env or {}))
        self.p = subprocess.Popen(argv, cwd=cwd, env=env, text=True,
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.n = 0

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, method, params=None):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method,
                   **({"params": params} if params is not None else {})})
        line = self.p.stdout.readline()
        assert line, self.close()
        return json.loads(line)

    def fetch(self, url):
        r = self.call("tools/call", {"name": "fetch",
                                     "arguments": {"url": url}})
        return r["result"]["isError"], r["result"]["content"][0]["text"]

    def close(self):
        self.p.stdin.close()
        err = self.p.stderr.read()
        self.p.stdout.close()
        self.p.stderr.close()
        return self.p.wait(timeout=30), err


def partial_server(sb, port, cwd=SAMPLE):
    """server_partial.py under plain python3; its workers run under the
    python-sb under test (it finds the checkout's pysandboxes itself)."""
    return Server([sys.executable, str(SAMPLE / "server_partial.py")], port,
                  env={"PYSB_PYTHON_SB": sb}, cwd=cwd)


DENIAL_LOG = re.compile(r"mcp-fetch: \S+: refused by the sandbox: "
                        r"Rule\w+Error: .+")


@pytest.fixture(params=["complete", "partial"])
def sandboxed(request, sb, web):
    if request.param == "complete":
        s = Server([sb, "server.py"], web[2])
    else:
        s = partial_server(sb, web[2])
    yield s
    status, err = s.close()
    assert status == 0
    if request.param == "complete":
        assert err == ""
    else:  # the server's log: one line per refusal, nothing else
        assert all(DENIAL_LOG.fullmatch(ln) for ln in err.splitlines()), err


def refused_connect(addr, port):
    return (True, f"URLError: <urlopen error Guard network connection to "
                  f"'[{addr}]:{port}' DENIED by implicit default policy.>")


def test_initialize_and_tools_list(sandboxed):
    r = sandboxed.call("initialize", {"protocolVersion": "2025-06-18",
                                      "capabilities": {},
                                      "clientInfo": {"name": "t",
                                                     "version": "0"}})
    assert r == {"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "mcp-fetch", "version": "1.0"}}}
    sandboxed.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = sandboxed.call("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["fetch"]
    assert tools[0]["inputSchema"]["required"] == ["url"]
    assert sandboxed.call("ping") == {"jsonrpc": "2.0", "id": 3,
                                      "result": {}}


def test_json_rpc_errors(sandboxed):
    r = sandboxed.call("resources/list")
    assert r["error"] == {"code": -32601,
                          "message": "Method not found: resources/list"}
    r = sandboxed.call("tools/call", {"name": "exec", "arguments": {}})
    assert r["error"] == {"code": -32602, "message": "Unknown tool: 'exec'"}
    sandboxed.p.stdin.write("{not json\n")
    sandboxed.p.stdin.flush()
    r = json.loads(sandboxed.p.stdout.readline())
    assert r["id"] is None and r["error"]["code"] == -32700


def test_the_allowed_host_is_fetched(sandboxed, web):
    assert sandboxed.fetch(web[0]) == (False, "hello from the allowed host\n")


def test_file_urls_are_refused(sandboxed):
    assert sandboxed.fetch("file:///etc/passwd") == (
        True, "URLError: <urlopen error Access to '/etc/passwd' must be "
              "accepted by a rule.>")


def test_localhost_on_another_port_is_refused(sandboxed, web):
    port = int(web[1].rsplit(":", 1)[1].strip("/"))
    assert sandboxed.fetch(web[1]) == refused_connect("127.0.0.1", port)


def test_a_redirect_to_localhost_is_refused(sandboxed, web):
    port = int(web[1].rsplit(":", 1)[1].strip("/"))
    assert sandboxed.fetch(web[0] + "redirect") == \
        refused_connect("127.0.0.1", port)


def test_the_intranet_is_refused_before_any_packet(sandboxed):
    assert sandboxed.fetch("http://10.0.0.1/") == \
        refused_connect("10.0.0.1", 80)
    assert sandboxed.fetch("http://10.20.30.40:8080/admin") == \
        refused_connect("10.20.30.40", 8080)


def test_without_the_sandbox_the_same_server_reads_anything(web):
    """Negative control: the refusals above are the sandbox's."""
    s = Server([sys.executable, "server.py"], web[2])
    try:
        failed, text = s.fetch("file:///etc/passwd")
        assert not failed and text.startswith("root:")
        assert s.fetch(web[1]) == (False, "hello from the allowed host\n")
    finally:
        assert s.close()[0] == 0


def test_the_client_script(sb):
    r = subprocess.run([sys.executable, str(SAMPLE / "client.py"), "--demo",
                        f"--python-sb={sb}"], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = re.sub(r"127\.0\.0\.1(\]?):\d+", r"127.0.0.1\1:PORT", r.stdout)
    assert out.splitlines() == [
        f"$ python-sb server.py   (in {SAMPLE})",
        "initialize: mcp-fetch 1.0; tools: fetch",
        "fetch http://127.0.0.1:PORT/: OK: <html><title>allowed page</title>"
        "hello from the test host</html>",
        "fetch file:///etc/passwd: REFUSED: URLError: <urlopen error Access "
        "to '/etc/passwd' must be accepted by a rule.>",
        "fetch http://127.0.0.1:PORT/: REFUSED: URLError: <urlopen error "
        "Guard network connection to '[127.0.0.1]:PORT' DENIED by implicit "
        "default policy.>",
        "fetch http://10.0.0.1/: REFUSED: URLError: <urlopen error Guard "
        "network connection to '[10.0.0.1]:80' DENIED by implicit default "
        "policy.>",
    ]


def test_the_profile_grants_little():
    """The sample's rule file: one net= rule, no wildcard import, no
    process-exec, no file exposed, locked."""
    lines = [ln.strip() for ln in
             (SAMPLE / ".py-sandboxes").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    nets = [ln for ln in lines if ln.startswith("net=")]
    assert nets == ["net=ALLOW|TCP|${FETCH_ALLOWED_HOST:-example.com}|"
                    "${FETCH_ALLOWED_PORT:-443}|OUT"]
    assert not any(ln.startswith(("expose-", "python-api=", "env="))
                   for ln in lines)
    assert not any("*" in ln for ln in lines if
                   ln.startswith("python-import="))
    assert "learn=false" in lines


# ---- partial mode only ----

def test_partial_logs_the_rule_behind_each_refusal(sb, web, tmp_path):
    """The parent tells a refusal from another failure with
    sandbox_denials(); started from another directory, as an MCP client
    would, it still finds its rules next to itself."""
    s = partial_server(sb, web[2], cwd=tmp_path)
    try:
        assert s.fetch(web[0]) == (False, "hello from the allowed host\n")
        s.fetch("file:///etc/passwd")
        s.fetch("http://10.0.0.1/")
        s.fetch("http://127.0.0.1:1")
        # a failure that is not the sandbox's: no log line
        assert s.fetch("nothing://here") == (
            True, "URLError: <urlopen error unknown url type: nothing>")
    finally:
        status, err = s.close()
    assert status == 0
    assert err.splitlines() == [
        "mcp-fetch: file:///etc/passwd: refused by the sandbox: "
        "RuleFileNotFoundError: Access to '/etc/passwd' must be accepted "
        "by a rule.",
        "mcp-fetch: http://10.0.0.1/: refused by the sandbox: "
        "RuleSocketConnectionRefusedError: Guard network connection to "
        "'[10.0.0.1]:80' DENIED by implicit default policy.",
        "mcp-fetch: http://127.0.0.1:1: refused by the sandbox: "
        "RuleSocketConnectionRefusedError: Guard network connection to "
        "'[127.0.0.1]:1' DENIED by implicit default policy.",
    ]


def test_the_client_script_in_partial_mode(sb):
    r = subprocess.run([sys.executable, str(SAMPLE / "client.py"), "--demo",
                        "--partial", f"--python-sb={sb}"],
                       capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = re.sub(r"127\.0\.0\.1(\]?):\d+", r"127.0.0.1\1:PORT", r.stdout)
    refused = ("refused by the sandbox: RuleSocketConnectionRefusedError: "
               "Guard network connection to")
    assert out.splitlines() == [
        f"$ python3 server_partial.py   (in {SAMPLE})",
        "initialize: mcp-fetch 1.0; tools: fetch",
        "fetch http://127.0.0.1:PORT/: OK: <html><title>allowed page</title>"
        "hello from the test host</html>",
        "fetch file:///etc/passwd: REFUSED: URLError: <urlopen error Access "
        "to '/etc/passwd' must be accepted by a rule.>",
        "fetch http://127.0.0.1:PORT/: REFUSED: URLError: <urlopen error "
        "Guard network connection to '[127.0.0.1]:PORT' DENIED by implicit "
        "default policy.>",
        "fetch http://10.0.0.1/: REFUSED: URLError: <urlopen error Guard "
        "network connection to '[10.0.0.1]:80' DENIED by implicit default "
        "policy.>",
        "server stderr: mcp-fetch: file:///etc/passwd: refused by the "
        "sandbox: RuleFileNotFoundError: Access to '/etc/passwd' must be "
        "accepted by a rule.",
        f"server stderr: mcp-fetch: http://127.0.0.1:PORT/: {refused} "
        "'[127.0.0.1]:PORT' DENIED by implicit default policy.",
        f"server stderr: mcp-fetch: http://10.0.0.1/: {refused} "
        "'[10.0.0.1]:80' DENIED by implicit default policy.",
    ]


def test_partial_mode_reads_its_own_directory_only(sb, web):
    """The worker imports the sample's code, so the sample's directory is
    exposed read-only (a documented cost of partial mode): its files can
    be fetched, its neighbours cannot."""
    s = partial_server(sb, web[2])
    try:
        failed, text = s.fetch((SAMPLE / "server.py").as_uri())
        assert not failed and text.startswith('"""An MCP-style server')
        other = SAMPLE.parent / "quick-demo" / "README.md"
        assert s.fetch(other.as_uri()) == (
            True, f"URLError: <urlopen error Access to '{other}' must be "
                  f"accepted by a rule.>")
    finally:
        assert s.close()[0] == 0


def test_the_partial_profile_grants_little():
    """.py-sandboxes-partial: the same one net= rule, the sample's
    directory read-only, no API, no environment, locked."""
    lines = [ln.strip() for ln in
             (SAMPLE / ".py-sandboxes-partial").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert [ln for ln in lines if ln.startswith("net=")] == [
        "net=ALLOW|TCP|${FETCH_ALLOWED_HOST:-example.com}|"
        "${FETCH_ALLOWED_PORT:-443}|OUT"]
    assert [ln for ln in lines if ln.startswith("expose-")] == [
        "expose-ro=${MCP_FETCH_DIR}"]
    assert not any(ln.startswith(("python-api=", "env=", "include"))
                   for ln in lines)
    modules = {m.strip() for ln in lines if ln.startswith("python-import=")
               for m in ln.split("=", 1)[1].split(",")}
    assert not modules & {"*", "subprocess", "ctypes", "pickle",
                          "importlib"}
    assert "learn=false" in lines
