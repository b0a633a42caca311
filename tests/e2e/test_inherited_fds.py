"""The descriptors above 2 that python-sb's caller leaves open are closed
before anything runs (src/launch/inherit.c; python-sb(1), INHERITED
DESCRIPTORS), under every provider and while learning; the caller passes
one on with --pysandboxes-keep-fd. The effects on the caller's side (a
lock released, a pipe written) are the attacks K53 and K54
(tests/attacks/test_k_kernel2.py); here: what the program sees, the
option's errors, and the learning run's note.
"""

import os
import subprocess

import pytest

from conftest import landlock_abi, sb_path, scaled

ABI = landlock_abi()
PROVIDERS = ["none", "subprocess", pytest.param(
    "landlock", marks=pytest.mark.skipif(
        ABI < 4, reason=f"this kernel's Landlock ABI is {ABI}, below 4 "
        "[core]"))]

# what the program finds at each descriptor the test names
PROBE = """\
import os, sys
for fd in map(int, sys.argv[1:]):
    try:
        print(fd, os.read(fd, 100).decode())
    except OSError as e:
        print(fd, type(e).__name__, e.errno)
"""


def _run(cwd, args, fds=(), rules="python-import=os,sys\n"):
    if rules is not None:
        (cwd / ".py-sandboxes").write_text(rules)
    (cwd / "probe.py").write_text(PROBE)
    return subprocess.run([str(sb_path()), *args], cwd=cwd, pass_fds=fds,
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=scaled(60))


def _pipe_with(text):
    r, w = os.pipe()
    os.write(w, text.encode())
    os.close(w)
    return r


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_descriptor_the_caller_left_open_is_closed_unless_kept(
        tmp_cwd, provider):
    a, b = _pipe_with("first"), _pipe_with("second")
    try:
        r = _run(tmp_cwd, [f"--os-sandbox={provider}",
                           f"--pysandboxes-keep-fd={b}", "probe.py", str(a),
                           str(b)], fds=(a, b))
    finally:
        os.close(a)
        os.close(b)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{a} OSError 9", f"{b} second"], \
        r.stdout
    assert "note: closed" not in r.stderr  # enforcing: no note


def test_keep_fd_takes_a_list_and_is_repeatable(tmp_cwd):
    fds = [_pipe_with(t) for t in ("a", "b", "c", "d")]
    try:
        r = _run(tmp_cwd, [f"--pysandboxes-keep-fd={fds[0]},{fds[2]}",
                           f"--pysandboxes-keep-fd={fds[3]}", "probe.py",
                           *map(str, fds)], fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{fds[0]} a", f"{fds[1]} OSError 9",
                                     f"{fds[2]} c", f"{fds[3]} d"], r.stdout


@pytest.mark.parametrize("value", ["", "2", "0", "abc", "3,", ",3", "3,,4",
                                   "1024", "-5", "+3", "3x",
                                   "99999999999999999999"])
def test_a_malformed_keep_fd_is_a_usage_error(tmp_cwd, value):
    r = _run(tmp_cwd, [f"--pysandboxes-keep-fd={value}", "-c",
                       "open('ran', 'w')"])
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith(
        "argument --pysandboxes-keep-fd: expected =FD[,FD...], open "
        "descriptors from 3 to 1023\n"), r.stderr
    assert not (tmp_cwd / "ran").exists()


def test_a_keep_fd_that_is_not_open_stops_the_run(tmp_cwd):
    r = _run(tmp_cwd, ["--pysandboxes-keep-fd=1000", "-c",
                       "open('ran', 'w')"])
    assert r.returncode == 255, (r.returncode, r.stderr)
    assert r.stderr == ("python-sb: --pysandboxes-keep-fd=1000: not an open "
                        "descriptor; nothing was run.\n"), r.stderr
    assert not (tmp_cwd / "ran").exists()


def test_qemu_refuses_a_kept_descriptor(tmp_cwd):
    a = _pipe_with("x")
    try:
        r = _run(tmp_cwd, ["--os-sandbox=qemu", f"--pysandboxes-keep-fd={a}",
                           "-c", "open('ran', 'w')"], fds=(a,))
    finally:
        os.close(a)
    assert r.returncode == 255, (r.returncode, r.stderr)
    assert r.stderr == (
        f"python-sb: --pysandboxes-keep-fd={a}: os-sandbox=qemu carries no "
        "descriptor of the caller's into the guest (partial mode's "
        "--pysandboxes-channel aside); nothing was run.\n"), r.stderr
    assert not (tmp_cwd / "ran").exists()


def test_a_learning_run_names_what_it_closed(tmp_cwd):
    a, b = _pipe_with("first"), _pipe_with("second")
    try:
        r = _run(tmp_cwd, ["probe.py", str(a)], fds=(a, b), rules=None)
    finally:
        os.close(a)
        os.close(b)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{a} OSError 9\n", r.stdout
    lo, hi = sorted((a, b))
    assert (f"python-sb: note: closed the descriptors {lo}, {hi} that the "
            f"caller left open; to pass one on: --pysandboxes-keep-fd={lo} "
            "(python-sb(1), INHERITED DESCRIPTORS).\n") in r.stderr, r.stderr
    # it was a learning run: the rules were written
    assert (tmp_cwd / ".py-sandboxes").exists()
    assert "Write all learning rules in" in r.stderr, r.stderr


# Which standard descriptors the program finds open; it writes the answer
# to a file (its stdout may be closed) and ends with 5.
STD_PROBE = """\
import os, sys
seen = []
for fd in range(3):
    try:
        os.fstat(fd)
        seen.append("open")
    except OSError:
        seen.append("closed")
with open(sys.argv[1], "w") as f:
    f.write(" ".join(seen))
raise SystemExit(5)
"""


def _closing(fds):
    def close():
        for fd in fds:
            os.close(fd)
    return close


@pytest.mark.parametrize("closed", [(0, 1), (2,), (0, 1, 2)],
                         ids=["stdin+stdout", "stderr", "all three"])
@pytest.mark.parametrize("mode", [*PROVIDERS, "limits", "learning"])
def test_closed_standard_descriptors_stay_closed_and_harmless(
        tmp_cwd, mode, closed):
    """A caller that closed stdin, stdout or stderr (`<&- >&-`): the first
    file python-sb opened took the number. The policy's memfd on 0 or 1 was
    refused by the guard (every run ended 255, 'bad PYSB_POLICY_FD'); a
    message for stderr went into whatever python-sb held at 2. Now their
    places are held by /dev/null while python-sb works and closed again
    for the program, which sees what plain python would."""
    out = tmp_cwd / "seen.txt"
    out.write_text("")
    flags = {"limits": ["--os-sandbox=subprocess", "--limit-cpu=100"],
             "learning": ["--learn"]}.get(mode, [f"--os-sandbox={mode}"])
    (tmp_cwd / ".py-sandboxes").write_text(
        "" if mode == "learning" else
        f"python-import=os,sys\nexpose-rw={out}\n")
    (tmp_cwd / "probe.py").write_text(STD_PROBE)
    r = subprocess.run([str(sb_path()), *flags, "probe.py", str(out)],
                       cwd=tmp_cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=scaled(60),
                       preexec_fn=_closing(closed))
    want = " ".join("closed" if fd in closed else "open" for fd in range(3))
    assert (r.returncode, out.read_text()) == (5, want), r.stderr
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    if mode == "learning":  # the learned file holds rules, nothing else
        assert "PYSB_POLICY_FD" not in rules and "python-sb:" not in rules
