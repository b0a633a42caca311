"""Group K of attacks.md, python-sb's own files (issue 21): a program whose
policy hands it the tree that holds its rule file (expose-rw=.) tries to
rewrite its own policy, the policy's include, and the learning backups, with
every means a file has (write, truncate, rename over, unlink and re-create,
a symbolic link renamed over, a hard link, chmod, renaming the directory
away), from Python and, under the kernel columns, from native code (ctypes:
libc directly, under the guard's eyes only as a call it allowed). It also
plants links for the names the learning writer uses. Judged from outside:
the files' bytes, mode, type and link count after the run, and a root-owned
0600 victim after a later trusted learning run as root. K16 nests two
writable trees and swaps the project directory itself, judged by what the
next run there may read.
"""
import os
import pathlib
import stat
import subprocess

import pytest

from harness import (as_nobody, attack, chown_tree, documented_escape,
                     root_python, scaled)

INC = "sub/inc.rules"
INC_TEXT = "# the include\n"
BACKUP = ".py-sandboxes.old"
BACKUP_TEXT = "# an old version\n"
VICTIM_TEXT = "root secret\n"

# what the program tries, on each of python-sb's files; 'lib' is libc
# through ctypes (None under the subprocess columns: no native attempts)
ATTACK = r'''
import ctypes, os, sys
native = sys.argv[1] == "native"
lib = ctypes.CDLL(None, use_errno=True) if native else None
victim = sys.argv[2]
EVIL = "expose-ro=/\n"

def attempt(fn):
    try:
        fn()
    except Exception:
        pass

def py_ops(t):
    attempt(lambda: open(t, "a").write(EVIL))
    attempt(lambda: os.truncate(t, 0))
    attempt(lambda: os.chmod(t, 0o6777))
    attempt(lambda: (open("x", "w").write(EVIL), os.rename("x", t)))
    attempt(lambda: os.link(t, "hl-" + os.path.basename(t)))
    attempt(lambda: open("hl-" + os.path.basename(t), "a").write(EVIL))
    attempt(lambda: (os.symlink(victim, "sl"), os.rename("sl", t)))
    attempt(lambda: os.unlink(t))
    attempt(lambda: open(t, "w").write(EVIL))

def c_ops(t):
    b = t.encode()
    hl = ("hl-n-" + os.path.basename(t)).encode()
    fd = lib.open(b, os.O_WRONLY | os.O_APPEND)
    if fd >= 0:
        lib.write(fd, EVIL.encode(), len(EVIL))
        lib.close(fd)
    lib.truncate(b, ctypes.c_long(0))
    lib.chmod(b, 0o6777)
    fd = lib.open(b"nx", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if fd >= 0:
        lib.write(fd, EVIL.encode(), len(EVIL))
        lib.close(fd)
    lib.rename(b"nx", b)
    if lib.link(b, hl) == 0:
        fd = lib.open(hl, os.O_WRONLY | os.O_APPEND)
        if fd >= 0:
            lib.write(fd, EVIL.encode(), len(EVIL))
            lib.close(fd)
    lib.symlink(victim.encode(), b"nsl")
    lib.rename(b"nsl", b)
    lib.unlink(b)
    fd = lib.open(b, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if fd >= 0:
        lib.write(fd, EVIL.encode(), len(EVIL))
        lib.close(fd)

for t in (".py-sandboxes", "sub/inc.rules", ".py-sandboxes.old"):
    py_ops(t)
    if native:
        c_ops(t)
if sys.argv[3] == "move":
    # the directory that holds the include, renamed away and re-made
    attempt(lambda: os.rename("sub", "moved"))
    if native:
        lib.rename(b"sub", b"moved-n")
    attempt(lambda: os.makedirs("sub", exist_ok=True))
    attempt(lambda: open("sub/inc.rules", "w").write(EVIL))
# links for every name the learning writer ever used
for pid in range(2, 3000):
    attempt(lambda: os.symlink(victim, f".py-sandboxes.{pid}.tmp"))
for i in range(1, 10):
    attempt(lambda: os.symlink(victim, f".py-sandboxes.old_{i}"))
print("done")
'''


@pytest.fixture
def victim(tmp_path_factory):
    d = tmp_path_factory.mktemp("victim")
    os.chmod(d, 0o700)
    path = d / "secret"
    path.write_text(VICTIM_TEXT)
    os.chmod(path, 0o600)
    return str(path)


RULES = ("python-import=*\npython-api=ALLOW:native\nexpose-rw=.\n"
         f'include "./{INC}"\n')


def run_attack(case, victim, native, move=False):
    case.mkdir("sub")
    case.write(INC, INC_TEXT)
    case.write(BACKUP, BACKUP_TEXT)
    case.write("attack.py", ATTACK)
    return case._run(RULES, [f"--python={case.python}", "attack.py",
                             "native" if native else "python", victim,
                             "move" if move else "stay"],
                     timeout=300)


def umask():
    m = os.umask(0)
    os.umask(m)
    return m


@attack("K12", "rewrite the rule file, its include and its backups from "
        "inside (write, truncate, chmod, rename over, link, unlink)")
def test_K12(case, victim, judge):
    check_files(case, judge, victim, move=False)


@documented_escape(["firejail", "subprocess", "subprocess/nobody"],
                   "weaknesses.md 57: the Python layer and firejail do not "
                   "pin the directories above an own file")
@attack("K11", "rename the directory that holds an include away and put "
        "another include in its place")
def test_K11(case, victim, judge):
    check_files(case, judge, victim, move=True)


def check_files(case, judge, victim, move):
    native = case.os_sandbox != "subprocess"
    r = run_attack(case, victim, native, move)
    assert r.returncode == 0 and "done" in r.stdout, (r.stdout, r.stderr)
    moved = [m for m in ("moved", "moved-n")
             if os.path.lexists(case.path(m))]
    if moved:
        judge._record("escaped", f"the include's directory is now {moved}")
    assert not moved, "the directory that holds the include was renamed"
    expected = {
        ".py-sandboxes": RULES + case.tail(),
        INC: INC_TEXT,
        BACKUP: BACKUP_TEXT,
    }
    for rel, text in expected.items():
        st = os.lstat(case.path(rel))
        assert stat.S_ISREG(st.st_mode), (rel, r.stderr)
        assert stat.S_IMODE(st.st_mode) == 0o666 & ~umask(), \
            (rel, oct(st.st_mode))
        assert st.st_nlink == 1, rel
        with open(case.path(rel)) as f:
            assert f.read() == text, (rel, r.stderr)
    judge._record("refused by " + ("kernel" if native else "python"),
                  "the rule file, include and backup are unchanged")
    with open(victim) as f:
        assert f.read() == VICTIM_TEXT


@attack("K13", "plant links for the learning writer's names, then a "
        "trusted learning run as root")
def test_K13(case, victim, judge):
    native = case.os_sandbox != "subprocess"
    r = run_attack(case, victim, native)
    assert r.returncode == 0, r.stderr
    # the user, as root, learns again in the same directory
    case.write("app.py", "import os\nos.environ.get('K13_VAR')\n")
    learn = subprocess.run(
        [case.sb, f"--python={root_python()}", "--learn", "app.py"],
        cwd=case.root, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL, env=dict(os.environ, K13_VAR="1"))
    st = os.lstat(victim)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    with open(victim) as f:
        assert f.read() == VICTIM_TEXT
    rf = os.lstat(case.path(".py-sandboxes"))
    assert stat.S_ISREG(rf.st_mode)
    assert not rf.st_mode & (stat.S_ISUID | stat.S_ISGID)
    if learn.returncode == 0:
        assert "env=K13_VAR=${K13_VAR}" in open(
            case.path(".py-sandboxes")).read(), learn.stderr
        judge._record("refused by launcher", "links not followed")
    else:
        # a rule file of uid 65534, in a directory of uid 65534's, is not
        # root's to rewrite (the directory is judged first)
        assert learn.returncode == 255 and case.nobody, learn.stderr
        assert ("belongs to uid 65534" in learn.stderr or
                ("(uid 65534, " in learn.stderr and "could be changed by "
                 "users other than uid 0" in learn.stderr)), learn.stderr
        judge._record("refused by launcher", learn.stderr.strip())


# K16: the project lies in a writable tree of its own policy (expose-rw=.
# inside expose-rw=<outer>: a project in /tmp with expose-rw=/tmp). The
# program stages a directory with a rule file that exposes a secret, and
# swaps it for the project directory, whose own root the outer exposure
# lets it rename; the next run in the project would then run under it.
SWAP = r'''
import ctypes, os, sys
native = sys.argv[1] == "native"
outer, planted = sys.argv[2], sys.argv[3]
lib = ctypes.CDLL(None, use_errno=True) if native else None

def attempt(fn):
    try:
        fn()
    except Exception:
        pass

attempt(lambda: os.mkdir(outer + "/stage"))
attempt(lambda: open(outer + "/stage/.py-sandboxes", "w").write(planted))
attempt(lambda: os.rename(outer + "/proj", outer + "/proj.old"))
if native and not os.path.exists(outer + "/proj.old"):
    lib.rename((outer + "/proj").encode(), (outer + "/proj.n").encode())
attempt(lambda: os.rename(outer + "/stage", outer + "/proj"))
if native:
    lib.rename((outer + "/stage").encode(), (outer + "/proj").encode())
print("done")
'''
SECRET_TEXT = "the secret next door\n"


def run_in(case, cwd, argv, timeout=120):
    argv = [case.sb] + [str(a) for a in argv]
    if case.nobody and os.geteuid() == 0:
        chown_tree(case.root)
        argv = as_nobody(argv)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@documented_escape(["firejail", "subprocess", "subprocess/nobody"],
                   "weaknesses.md 57: the Python layer and firejail do not "
                   "pin the directories above an own file")
@attack("K16", "in nested writable trees, swap the project directory for "
        "one with a rule file of the program's own")
def test_K16(case, judge):
    outer = case.path("a")
    proj = os.path.join(outer, "proj")
    secret = case.write("secret.txt", SECRET_TEXT)
    rules = ("python-import=*\npython-api=ALLOW:native\nexpose-rw=.\n"
             f"expose-rw={outer}\n" + case.tail())
    case.write("a/proj/.py-sandboxes", rules)
    case.write("a/proj/swap.py", SWAP)
    planted = (f"expose-ro={case.root}\npython-import=*\n"
               f"os-sandbox={case.os_sandbox}\n")
    native = case.os_sandbox != "subprocess"
    r = run_in(case, proj, [f"--python={case.python}", "swap.py",
                            "native" if native else "python", outer,
                            planted])
    assert r.returncode == 0 and "done" in r.stdout, (r.stdout, r.stderr)
    # the next run in the project, which must not read the secret
    nxt = run_in(case, proj, [f"--python={case.python}", "-c",
                              f"print(open({secret!r}).read(), end='')"])
    moved = [m for m in ("proj.old", "proj.n")
             if os.path.lexists(os.path.join(outer, m))]
    if moved or SECRET_TEXT in nxt.stdout:
        judge._record("escaped", f"renamed to {moved}; next run: "
                      f"{nxt.stdout!r}")
    assert not moved, "the project directory was renamed"
    assert SECRET_TEXT not in nxt.stdout, "the planted policy held"
    assert nxt.returncode != 0, (nxt.stdout, nxt.stderr)
    with open(os.path.join(proj, ".py-sandboxes")) as f:
        assert f.read() == rules
    judge._record("refused by " + ("kernel" if native else "python"),
                  "the project directory and its rule file are in place; "
                  "the next run cannot read the secret")


def run_measured(case, env=None):
    """Run python-sb on case's run.py under a parent of its own that
    measures it from outside: (status, bytes on stderr, peak RSS in KiB,
    the end of stderr)."""
    argv = [case.sb, f"--python={case.python}", "run.py"]
    if case.nobody and os.geteuid() == 0:
        chown_tree(case.root)
        argv = as_nobody(argv)
    measure = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "print(r.returncode, len(r.stderr), resource.getrusage("
               "resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.stdout.write(r.stderr[-600:].decode(errors='replace'))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", measure] + argv,
                       cwd=case.root, env=env, capture_output=True,
                       text=True, timeout=300)
    first, _, tail = r.stdout.partition("\n")
    status, printed, peak_kb = (int(v) for v in first.split())
    return status, printed, peak_kb, tail



@attack("K40", "a rule file nesting ${A:-${B:-...}} defaults thousands "
        "deep: the launcher's stack")
def test_K40(case, judge):
    """A rule file shipped with a project can be hostile. Each nested
    default was a level of recursion in the parser: 300,000 of them (1.8
    MB) overflowed python-sb's stack, and the launcher died of SIGSEGV
    instead of refusing the file. Judged from outside: the exit status
    255 and the message naming the line; nothing ran."""
    n = 300_000
    marker = case.path("ran")
    case.write("run.py", f"open({marker!r}, 'w').close()\n")
    r = case._run("python-import=*\nexpose-ro=" + "${A:-" * n + "x" +
                  "}" * n + "\n", [f"--python={case.python}", "run.py"])
    crashed = r.returncode < 0 or r.returncode > 128 and r.returncode != 255
    judge._record("escaped" if crashed else "refused by launcher",
                  f"status {r.returncode}: {r.stderr[-200:]!r}")
    assert not crashed, f"python-sb died: status {r.returncode}"
    assert r.returncode == 255, (r.returncode, r.stderr[-500:])
    assert (".py-sandboxes(2): Variable defaults nested more than 16 deep"
            in r.stderr), r.stderr[-500:]
    assert not os.path.exists(marker)


@attack("K41", "a rule file whose ${} references expand to gigabytes "
        "(${LS_COLORS} times millions): the launcher's memory")
def test_K41(case, judge):
    """Each reference was expanded in full: a 64 MiB rule file of
    "${LS_COLORS}" (1.5 KB in many environments) asked python-sb for 24
    GB before it said anything. What all references of a parse expand to
    is bounded (16 MiB). Here 2,000 references to a 100 KiB variable
    (200 MB, no more, on a shared machine) are refused; judged from outside:
    the status, the message, and the peak memory of python-sb, measured
    by a parent of its own."""
    marker = case.path("ran")
    case.write("run.py", f"open({marker!r}, 'w').close()\n")
    rules = "python-import=*\nexpose-ro=" + "${PYSB_K41}" * 2000 + "\n"
    case.write(".py-sandboxes", rules + case.tail())
    env = dict(os.environ, PYSB_K41="x" * 100_000)
    status, _, peak_kb, tail = run_measured(case, env)
    judge._record("escaped" if peak_kb > 100_000 else "refused by launcher",
                  f"status {status}, peak {peak_kb} KiB")
    assert status == 255, (status, tail)
    assert ("Variable references expand to more than 16 MiB in all"
            in tail), tail
    assert peak_kb < 100_000, f"python-sb took {peak_kb} KiB"
    assert not os.path.exists(marker)


@attack("K42", "a rule file of millions of bad lines: every error kept "
        "and printed")
def test_K42(case, judge):
    """Every problem of a rule file is reported at once: a 4 MB file of
    two million lines holding a NUL made python-sb print 160 MB of
    messages with 890 MB of memory (a 64 MiB file, 16 times that, on a
    machine shared with others). A parse keeps 100 errors and counts the
    rest. Judged from outside: the status, the size of what python-sb
    printed and its peak memory, measured by a parent of its own."""
    marker = case.path("ran")
    case.write("run.py", f"open({marker!r}, 'w').close()\n")
    with open(case.path(".py-sandboxes"), "wb") as f:
        f.write(b"\x00\n" * 2_000_000 + case.tail().encode())
    status, printed, peak_kb, tail = run_measured(case)
    judge._record("escaped" if printed > 100_000 or peak_kb > 200_000
                  else "refused by launcher",
                  f"status {status}, {printed} bytes printed, peak "
                  f"{peak_kb} KiB")
    assert status == 255, (status, tail)
    assert printed < 100_000, f"python-sb printed {printed} bytes"
    assert peak_kb < 200_000, f"python-sb took {peak_kb} KiB"
    assert "... and 1999900 more errors, not shown." in tail, tail
    assert not os.path.exists(marker)


@attack("K43", "a rule file including many large files: their sum, and "
        "how many")
def test_K43(case, judge):
    """Each included file was bounded (64 MiB), their sum and their number
    were not: a rule file could have python-sb read as many large files
    as the machine holds, and compare each new include with all the
    others. The rule file with its includes holds 64 MiB, names 1,024
    files and includes 4,096 times at most. Judged from outside: the status and the message;
    nothing ran."""
    marker = case.path("ran")
    case.write("run.py", f"open({marker!r}, 'w').close()\n")
    for i in range(3):
        case.write(f"big{i}.rules", "# " + "x" * (22 << 20) + "\n")
    many = "".join(f'include "absent/{i}.rules"\n' for i in range(1100))
    for label, head, line, message in (
            ("sum", "".join(f'include "big{i}.rules"\n' for i in range(3)),
             3, 'include "big2.rules": the rule file and its includes '
                'hold more than 64 MiB.'),
            ("number", many, 1024, 'include "absent/1023.rules": the rule '
             'file and its includes name more than 1024 files (or include '
             'them more than 4096 times).'),
            # one file included again and again: each repeat cost an
            # lstat, a realpath and a look through every file loaded
            ("repeats", 'include "big0.rules"\n' * 5000, 4096,
             'include "big0.rules": the rule file and its includes name '
             'more than 1024 files (or include them more than 4096 '
             'times).')):
        r = case._run(head + "python-import=*\n",
                      [f"--python={case.python}", "run.py"], timeout=120)
        judge._record("refused by launcher" if r.returncode == 255
                      else "escaped", f"{label}: status {r.returncode}")
        assert r.returncode == 255, (label, r.returncode, r.stderr[-500:])
        assert f".py-sandboxes({line}): {message}" in r.stderr, (
            label, r.stderr[-500:])
        assert not os.path.exists(marker)


# K60: a rule file that comes with a project names a path through the
# environment: the run exposes what the variable holds there (HOME in
# ${HOME:-x}, the shell's last directory in ${OLDPWD}, '/' for ${A:-/}
# where A is unset), while the review graded the text it saw.
K60_LINES = ("expose-rw=${HOME:-x}", "expose-rw=${OLDPWD}",
             "expose-rw=${PYSB_K60_UNSET:-~}", "expose-rw=${HOME:-x}/sub/..")


@attack("K60", "a shipped rule file exposes a path the environment decides "
        "(${HOME:-x}, ${OLDPWD}): the review graded it as a narrow path")
def test_K60(case, judge):
    """What each line grants in the run, and how the review grades it.
    The run: with HOME and OLDPWD pointing at a directory of the user's
    (here a fresh one), each line lets the program write there. The
    review (`--pysandboxes-review OLD NEW`, the project's rule file
    before and after) graded them 'medium: write access to files', as
    './out'; each must be 'high' now, whatever the reviewer's own
    environment holds."""
    # in the case's tree (nobody's in the nobody columns), which the
    # rules do not expose otherwise
    case.mkdir("home/sub")
    home = pathlib.Path(case.path("home"))
    env = dict(os.environ, HOME=str(home), OLDPWD=str(home))
    env.pop("PYSB_K60_UNSET", None)
    # the program is given the directory (HOME is not passed into it)
    case.write("run.py", "import os, sys\n"
               "open(os.path.join(sys.argv[1], sys.argv[2]), 'w')"
               ".write('x')\n")
    written = []
    for i, line in enumerate(K60_LINES):
        marker = f"k60-{i}"
        r = case._run(f"python-import=*\n{line}\n",
                  [f"--python={case.python}", "run.py", home, marker],
                  env=env)
        written.append((os.path.exists(home / marker), r.stderr[-300:]))
    # the rules grant the home directory in the run: the grade matters
    assert all(w for w, _ in written), (written, K60_LINES)
    old = case.write("old.py-sandboxes", "python-import=json\n")
    grades = {}
    for line in K60_LINES:
        new = case.write("new.py-sandboxes", f"python-import=json\n{line}\n")
        r = subprocess.run([case.sb, "--pysandboxes-review", old, new],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, HOME="/nonexistent-k60"))
        row = [ln for ln in r.stdout.splitlines() if f"`{line}`" in ln]
        assert len(row) == 1, (line, r.stdout, r.stderr)
        grades[line] = row[0].split("|")[1].strip()
    low = {k: v for k, v in grades.items() if v != "high"}
    judge._record("escaped" if low else "refused by launcher",
                  f"grades {grades}")
    assert not low, grades


@attack("K61", "the rule file (or an include) belongs to another user, or "
        "every user may write it: its owner rewrites the rules after review")
def test_K61(case, judge):
    """A project checked out by another user, a rule file in a shared
    directory: its owner (or, for a world-writable one, anyone) could
    rewrite it between the review and the run, or at any run, and the
    program would run with the rights of the user who runs python-sb
    under rules that user never saw (git refuses such repositories for
    the same reason). python-sb read such files as its own. Now a rule
    file or include owned by another user than the one running (root's
    are everyone's) or writable by every user is refused: status 255,
    a message naming the file, nothing run. Judged from outside: the
    marker a run would write, through a grant only the file gives."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    # as root: a file of nobody's; as nobody: a file of daemon's (uid 1)
    me, other = (65534, 1) if case.nobody else (0, 65534)

    def run():
        argv = [case.sb, f"--python={case.python}", "run.py"]
        return subprocess.run(as_nobody(argv) if case.nobody else argv,
                              cwd=case.root, capture_output=True,
                              text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
    out = case.path("out")
    os.makedirs(out, exist_ok=True)
    os.chown(out, me, me)
    case.write("run.py", f"open({os.path.join(out, 'ran')!r}, 'w')"
               ".write('x')\n")
    marker = os.path.join(out, "ran")
    case.write("inc.rules", f"expose-rw={out}\n")
    outcomes = {}
    cases = [
        ("root file of another user", f"expose-rw={out}\n",
         ".py-sandboxes", other, other, 0o644, False),
        ("include of another user", 'include "inc.rules"\n',
         "inc.rules", other, other, 0o644, False),
        ("world-writable root file", f"expose-rw={out}\n",
         ".py-sandboxes", me, me, 0o666, False),
        ("world-writable include", 'include "inc.rules"\n',
         "inc.rules", me, me, 0o666, False),
        # daemon's group (gid 1): its user may write the file
        ("group-writable root file", f"expose-rw={out}\n",
         ".py-sandboxes", me, 1, 0o664, False),
        ("group-writable include", 'include "inc.rules"\n',
         "inc.rules", me, 1, 0o664, False)]
    if not case.nobody:
        # root's own group, but an ACL lets nobody write the file
        cases.append(("ACL naming another user", f"expose-rw={out}\n",
                      ".py-sandboxes", me, me, 0o664, True))
    for label, head, target, owner, group, mode, acl in cases:
        if os.path.exists(marker):
            os.unlink(marker)
        if case.nobody:
            chown_tree(case.root)
        os.chown(case.path("inc.rules"), me, me)
        os.chmod(case.path("inc.rules"), 0o644)
        body = (head + "python-import=*\n").strip("\n")
        os.unlink(case.path(".py-sandboxes")) \
            if os.path.exists(case.path(".py-sandboxes")) else None
        case.write(".py-sandboxes", body + "\n" + case.tail())
        os.chown(case.path(target), owner, group)
        os.chmod(case.path(target), mode)
        if acl:
            set_acl_write(case.path(target), 65534)
        r = run()
        outcomes[label] = (r.returncode, os.path.exists(marker),
                           r.stderr[-400:])
    escaped = {k: v for k, v in outcomes.items()
               if v[0] != 255 or v[1]}
    judge._record("escaped" if escaped else "refused by launcher",
                  repr(outcomes))
    assert not escaped, outcomes
    assert f"belongs to uid {other}, not to uid {me}" in \
        outcomes["root file of another user"][2], outcomes
    assert f'include "inc.rules": it belongs to uid {other}' in \
        outcomes["include of another user"][2], outcomes
    assert "every user may write it" in \
        outcomes["world-writable include"][2], outcomes
    assert 'include "inc.rules": the members of its group (gid 1)' in \
        outcomes["group-writable include"][2], outcomes
    if not case.nobody:
        assert "an ACL lets other users write it" in \
            outcomes["ACL naming another user"][2], outcomes
    # the same files, the user's own and not world-writable: they run
    os.unlink(case.path(".py-sandboxes"))
    case.write(".py-sandboxes", 'include "inc.rules"\npython-import=*\n' +
               case.tail())
    if case.nobody:
        chown_tree(case.root)
    os.chown(case.path("inc.rules"), me, me)
    # root's group is root's alone: umask 002's group-writable file runs
    # (nobody's, nogroup, is also _apt's: refused above)
    os.chmod(case.path("inc.rules"), 0o644 if case.nobody else 0o664)
    r = run()
    assert r.returncode == 0 and os.path.exists(marker), r.stderr[-500:]


@attack("K67", "the directory above the rule file lets another user "
        "remove it: the next run learns, with every right")
def test_K67(case, judge):
    """The rule file is the user's own and no one else may write it, but
    its directory is world-writable (a shared /srv/project, a container's
    0777 volume), another user's, or writable by a group with other
    members: any of them could remove the file or rename another over it,
    and a missing rule file makes the next run a learning run, in which
    the program may do anything. python-sb judged the file and not its
    directories. Now every directory from the rule file's up to / must be
    the user's or root's and writable by no one else unless sticky
    (ssh's rule for authorized_keys): status 255 otherwise, whether the
    file is there or was removed. Judged from outside: the other user's
    marker the learning run would write."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    me, other = (65534, 1) if case.nobody else (0, 65534)
    proj = case.path("proj")
    out = case.path("out")
    for d in (proj, out):
        os.makedirs(d, exist_ok=True)
        os.chown(d, me, me)
    marker = os.path.join(out, "ran")
    case.write("proj/run.py", f"open({marker!r}, 'w').write('x')\n")
    rules = case.path("proj/.py-sandboxes")

    def as_user(uid, argv):
        return ["setpriv", f"--reuid={uid}", f"--regid={uid}",
                "--clear-groups"] + argv

    def run():
        argv = [case.sb, f"--python={case.python}", "run.py"]
        return subprocess.run(as_user(me, argv) if me else argv, cwd=proj,
                              capture_output=True, text=True,
                              timeout=scaled(120), stdin=subprocess.DEVNULL)

    outcomes = {}
    cases = [  # label, directory's owner, group, mode, removed by other
        ("world-writable directory, file removed", me, me, 0o777, True),
        ("world-writable directory", me, me, 0o777, False),
        ("directory of another user", other, other, 0o755, False),
        ("directory of a shared group", me, 1, 0o775, False)]
    for label, owner, group, mode, remove in cases:
        if os.path.exists(marker):
            os.unlink(marker)
        if os.path.exists(rules):
            os.unlink(rules)
        case.write("proj/.py-sandboxes", "python-import=*\n" + case.tail())
        if case.nobody:
            chown_tree(case.root)
        os.chown(rules, me, me)
        os.chmod(rules, 0o644)
        os.chown(proj, owner, group)
        os.chmod(proj, mode)
        if remove:
            # what the directory's mode lets any user do (the test's own
            # tree is not searchable by them: the test does it for them)
            os.unlink(rules)
        r = run()
        outcomes[label] = (r.returncode, os.path.exists(marker),
                           r.stderr[-400:])
    escaped = {k: v for k, v in outcomes.items() if v[0] != 255 or v[1]}
    judge._record("escaped" if escaped else "refused by launcher",
                  repr(outcomes))
    assert not escaped, outcomes
    assert "every user may write it, so any of them could replace or " \
        "remove the rule file" in outcomes["world-writable directory"][2], \
        outcomes
    assert "every user may write it" in \
        outcomes["world-writable directory, file removed"][2], outcomes
    assert "it belongs to another user" in \
        outcomes["directory of another user"][2], outcomes
    assert "users of its group may write it" in \
        outcomes["directory of a shared group"][2], outcomes
    # a sticky bit keeps others to their own entries: the run is the
    # rules' (they grant nothing outside: the marker stays unwritten)
    os.chmod(proj, 0o1777)
    os.chown(proj, me, me)
    r = run()
    assert r.returncode != 255, r.stderr[-500:]
    assert "could be changed by users other than" not in r.stderr
    assert not os.path.exists(marker), r.stderr[-500:]


def set_acl_write(path, uid):
    """An access ACL that lets uid write path (setfacl -m u:uid:rw, in the
    kernel's xattr form: version 2, then tag, permissions, id)."""
    import struct
    entries = [(0x01, 6, 0xFFFFFFFF), (0x02, 6, uid), (0x04, 4, 0xFFFFFFFF),
               (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)]
    blob = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, "system.posix_acl_access", blob)


# K62: a shipped rule file whose values (not paths) come from the
# environment: the review had no environment and graded the text.
K62_LINES = ("python-import=${PYSB_K62}", "python-import=json, ${PYSB_K62}",
             "net=${PYSB_K62}", "os-sandbox=${PYSB_K62:-landlock}",
             "py-sandbox=${PYSB_K62}", "python-api=ALLOW:${PYSB_K62}")


@attack("K62", "a shipped rule file takes a grant from the environment "
        "(python-import=${X}): the review graded it 'invalid'")
def test_K62(case, judge):
    """`python-import=${X}` is no module name in the review's flat parse,
    so the review graded it (and net=${X}, os-sandbox=${X:-landlock},
    py-sandbox=${X}) 'invalid', as what the enforcer refuses; the run
    accepts what X holds there: with X="*" the program imports smtplib.
    Each such line is graded high now. Judged from outside: the marker
    the program writes after importing smtplib, and the review's grades."""
    out = case.path("out")
    os.makedirs(out, exist_ok=True)
    marker = os.path.join(out, "imported")
    case.write("run.py", "import smtplib\n"
               f"open({marker!r}, 'w').write('x')\n")
    r = case._run(f"python-import=${{PYSB_K62}}\nexpose-rw={out}\n",
                  [f"--python={case.python}", "run.py"],
                  env=dict(os.environ, PYSB_K62="*"))
    # the grant the line gives in the run: every module
    assert os.path.exists(marker), r.stderr[-500:]
    old = case.write("old.py-sandboxes", "python-import=json\n")
    grades = {}
    for line in K62_LINES:
        new = case.write("new.py-sandboxes", f"python-import=json\n{line}\n")
        r = subprocess.run([case.sb, "--pysandboxes-review", old, new],
                           capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items()
                                if k != "PYSB_K62"})
        row = [ln for ln in r.stdout.splitlines() if f"`{line}`" in ln]
        assert len(row) == 1, (line, r.stdout, r.stderr)
        grades[line] = row[0].split("|")[1].strip()
    low = {k: v for k, v in grades.items() if v != "high"}
    judge._record("escaped" if low else "refused by launcher",
                  f"grades {grades}")
    assert not low, grades


@attack("K63", "net= with a CIDR prefix out of range (/33, /-1, 2^32+32, "
        "::/129): a wrapped prefix would allow a whole network")
def test_K63(case, judge, tcp_port):
    """A prefix read into a 32-bit integer would wrap (4294967328 is
    2^32 + 32), /-1 or /33 could mean /0: the rule would allow every
    address. The parser takes none of them as a prefix: such a network
    is no address, and as a host name it resolves to nothing, so the
    ALLOW rule allows nothing (a warning names its line; a DENY rule of
    that shape is an error). Proved harmless from outside: the pong
    server on 127.0.0.1 that the rules name is not reached."""
    from test_e_network import ERR, implicit, probes
    p = tcp_port
    rules = ("python-import=*\n" + "".join(
        f"net=ALLOW|TCP|{net}|{p}|OUT\n"
        for net in ("127.0.0.0/33", "127.0.0.1/-1", "127.0.0.1/4294967328",
                    "127.0.0.1/4294967296", "0.0.0.0/0x0",
                    "::ffff:127.0.0.1/129", "::/4294967296")))
    out = case.run(rules, probes({
        "connect": "s = socket.create_connection(('127.0.0.1', P), 60)\n"
                   "s.sendall(b'ping')\nreturn s.recv(4)",
    }), args=[p])
    judge.python(out["connect"], ERR, implicit("127.0.0.1", p))


@attack("K64", "an include that is a FIFO or a device: python-sb opened it "
        "before it saw it was no file (a FIFO's writer woke up)")
def test_K64(case, judge):
    """A rule file names `include "f.fifo"` (or a device): python-sb
    opened it, O_NONBLOCK, and only then refused what was no regular
    file. Opening is an act: a FIFO's writer, blocked in its open(),
    woke up and wrote; a device's open() runs its driver (a tape
    rewinds, a watchdog arms). The path is judged by lstat() now and
    only a regular file is opened (O_NOFOLLOW, the same inode). Judged
    from outside: the marker a writer blocked on the FIFO writes once
    its open() returns."""
    import sys
    import time
    fifo = case.path("f.fifo")
    os.mkfifo(fifo)
    marker = case.path("writer-woke")
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys\nfd = os.open(sys.argv[1], os.O_WRONLY)\n"
         "open(sys.argv[2], 'w').close()\n", fifo, marker])
    try:
        # the writer must be blocked in its open() before python-sb runs
        deadline = time.monotonic() + scaled(30)
        while time.monotonic() < deadline:
            with open(f"/proc/{writer.pid}/wchan") as f:
                if f.read() == "wait_for_partner":
                    break
            time.sleep(0.02)
        else:
            pytest.fail("the FIFO's writer never blocked in open()")
        case.write("run.py", "print('ran')\n")
        r = case._run('include "f.fifo"\ninclude "/dev/zero"\n'
                      'python-import=*\n',
                      [f"--python={case.python}", "run.py"], timeout=120)
        # a writer woken by python-sb's open() writes at once; give it
        # time to be scheduled on a loaded machine
        deadline = time.monotonic() + scaled(1.0)
        while time.monotonic() < deadline and not os.path.exists(marker):
            time.sleep(0.05)
        woke = os.path.exists(marker)
    finally:
        writer.kill()
        writer.wait()
    judge._record("escaped" if woke else "refused by launcher",
                  f"status {r.returncode}, writer woke: {woke}")
    assert r.returncode == 255, (r.returncode, r.stderr[-500:])
    assert 'include "f.fifo": it is not a regular file' in r.stderr, \
        r.stderr[-500:]
    assert 'include "/dev/zero": it is not a regular file' in r.stderr, \
        r.stderr[-500:]
    assert "ran" not in r.stdout
    assert not woke, "python-sb opened the FIFO"


@attack("K65", "a shipped rule file includes a secret of the user's "
        "(~/.ssh key, a .env): python-sb printed its lines in errors")
def test_K65(case, judge):
    """A rule file may include any file its reader can read, and each
    invalid line was quoted in the error python-sb prints ("Invalid rule
    'AWS_SECRET=...'"): a project's rule file could have a CI run print
    the user's keys into its public log. A line of an include that lies
    outside the rule file's directory is named, not quoted, now. Judged
    from outside: what python-sb printed (and nothing ran)."""
    import shutil
    import tempfile
    # outside the project, readable by the column's user
    d = pathlib.Path(tempfile.mkdtemp(prefix="pysb-k65-"))
    os.chmod(d, 0o755)
    secret = d / "id_key"
    secret.write_text("SECRET-K65-LINE token=abc\nexpose-rw=SECRET-K65-2\n")
    os.chmod(secret, 0o644)
    marker = case.path("ran")
    case.write("run.py", f"open({marker!r}, 'w').close()\n")
    case.write("sub/ok.rules", "bogus-inside-K65\n")
    try:
        r = case._run(f'include "{secret}"\ninclude "sub/ok.rules"\n'
                      'python-import=*\n',
                      [f"--python={case.python}", "run.py"], timeout=120)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    leaked = "SECRET-K65" in r.stderr + r.stdout
    judge._record("escaped" if leaked else "refused by launcher",
                  f"status {r.returncode}: {r.stderr[-300:]!r}")
    assert r.returncode == 255, (r.returncode, r.stderr[-500:])
    assert not leaked, r.stderr[-800:]
    assert (f"{secret}(1): this line is not a valid rule; its text is not "
            "shown" in r.stderr), r.stderr[-800:]
    # an include inside the project is quoted as before
    assert "bogus-inside-K65" in r.stderr, r.stderr[-800:]
    assert not os.path.exists(marker)


@attack("K66", "rules that look narrow and grant wide: ${X} holding a "
        "newline or a comma, a lookalike key, a NUL")
def test_K66(case, judge):
    """A variable whose value is a newline then a rule, or a comma list,
    must stay one value (not two rules, not two paths); a key spelt with
    a Unicode hyphen is no rule; a NUL ends nothing silently. Each is
    refused naming the line (status 255) and nothing runs: proved
    harmless from outside by the marker the program would write and the
    file it would write under '/' had a second rule been applied."""
    marker = case.path("ran")
    case.write("run.py", f"open({marker!r}, 'w').close()\n")
    cases = (
        ("expose-ro=${PYSB_K66}", "/tmp\nexpose-rw=/",
         "must exist."),
        ("expose-ro=${PYSB_K66}", "/tmp,/",
         "expected a single path (no comma)."),
        ("expose\u2010rw=/", None, "Invalid rule 'expose\u2010rw=/'"),
        ("expose-rw=/\0", None, "the line holds a NUL byte"),
    )
    seen = {}
    for line, value, message in cases:
        env = dict(os.environ)
        env.pop("PYSB_K66", None)
        if value is not None:
            env["PYSB_K66"] = value
        r = case._run(f"{line}\npython-import=*\n",
                      [f"--python={case.python}", "run.py"], env=env)
        seen[line + repr(value)] = (r.returncode, os.path.exists(marker))
        assert r.returncode == 255, (line, r.returncode, r.stderr[-400:])
        assert ".py-sandboxes(1): " in r.stderr and message in r.stderr, \
            (line, r.stderr[-400:])
        assert not os.path.exists(marker), line
    judge._record("refused by launcher", repr(seen))
