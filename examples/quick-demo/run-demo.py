#!/usr/bin/env python3
"""The quick demo's driver: `make demo` runs it, and `--steps` replays the
step-by-step walk-through of README.md, learning fooled included.

It owns the scene, never the sandbox: it copies app/ and data/ to a fresh
temporary working copy (the checkout is never written), makes a fake HOME
holding a fake ~/.ssh/id_rsa, starts two web servers on loopback (one
stands in for example.com, the other is where a stolen secret would go),
and runs build/python-sb on app/demo.py as a user would type it. Every
[ OK ] and [REFUSED] line it shows is the program's own output under the
real guard or kernel; the driver adds headings and explanations only, and
never edits what the program prints.

Standard library only; any python3 >= 3.9 runs it.
"""
import argparse
import difflib
import http.server
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEMO_ENV = {"DEMO_API_KEY": "sk-demo-123",
            "AWS_SECRET_ACCESS_KEY": "do-not-leak"}
FAKE_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
            "fake key made by the python-sb quick demo\n"
            "-----END OPENSSH PRIVATE KEY-----\n")
PAGE = (b"<!doctype html><html><head><title>Example Domain</title></head>"
        b"<body><h1>Example Domain</h1><p>Served on loopback by the "
        b"python-sb quick demo.</p></body></html>\n")
# Lines of the learned file worth showing (the rest is the template's
# comments and the fixed rules).
EXCERPT = ("env=", "unenv=", "expose-", "ignore=", "net=", "python-import=",
           "python-api=", "os-sandbox=")


class DemoError(Exception):
    """A setup problem: the message says what to do."""


class Server:
    """A web server on loopback in a thread of the driver. It counts the
    requests, so the demo can show that a refused exfiltration sent
    nothing."""

    def __init__(self, host, port, body):
        server = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.host, self.port = self.httpd.server_address[:2]
        self.url = f"http://{self.host}:{self.port}/"
        threading.Thread(target=self.httpd.serve_forever,
                         daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def start_server(host, port, body, what, option):
    try:
        return Server(host, port, body)
    except OSError as e:
        if port:
            raise DemoError(
                f"run-demo: cannot listen on {host}:{port} for {what}: "
                f"{e.strerror}. Pick another port ({option}=N) or leave "
                f"{option} out to take a free one.") from None
        raise DemoError(f"run-demo: cannot listen on {host} for {what}: "
                        f"{e.strerror}.") from None


def start_exfil_server(port, option):
    """127.0.0.2 is another address on Linux's loopback; where it cannot be
    bound, another port of 127.0.0.1 is the other destination."""
    try:
        return Server("127.0.0.2", port, b"stolen, thanks\n")
    except OSError:
        return start_server("127.0.0.1", port, b"stolen, thanks\n",
                            "the exfiltration server", option)


def find_python_sb(given):
    path = pathlib.Path(given) if given else REPO / "build" / "python-sb"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise DemoError(f"run-demo: {path} is not built: run `make` first "
                        "(or pass --python-sb=PATH).")
    return str(path.resolve())


def make_workdir(given):
    """A fresh copy of app/ and data/. A directory the user names must not
    hold an earlier run's rule file: learning would merge into it."""
    if given:
        work = pathlib.Path(given).resolve()
        old = sorted(p.name for p in work.glob(".py-sandboxes*")) \
            if work.is_dir() else []
        if old:
            raise DemoError(
                f"run-demo: {work} holds files of an earlier run "
                f"({', '.join(old)}), and learning would merge into them. "
                f"Remove them (rm -f {shlex.quote(str(work))}/.py-sandboxes*)"
                ", name a new directory, or leave --workdir out for a fresh "
                "temporary copy.")
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = pathlib.Path(tempfile.mkdtemp(prefix="pysb-demo-"))
    for sub in ("app", "data"):
        shutil.rmtree(work / sub, ignore_errors=True)
        shutil.copytree(HERE / sub, work / sub,
                        ignore=shutil.ignore_patterns("__pycache__"))
    # Outside the working copy: a working directory that holds the home
    # directory is not the program's own tree to learning.
    home = pathlib.Path(tempfile.mkdtemp(prefix="pysb-demo-home-"))
    (home / ".ssh").mkdir()
    key = home / ".ssh" / "id_rsa"
    key.write_text(FAKE_KEY)
    key.chmod(0o600)
    return work, home


def demo_environment(home):
    """The user's environment, minus anything that looks like a secret (a
    learning run sees the whole environment, and the demo lists secret
    names), plus the demo's two secrets and the fake HOME."""
    env = {k: v for k, v in os.environ.items()
           if not any(s in k.upper() for s in ("KEY", "SECRET", "TOKEN",
                                               "PASSWORD"))}
    env.update(DEMO_ENV)
    env["HOME"] = str(home)
    env.pop("OS_SANDBOX", None)
    env.pop("PYTHONPATH", None)
    return env


class Demo:
    def __init__(self, args):
        self.sb = find_python_sb(args.python_sb)
        self.pause = args.pause
        self.web = start_server("127.0.0.1", args.port, PAGE,
                                "the example.com stand-in", "--port")
        try:
            self.exfil = start_exfil_server(args.exfil_port,
                                            "--exfil-port")
            self.work, self.home = make_workdir(args.workdir)
        except DemoError:
            self.web.close()
            if hasattr(self, "exfil"):
                self.exfil.close()
            raise
        self.env = demo_environment(self.home)
        self.env["PWD"] = str(self.work)  # as a shell there would set it
        self.rules = self.work / ".py-sandboxes"

    def close(self, keep, workdir):
        """The fake HOME goes unless --keep; the working copy stays with
        --keep or --workdir."""
        self.web.close()
        self.exfil.close()
        if keep:
            print(f"\nKept: the fake HOME {self.home}")
        else:
            shutil.rmtree(self.home, ignore_errors=True)
        if keep or workdir:
            print(f"Kept: the working copy {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    # ---- output ----

    @staticmethod
    def say(text=""):
        print(text, flush=True)

    def heading(self, text):
        if self.pause:
            try:
                input("\n(press Enter for the next step) ")
            except EOFError:
                pass
        self.say()
        self.say(f"== {text} ==")

    def run(self, argv, env_extra=None, shown_env=""):
        """Run a command in the working copy, stdout and stderr merged in
        the order they come, and print it as a user would see it."""
        env = dict(self.env, **(env_extra or {}))
        shown = " ".join(shlex.quote(a) for a in argv)
        self.say(f"$ {shown_env}{shown}")
        real = [self.sb if argv[0] == "python-sb" else
                shutil.which(argv[0], path=env.get("PATH")) or argv[0]]
        real += argv[1:]
        proc = subprocess.run(real, cwd=self.work, env=env,
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              timeout=60)
        out = proc.stdout.rstrip("\n")
        if out:
            self.say(out)
        if proc.returncode != 0:
            self.say(f"(exit status {proc.returncode})")
        return proc

    def app(self, *extra, evil=False, url=None):
        argv = ["app/demo.py", f"--url={url or self.web.url}", "--dir=data"]
        argv += list(extra)
        if evil:
            argv += ["--evil", f"--exfil-url={self.exfil.url}?secret=stolen"]
        return argv

    def excerpt(self):
        for line in self.rules.read_text().splitlines():
            if line.startswith(EXCERPT):
                self.say(f"    {line}")

    def review(self):
        """The one line a reviewer adds: without HOME, `~` means nothing
        inside the sandbox, and the SSH-key step would not even find the
        key. Forwarding a variable grants no file."""
        with open(self.rules, "a") as f:
            f.write("\n# Added at review: ~ means the same home inside"
                    " (it grants no file)\nenv=HOME=${HOME}\n")
        self.say("Review: the demo adds one line by hand, env=HOME=${HOME},"
                 " so that ~ is the")
        self.say("same home inside the sandbox; forwarding a variable grants"
                 " no file.")

    def provider(self):
        proc = subprocess.run([self.sb, "--pysandboxes-explain"],
                              cwd=self.work, env=self.env,
                              stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        lines = proc.stdout.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("# Provider:"):
                more = lines[i + 1][2:] if i + 1 < len(lines) and \
                    lines[i + 1].startswith("#   ") else ""
                return line[2:] + ("\n" + more if more else "")
        return "Provider: unknown (--pysandboxes-explain failed: " \
               f"{proc.stderr.strip()})"

    def exfil_report(self, before):
        got = self.exfil.requests[before:]
        if got:
            self.say(f"The exfiltration server received {len(got)} "
                     f"request(s): {', '.join(got)}")
        else:
            self.say("The exfiltration server received nothing.")

    def intro(self):
        self.say("python-sb quick demo: an ordinary script, its policy "
                 "learned, then the same script misbehaving.")
        self.say(f"Web server standing in for example.com: {self.web.url}"
                 " (loopback, started by this demo)")
        self.say(f"Exfiltration server, another address no rule allows: "
                 f"{self.exfil.url}")
        self.say(f"Working copy: {self.work} (app/ and data/ copied)")
        self.say(f"Fake HOME: {self.home} (with a fake .ssh/id_rsa)")
        self.say("Environment: " + " ".join(f"{k}={v}"
                                            for k, v in DEMO_ENV.items()))
        self.say("Nothing leaves this machine.")

    # ---- the two scenarios ----

    def quick(self):
        self.intro()
        self.heading("1. Learn: there is no .py-sandboxes yet, so this run "
                     "learns the policy")
        self.run(["python-sb"] + self.app())
        self.heading("2. The policy it wrote (excerpt of .py-sandboxes)")
        self.excerpt()
        self.review()
        self.heading("3. Enforce, with the script misbehaving as a prompt "
                     "injection could (--evil)")
        self.say(self.provider())
        before = len(self.exfil.requests)
        self.run(["python-sb"] + self.app(evil=True))
        self.exfil_report(before)
        self.say()
        self.say("The legitimate work still passes; everything else is "
                 "refused.")
        self.say("Step by step, including learning fooled by --evil: "
                 "examples/quick-demo/run-demo.py --steps")

    def steps(self):
        self.intro()
        self.heading("Step 1. Without a sandbox, the script does its three "
                     "things")
        self.run(["python3"] + self.app())

        self.heading("Step 2. The first run under python-sb learns (no "
                     ".py-sandboxes yet; --learn is optional then)")
        self.run(["python-sb"] + self.app())

        self.heading("Step 3. Review what was learned (excerpt)")
        self.excerpt()
        text = self.rules.read_text().splitlines()
        self.say("expose-rw= lines: %d, python-api= lines: %d" % (
            sum(ln.startswith("expose-rw=") for ln in text),
            sum(ln.startswith("python-api=") for ln in text)))
        self.review()

        self.heading("Step 4. The same command again: now it is enforced")
        self.say(self.provider())
        self.run(["python-sb"] + self.app())
        self.say()
        self.say("Without its env= line the key never reaches the program "
                 "(the line removed for one run):")
        saved = self.rules.read_text()
        self.rules.write_text("".join(
            ln for ln in saved.splitlines(keepends=True)
            if not ln.startswith("env=DEMO_API_KEY=")))
        self.run(["python-sb"] + self.app())
        self.rules.write_text(saved)

        self.heading("Step 5. Another site and another directory: refused")
        self.run(["python-sb", "app/demo.py", f"--url={self.exfil.url}",
                  f"--dir={self.home}"])

        self.heading("Step 6. The script misbehaves (--evil), as a prompt "
                     "injection could")
        before = len(self.exfil.requests)
        self.run(["python-sb"] + self.app(evil=True))
        self.exfil_report(before)

        self.heading("Step 7. The kernel alone: Landlock, the Python layer "
                     "switched off for this run")
        self.run(["python-sb", "--py-sandbox=false"] + self.app(evil=True),
                 env_extra={"OS_SANDBOX": "landlock"},
                 shown_env="OS_SANDBOX=landlock ")
        self.say("The messages are the kernel's (EACCES); exit code 32512 is"
                 " a shell that could not")
        self.say("start (127 << 8): executing /bin/sh is refused.")

        self.heading("Step 8. Learning is fooled: learn again, with --evil")
        before = len(self.exfil.requests)
        self.run(["python-sb", "--learn"] + self.app(evil=True))
        self.exfil_report(before)
        old = self.work / ".py-sandboxes.old"
        self.say()
        self.say("What the learning run added (diff .py-sandboxes.old "
                 ".py-sandboxes, added lines):")
        new = self.rules.read_text().splitlines()
        for line in difflib.ndiff(old.read_text().splitlines(), new):
            if line.startswith("+ ") and line[2:].strip():
                self.say(f"    {line[2:]}")
        self.say()
        self.say("Learning records what the code does, including what it "
                 "should not do: learn only")
        self.say("from a trusted run, and review the diff of .py-sandboxes "
                 "like code.")


def main():
    ap = argparse.ArgumentParser(
        description="The python-sb quick demo (see README.md).")
    ap.add_argument("--steps", action="store_true",
                    help="the step-by-step walk-through, learning fooled "
                         "included")
    ap.add_argument("--pause", action="store_true",
                    help="wait for Enter before each step")
    ap.add_argument("--python-sb", metavar="PATH",
                    help="the launcher (default: build/python-sb of this "
                         "checkout)")
    ap.add_argument("--port", type=int, default=0,
                    help="port of the example.com stand-in (default: a "
                         "free one)")
    ap.add_argument("--exfil-port", type=int, default=0,
                    help="port of the exfiltration server (default: a "
                         "free one)")
    ap.add_argument("--workdir", metavar="DIR",
                    help="work there instead of a fresh temporary copy "
                         "(kept)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary working copy")
    args = ap.parse_args()
    try:
        demo = Demo(args)
    except DemoError as e:
        print(e, file=sys.stderr)
        return 2
    try:
        demo.steps() if args.steps else demo.quick()
    finally:
        demo.close(args.keep, args.workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
