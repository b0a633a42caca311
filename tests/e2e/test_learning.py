"""Learning mode end to end (seed-spec 4, issue 4): a run without a rule
file watches the program and writes a reviewable policy; the next run
enforces it with no refusal, and refuses what the program did not do.
The real programs of the issue round-trip: learned, enforced, misbehaving.
"""
import http.server
import os
import pathlib
import re
import signal
import socket
import subprocess
import textwrap
import threading
import time

import pytest

from conftest import pyenv_minor, scaled

PY311 = pyenv_minor("3.11")


@pytest.fixture
def py():
    if not os.path.exists(PY311):
        pytest.skip("pyenv has no CPython 3.11 [core]")
    return PY311


def learn_then_enforce(run_sb, tmp_cwd, py, args, env=None, check=True):
    """Learn with `args`, then run the same command enforcing."""
    first = run_sb([f"--python={py}", *args], env=env)
    assert first.returncode == 0, first.stderr
    assert "Write all learning rules in '.py-sandboxes'." in first.stderr
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    second = run_sb([f"--python={py}", *args], env=env)
    if check:
        assert second.returncode == 0, (rules, second.stderr)
    return first, second, rules


def active(rules):
    """The rule lines (no comments, no blanks)."""
    return [ln for ln in rules.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def test_first_run_learns_and_second_run_enforces(run_sb, tmp_cwd, py):
    (tmp_cwd / "data").mkdir()
    (tmp_cwd / "data" / "in.txt").write_text("hello\n")
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import os, json
        print(open("data/in.txt").read().strip())
        with open("data/out.txt", "w") as f:
            f.write(json.dumps({"key": os.environ.get("DEMO_KEY")}))
        """))
    env = dict(os.environ, DEMO_KEY="sk-123")
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"], env)
    assert first.stdout == second.stdout == "hello\n"
    lines = active(rules)
    assert "env=DEMO_KEY=${DEMO_KEY}" in lines
    assert "expose-rw=./data" in lines
    assert any(ln.startswith("python-import=") and "json" in ln
               for ln in lines)
    # the template's markers frame the learned blocks
    for x in ("envs", "files", "socket", "import", "api", "eval"):
        assert f"# <learning_guard_{x}>" in rules
        assert f"# </learning_guard_{x}>" in rules
    assert re.search(r"# Add rules \(\d{4}/\d\d/\d\d at \d\d:\d\d\)", rules)
    assert "sk-123" not in rules  # the value never lands in the file
    # the same program misbehaving is refused
    (tmp_cwd / "evil.py").write_text(textwrap.dedent("""\
        import os
        for f in (lambda: open("/etc/passwd"), lambda: os.system("id")):
            try:
                f()
                print("ALLOWED")
            except Exception as e:
                print(type(e).__name__)
        """))
    r = run_sb([f"--python={py}", "--pysandboxes-config=.py-sandboxes",
                "evil.py"])
    # evil.py itself is not exposed (only app.py's tree was learned)...
    assert r.returncode != 0 or "ALLOWED" not in r.stdout


def test_least_privilege_file_rules(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text(
        "open('/etc/resolv.conf').read()\nopen('/etc/hostname').read()\n")
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    lines = active(rules)
    assert "expose-ro=/etc/resolv.conf" in lines
    assert "expose-ro=/etc/hostname" in lines
    assert "expose-ro=/etc" not in lines
    # /etc/shadow stays out of reach
    (tmp_cwd / "app.py").write_text(
        "try:\n    open('/etc/passwd')\nexcept Exception as e:\n"
        "    print(type(e).__name__)\n")
    r = run_sb([f"--python={py}", "app.py"])
    assert r.stdout == "RuleFileNotFoundError\n", r.stderr


def test_a_second_run_adds_only_what_is_new(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text("import json\n")
    assert run_sb([f"--python={py}", "app.py"]).returncode == 0
    before = (tmp_cwd / ".py-sandboxes").read_text()
    (tmp_cwd / "app.py").write_text("import json, csv\n")
    r = run_sb([f"--python={py}", "--learn", "app.py"])
    assert r.returncode == 0, r.stderr
    after = (tmp_cwd / ".py-sandboxes").read_text()
    assert after.startswith(before.split("# </learning_guard_envs>")[0])
    assert after.count("# Add rules") > before.count("# Add rules")
    assert "csv" in after and "csv" not in before
    assert (tmp_cwd / ".py-sandboxes.old").read_text() == before
    assert "The old version is here '" in r.stderr
    # nothing new: the file is left alone
    mtime = (tmp_cwd / ".py-sandboxes").stat().st_mtime_ns
    r = run_sb([f"--python={py}", "--learn", "app.py"])
    assert r.returncode == 0
    assert (tmp_cwd / ".py-sandboxes").stat().st_mtime_ns == mtime
    assert not (tmp_cwd / ".py-sandboxes.old_1").exists()


def test_api_and_dynamic_code_are_learned(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text(
        "import os, threading\nos.system('true')\n"
        "t = threading.Thread(target=print)\nt.start(); t.join()\n")
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    lines = active(rules)
    assert "python-api=ALLOW:os.system" in lines or \
        "python-api=ALLOW:process-exec" in lines
    assert any(ln.startswith("python-api=ALLOW:") and "thread" in ln
               for ln in lines)


def test_records_survive_a_hard_exit(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text(
        "import os, csv\nos.environ.get('HOME')\nos._exit(3)\n")
    r = run_sb([f"--python={py}", "app.py"])
    assert r.returncode == 3
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    assert "csv" in rules and "env=HOME=${HOME}" in rules


def test_a_killed_program_keeps_its_rules(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text(
        "import os, csv, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    r = run_sb([f"--python={py}", "app.py"])
    assert r.returncode == 128 + signal.SIGKILL
    assert "csv" in (tmp_cwd / ".py-sandboxes").read_text()


def test_an_unwritable_rule_file_prints_the_rules(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text("import csv\n")
    target = tmp_cwd / "ro" / "rules"
    (tmp_cwd / "ro").mkdir()
    (tmp_cwd / "ro").chmod(0o555)
    if os.geteuid() == 0:
        # root writes anyway: use a path whose parent is a file instead
        target = tmp_cwd / "app.py" / "rules"
        r = run_sb([f"--python={py}", f"--learn={tmp_cwd}/app.py/x",
                    "app.py"])
        assert r.returncode == 255
        return
    r = run_sb([f"--python={py}", f"--learn={target}", "app.py"])
    assert r.returncode == 255
    assert "the learned rules were NOT saved" in r.stderr
    assert "python-import=csv" in r.stderr


def test_a_policy_with_errors_is_not_overwritten(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text("import csv\n")
    (tmp_cwd / "learned").write_text("this is not a rule\n")
    r = run_sb([f"--python={py}", "--learn=learned", "app.py"])
    assert r.returncode == 255
    assert (tmp_cwd / "learned").read_text() == "this is not a rule\n"
    assert "has errors" in r.stderr


def test_two_learning_runs_at_once_lose_nothing(sb, tmp_cwd, py):
    (tmp_cwd / "a.py").write_text("import csv, time\ntime.sleep(0.3)\n")
    (tmp_cwd / "b.py").write_text("import json, time\ntime.sleep(0.3)\n")
    procs = [subprocess.Popen([sb, f"--python={py}", "--learn", f],
                              cwd=tmp_cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for f in ("a.py", "b.py")]
    for p in procs:
        p.communicate(timeout=scaled(60))
        assert p.returncode == 0
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    assert "csv" in rules and "json" in rules


def serve(directory):
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(  # noqa
        *a, directory=str(directory), **k)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_round_trip_json_tool(run_sb, tmp_cwd, py):
    (tmp_cwd / "in.json").write_text('{"b": 1, "a": [1, 2]}')
    first, second, rules = learn_then_enforce(
        run_sb, tmp_cwd, py, ["-m", "json.tool", "in.json"])
    assert '"a": [' in second.stdout
    # misbehaving: another file, outside what was learned
    r = run_sb([f"--python={py}", "-m", "json.tool", "/etc/passwd"])
    assert r.returncode != 0
    assert "must be accepted by a rule" in r.stderr


def test_round_trip_urllib_client(run_sb, tmp_cwd, py, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<title>hi</title>")
    httpd = serve(site)
    port = httpd.server_address[1]
    try:
        (tmp_cwd / "app.py").write_text(textwrap.dedent(f"""\
            import urllib.request, sys
            url = sys.argv[1] if len(sys.argv) > 1 else \\
                "http://localhost:{port}/"
            print(urllib.request.urlopen(url, timeout=5).read().decode())
            """))
        first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                                  ["app.py"])
        assert second.stdout == "<title>hi</title>\n"
        assert f"net=ALLOW|TCP|localhost|{port}|OUT" in active(rules)
        other = serve(site)
        try:
            r = run_sb([f"--python={py}", "app.py",
                        f"http://127.0.0.1:{other.server_address[1]}/"])
            assert r.returncode != 0
            assert "DENIED" in r.stderr
        finally:
            other.shutdown()
    finally:
        httpd.shutdown()


def test_round_trip_sqlite3(run_sb, tmp_cwd, py):
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import sqlite3, sys
        db = sqlite3.connect(sys.argv[1] if len(sys.argv) > 1 else "db/x.db")
        db.execute("create table if not exists t (v)")
        db.execute("insert into t values (1)")
        db.commit()
        print(db.execute("select count(*) from t").fetchone()[0] > 0)
        """))
    (tmp_cwd / "db").mkdir()
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    assert second.stdout == "True\n"
    r = run_sb([f"--python={py}", "app.py", "/tmp/elsewhere.db"])
    assert r.returncode != 0


def test_round_trip_csv_and_email(run_sb, tmp_cwd, py):
    (tmp_cwd / "in.csv").write_text("a,b\n1,2\n")
    (tmp_cwd / "mail.eml").write_text("Subject: hi\nFrom: a@b\n\nbody\n")
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import csv, email
        print(list(csv.reader(open("in.csv"))))
        print(email.message_from_file(open("mail.eml"))["Subject"])
        """))
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    assert second.stdout == "[['a', 'b'], ['1', '2']]\nhi\n"
    # misbehaving: a parser fed a file it was never given
    (tmp_cwd / "app.py").write_text(
        "import csv\nprint(list(csv.reader(open('/etc/passwd'))))\n")
    r = run_sb([f"--python={py}", "app.py"])
    assert r.returncode != 0
    assert "Access to '/etc/passwd' must be accepted by a rule." in r.stderr


def test_round_trip_sympy_and_requests(run_sb, tmp_cwd, py, tmp_path):
    check = subprocess.run([py, "-c", "import sympy, requests"],
                           capture_output=True)
    if check.returncode:
        pytest.skip("sympy or requests not installed for pyenv's 3.11")
    site = tmp_path / "site"
    site.mkdir()
    (site / "x").write_text("ok")
    httpd = serve(site)
    try:
        (tmp_cwd / "app.py").write_text(textwrap.dedent(f"""\
            import sympy, requests
            x = sympy.Symbol("x")
            print(sympy.integrate(x**2, x))
            print(requests.get("http://127.0.0.1:{httpd.server_address[1]}/x",
                               timeout=5).text)
            """))
        first, second, rules = learn_then_enforce(
            run_sb, tmp_cwd, py, ["app.py"])
        assert second.stdout == "x**3/3\nok\n"
        assert "RequestsDependencyWarning" not in second.stderr
        # misbehaving: the same libraries, another server, a shell
        other = serve(site)
        (tmp_cwd / "app.py").write_text(textwrap.dedent(f"""\
            import requests
            try:
                requests.get("http://127.0.0.1:{other.server_address[1]}/x",
                             timeout=5)
                print("ALLOWED")
            except Exception as e:
                print("REFUSED")
            __import__("os").system("id")
            """))
        try:
            r = run_sb([f"--python={py}", "app.py"])
            assert r.stdout == "REFUSED\n", r.stderr
            assert "RuleModuleNotFoundError: Module named 'os'" in \
                r.stderr
        finally:
            other.shutdown()
    finally:
        httpd.shutdown()


def test_round_trip_ipython(run_sb, tmp_cwd, py):
    check = subprocess.run([py, "-c", "import IPython"], capture_output=True)
    if check.returncode:
        pytest.skip("IPython not installed for pyenv's 3.11")
    env = dict(os.environ, IPYTHONDIR=str(tmp_cwd / "ipy"))
    first, second, rules = learn_then_enforce(
        run_sb, tmp_cwd, py, ["-m", "IPython", "-c", "print(6*7)"], env=env)
    assert "42" in second.stdout
    # IPython compiles its cells through codeop, which runs what it is
    # handed: a cell is the program's dynamic code, learned as the eval-*
    # rules it needs, so another cell is judged by the eval guard (its
    # import refused there) or, past it, by the API guard
    r = run_sb([f"--python={py}", "-m", "IPython", "-c",
                "import subprocess; subprocess.run(['id'])"], env=env)
    assert re.search(r"Rule\w+Error|EvalSyntaxRejected",
                     r.stdout + r.stderr), r.stdout
    assert "uid=" not in r.stdout


def wait_port(port_file):
    """The port a server under test wrote to port_file, once it is there
    (a time limit scaled to the machine's load)."""
    deadline = time.monotonic() + scaled(10)
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text():
            break
        time.sleep(0.1)
    return int(port_file.read_text())


def test_killing_python_sb_ends_the_learning_run(sb, tmp_cwd, py):
    """A learning run whose python-sb is SIGKILLed ends too, as an
    enforced one does: its program is not left running without the
    supervisor that answers its notified calls."""
    (tmp_cwd / "w.py").write_text(
        "import os, time\nprint(os.getpid(), flush=True)\n"
        "time.sleep(600)\n")
    p = subprocess.Popen([sb, f"--python={py}", "--learn", "w.py"],
                         cwd=tmp_cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    child = int(p.stdout.readline())
    assert child != p.pid
    p.kill()
    p.wait(timeout=scaled(10))
    deadline = time.monotonic() + scaled(5)
    while time.monotonic() < deadline:
        try:
            state = open(f"/proc/{child}/stat").read().rsplit(")", 1)[1]
        except OSError:
            return
        if state.split()[0] == "Z":
            return
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)  # not left for later tests
    pytest.fail("the learning program outlived python-sb")


def test_a_server_is_learned_with_ctrl_c(sb, tmp_cwd, py, tmp_path):
    port_file = tmp_path / "port"
    (tmp_cwd / "www").mkdir()
    (tmp_cwd / "www" / "i.html").write_text("x")
    (tmp_cwd / "srv.py").write_text(textwrap.dedent(f"""\
        import http.server, functools
        h = functools.partial(http.server.SimpleHTTPRequestHandler,
                              directory="www")
        s = http.server.HTTPServer(("127.0.0.1", 0), h)
        open({str(port_file)!r}, "w").write(str(s.server_address[1]))
        s.serve_forever()
        """))
    p = subprocess.Popen([sb, f"--python={py}", "srv.py"], cwd=tmp_cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        port = wait_port(port_file)
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"GET /i.html HTTP/1.0\r\n\r\n")
            # the whole answer, to its end: a client gone before it made
            # the handler fail while the SIGINT came (a flaky hang)
            while c.recv(4096):
                pass
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=scaled(30))
    finally:  # a failure must not leave the server for later tests
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert "Write all learning rules in '.py-sandboxes'." in err
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    assert "expose-ro=./www" in active(rules)
    assert re.search(r"^net=ALLOW\|TCP\|127\.0\.0\.1(/32)?\|\d+\|IN$", rules,
                     re.M), rules
    # misbehaving: the server serves a tree it was not learned with
    (tmp_cwd / "srv.py").write_text(
        (tmp_cwd / "srv.py").read_text().replace('directory="www"',
                                                 'directory="/etc"'))
    port_file.unlink()
    p = subprocess.Popen([sb, f"--python={py}", "srv.py"], cwd=tmp_cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        port = wait_port(port_file)
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"GET /passwd HTTP/1.0\r\n\r\n")
            reply = c.recv(200).decode(errors="replace")
        assert reply.startswith("HTTP/1.0 404"), reply
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.communicate(timeout=scaled(30))
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()


COPIES = {
    "dict": "dict(os.environ)",
    "copy": "os.environ.copy()",
    "iterate": "[k for k in os.environ]",
    "iterate_read": "{k: os.environ[k] for k in os.environ}",
    "star": "(lambda **kw: kw)(**os.environ)",
    "items": "list(os.environ.items())",
    "values": "list(os.environ.values())",
    "keys": "list(os.environ.keys())",
    "child": "subprocess.run(['/bin/true'])",
}


@pytest.mark.parametrize("how", list(COPIES), ids=list(COPIES))
@pytest.mark.parametrize("interp", ["py311", "py39", "py313"])
def test_learning_a_copy_of_the_environment_records_nothing(
        run_sb, tmp_cwd, how, interp):
    """Issue 14 item 3 (seed-spec 4.3): a full scan of os.environ is not a
    use. A secret in the host environment gets no env= rule."""
    path = {"py311": PY311,
            "py39": pyenv_minor("3.9"),
            "py313": pyenv_minor("3.13")}[interp]
    if not os.path.exists(path):
        pytest.skip(f"{path} is not installed")
    (tmp_cwd / "app.py").write_text(
        f"import os, subprocess\nx = {COPIES[how]}\n")
    env = dict(os.environ, PYSB_SECRET_TOKEN="sk-456")
    r = run_sb([f"--python={path}", "app.py"], env=env)
    assert r.returncode == 0, r.stderr
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    assert "PYSB_SECRET_TOKEN" not in rules
    assert not [ln for ln in active(rules) if ln.startswith("env=")], rules


READS = {
    "subscript": "os.environ['PYSB_READ_ME']",
    "get": "os.environ.get('PYSB_READ_ME')",
    "getenv": "os.getenv('PYSB_READ_ME')",
    "contains": "'PYSB_READ_ME' in os.environ",
    # a read after a scan is still a read
    "after_scan": "dict(os.environ); os.environ['PYSB_READ_ME']",
}


@pytest.mark.parametrize("how", list(READS), ids=list(READS))
def test_learning_an_explicit_read_records_that_variable(run_sb, tmp_cwd, py,
                                                         how):
    (tmp_cwd / "app.py").write_text(f"import os\n{READS[how]}\n")
    env = dict(os.environ, PYSB_READ_ME="1", PYSB_OTHER="2")
    r = run_sb([f"--python={py}", "app.py"], env=env)
    assert r.returncode == 0, r.stderr
    envs = [ln for ln in active((tmp_cwd / ".py-sandboxes").read_text())
            if ln.startswith("env=")]
    assert envs == ["env=PYSB_READ_ME=${PYSB_READ_ME}"]


def test_an_absent_include_in_a_learned_writable_tree_is_turned_off(
        run_sb, tmp_cwd, py, tmp_path):
    """A program that makes an entry in ~/.config learns
    expose-rw=~/.config, which holds the template's absent user profile:
    the enforcing run would refuse that include (the program could create
    it), so learning writes it commented out with a REVIEW note, and the
    second run works the first time (IPython does exactly this)."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import os
        d = os.path.expanduser("~/.config/someapp")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "state"), "w").write("1")
        print("ok")
        """))
    env = dict(os.environ, HOME=str(home), OS_SANDBOX="landlock")
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"], env=env)
    assert "expose-rw=~/.config" in active(rules), rules
    assert ('#include "~/.config/py-sandboxes/user-py-sandboxes.profile"'
            in rules), rules
    assert "# REVIEW: the include below is absent" in rules
    assert second.stdout == "ok\n", second.stderr
    # turned off, not followed: a profile the program plants later is
    # not read
    assert "include \"~/.config" not in "\n".join(active(rules))


def test_an_import_only_tried_is_not_learned(run_sb, tmp_cwd, py):
    """Weakness 20: a module that is only tried and missing gets no rule;
    at enforcement the same try gets an ImportError and goes on."""
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import importlib
        for name in ("msvcrt", "_winapi", "winreg", "no_such_pkg.sub"):
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        try:
            import msvcrt
        except ImportError:
            print("fallback")
        import json
        """))
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    assert first.stdout == second.stdout == "fallback\n"
    imports = [ln for ln in active(rules) if ln.startswith("python-import=")]
    assert any("json" in ln for ln in imports), rules
    for name in ("msvcrt", "_winapi", "winreg", "no_such_pkg"):
        assert not any(name in ln for ln in imports), (name, imports)


def test_an_absent_include_under_a_written_expose_rw_is_turned_off(
        run_sb, tmp_cwd, py):
    """The enforcer refuses an absent include under any expose-rw=, the
    rule file's own too; learning turned it off only under a learned one,
    so the enforcing run after it refused to start."""
    (tmp_cwd / "out").mkdir()
    (tmp_cwd / "app.py").write_text("import colorsys\nprint('ok')\n")
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text('learn=.py-sandboxes\nexpose-rw=./out\n'
                  'include "out/extra.conf"\n')
    r = run_sb([f"--python={py}", "app.py"])
    assert r.returncode == 0, r.stderr
    rules = rf.read_text()
    assert '#include "out/extra.conf"' in rules, rules
    assert 'include "out/extra.conf"' not in active(rules), rules
    rf.write_text(rules.replace("learn=.py-sandboxes\n", ""))
    r = run_sb([f"--python={py}", "app.py"])
    assert r.returncode == 0, (rules, r.stderr)
    assert r.stdout == "ok\n"


def test_a_present_include_next_to_a_rule_file_elsewhere_stays_on(
        run_sb, tmp_cwd, py, tmp_path):
    """A bare-name include sits next to the rule file, not in the working
    directory (2.4). Learning once looked for it in the working directory,
    found it absent under the learned expose-rw=. and commented it out:
    the rules of a file that exists (here an ignore=) were dropped."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "hide.conf").write_text(f"ignore={tmp_cwd}/secret.txt\n")
    rule_file = conf / "app.conf"
    rule_file.write_text(f'learn={rule_file}\ninclude "hide.conf"\n')
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import os
        open("out.tmp", "w").write("x")
        os.remove("out.tmp")
        print("ok")
        """))
    r = run_sb([f"--pysandboxes-config={rule_file}", f"--python={py}",
                "app.py"])
    assert r.returncode == 0, r.stderr
    rules = rule_file.read_text()
    assert "expose-rw=." in active(rules), rules
    assert 'include "hide.conf"' in active(rules), rules
    assert "REVIEW: the include below is absent" not in rules, rules


def test_evaluated_code_is_learned_as_eval_rules(run_sb, tmp_cwd, py):
    """seed 4.3: a source the program evaluates is learned as the
    narrowest eval-* lines it needs, never as a dynamic-code grant; the
    enforcing run evaluates the same sources under the eval guard, and a
    source the learning run never needed is refused."""
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import math, sys
        rows = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
        print(eval("a * 2 + b", {"math": math}, rows[0]))
        print(eval("max(a, b) if a > 1 else -a", {}, rows[1]))
        env = {"math": math}
        exec("t = 0\\nfor i in range(3):\\n    t += i\\n"
             "r = math.sqrt(16) + t", env)
        print(env["r"])
        code = compile("len('abc') + abs(-1)", "<f>", "eval")
        print(eval(code), eval("1"), eval("'x'.upper()"))
        if len(sys.argv) > 1:
            print(eval(sys.argv[1]))
        """))
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    assert first.stdout == second.stdout == "4\n4\n7.0\n4 1 X\n", \
        (first.stdout, second.stdout, second.stderr)
    lines = active(rules)
    assert not any(ln.startswith("python-api=") for ln in lines), rules
    assert "eval-syntax=Assign, AugAssign, Compare, For, IfExp, arith" \
        in lines, rules
    assert "eval-call=abs, len, math, max, range" in lines, rules
    assert any(ln.startswith("eval-attribute=sqrt, upper")
               for ln in lines), rules
    # no warning left: the module the context hands over is acknowledged
    assert "context provides" not in second.stderr, second.stderr
    r = run_sb([f"--python={py}", "app.py", "(1).__class__"])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "EvalSyntaxRejected" in r.stderr, r.stderr
    assert "add: eval-magic=__class__" in r.stderr, r.stderr


def test_a_raw_exec_beside_evaluations_learns_rules_that_load(
        run_sb, tmp_cwd, py):
    """A code object the guard did not compile (a function's __code__)
    needs python-api=ALLOW:builtins.exec, and the policy refuses eval-*
    lines beside that grant (seed 2.6.6): learning wrote both, and the
    enforcing run stopped at its rule file. The eval-* lines are now
    written commented out, and the builtins the evaluations went through
    granted instead."""
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        def f():
            print("body")
        exec(f.__code__)
        print(eval("len('ab')"))
        """))
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"])
    assert first.stdout == second.stdout == "body\n2\n", \
        (first.stdout, second.stdout, second.stderr)
    lines = active(rules)
    assert "python-api=ALLOW:builtins.exec" in lines, rules
    assert "python-api=ALLOW:builtins.eval" in lines, rules
    assert not any(ln.startswith("eval-") for ln in lines), rules
    assert "# eval-call=len" in rules, rules
    assert ("# Not in force: python-api=ALLOW:builtins.exec runs code "
            "strings unguarded") in rules, rules


def test_an_absent_include_under_a_learned_spelled_tree_is_turned_off(
        run_sb, tmp_cwd, py, tmp_path):
    """A home under /tmp and a program that writes a temporary file:
    learning writes expose-rw=${TMPDIR:-/tmp}, which holds the absent
    user profile. The check read the learned value as a relative path,
    kept the include, and the enforcing run refused to start."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import os, tempfile
        fd, path = tempfile.mkstemp()
        os.write(fd, b"abc"); os.close(fd)
        print(open(path).read()); os.remove(path)
        """))
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    env["HOME"] = str(home)
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"], env=env)
    if "expose-rw=${TMPDIR:-/tmp}" not in active(rules) or \
            not str(home).startswith("/tmp/"):
        pytest.skip("the temporary directory is not where home is here")
    assert ('#include "~/.config/py-sandboxes/user-py-sandboxes.profile"'
            in rules), rules
    assert second.stdout == "abc\n", second.stderr


@pytest.mark.parametrize("provider", ["auto", "subprocess"])
def test_a_file_kept_in_tmp_grants_that_file_only(run_sb, tmp_cwd, py,
                                                  provider):
    """A program that writes one file right in /tmp and keeps it is learned
    with a rule for that file, not expose-rw=${TMPDIR:-/tmp}, which would
    let the next run read and rewrite every other program's temporary
    files (weaknesses.md 85). Seen from outside: another file in /tmp is
    neither read nor changed, and the program's own file works again."""
    tag = f"pysb-w85-{os.getpid()}-{provider}"
    mine = pathlib.Path("/tmp") / f"{tag}.txt"
    other = pathlib.Path("/tmp") / f"{tag}-other-secret.txt"
    (tmp_cwd / "app.py").write_text(textwrap.dedent(f"""\
        import sys
        with open("{mine}", "w") as f:
            f.write("mine")
        print(open("{mine}").read())
        if len(sys.argv) > 1:
            for mode in ("r", "a"):
                try:
                    with open("{other}", mode) as f:
                        print("GOT", f.read() if mode == "r" else
                              f.write("EVIL"))
                except OSError as e:
                    print("refused", type(e).__name__)
        """))
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMPDIR", "TMP", "TEMP")}
    env["OS_SANDBOX"] = provider
    try:
        first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                                  ["app.py"], env=env)
        assert first.stdout == second.stdout == "mine\n", second.stderr
        assert f"expose-rw=${{TMPDIR:-/tmp}}/{tag}.txt" in active(rules)
        assert "expose-rw=${TMPDIR:-/tmp}" not in active(rules), rules
        other.write_text("TOPSECRET")
        os.chmod(other, 0o666)
        r = run_sb([f"--python={py}", "app.py", "probe"], env=env)
        assert r.stdout.startswith("mine\n"), r.stderr
        assert "GOT" not in r.stdout and "TOPSECRET" not in r.stdout
        assert r.stdout.count("refused") == 2, r.stdout
        assert other.read_text() == "TOPSECRET"
    finally:
        for f in (mine, other):
            if f.exists():
                f.unlink()


@pytest.mark.parametrize("provider", ["auto", "subprocess"])
def test_the_system_s_proc_files_are_learned(run_sb, tmp_cwd, py, provider):
    """/proc/meminfo and /proc/cpuinfo are the system's, and stay the same
    files from run to run: learned as any file, so that the enforcing run
    reads them (red team: it failed with RuleFileNotFoundError). A
    process's own entries (/proc/self, /proc/PID) are not learned: their
    name changes with the pid."""
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import os
        print(open("/proc/meminfo").readline().split(":")[0])
        print(open("/proc/cpuinfo").read().count("processor") > 0)
        """))
    env = dict(os.environ, OS_SANDBOX=provider)
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"], env=env)
    assert first.stdout == second.stdout == "MemTotal\nTrue\n", \
        second.stderr
    assert "expose-ro=/proc/meminfo" in active(rules)
    assert "expose-ro=/proc/cpuinfo" in active(rules)
    assert not [r for r in active(rules) if "/proc/self" in r
                or re.search(r"/proc/\d", r)], rules


WRITES_ITS_DIR = """\
import os, sys
d = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(d, "out.txt"), "w") as f:
    f.write("1")
if len(sys.argv) > 1:  # the enforced run tries to plant its next rules
    try:
        with open(os.path.join(d, ".py-sandboxes"), "a") as f:
            f.write("os-sandbox=none\\n")
        print("planted")
    except OSError as e:
        print(type(e).__name__)
print("ok")
"""


@pytest.mark.parametrize("command", [["app/main.py"], ["-m", "app.main"]],
                         ids=["script", "module"])
@pytest.mark.parametrize("provider", ["landlock", "subprocess"])
def test_a_learned_grant_of_the_scripts_directory_moves_the_rule_file_there(
        run_sb, tmp_cwd, py, command, provider):
    """Weakness 142: the next run reads a rule file next to the script (or
    in the -m module's directory) before the current directory's, so an
    enforced policy that lets the program write there is refused. A
    learning run whose rules grant that directory used to write the file
    in the current directory, and the first enforced run stopped on it;
    the file now goes where it is read first and kept from the program."""
    app = tmp_cwd / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "main.py").write_text(WRITES_ITS_DIR)
    env = dict(os.environ, OS_SANDBOX=provider)
    first = run_sb([f"--python={py}", *command], env=env)
    assert (first.returncode, first.stdout) == (0, "ok\n"), first.stderr
    assert not (tmp_cwd / ".py-sandboxes").exists(), first.stderr
    rules = (app / ".py-sandboxes").read_text()
    assert "lets the program write where the next run looks for its rule " \
           "file first" in first.stderr
    assert "Write all learning rules in 'app/.py-sandboxes'." in first.stderr
    second = run_sb([f"--python={py}", *command, "plant"], env=env)
    assert second.returncode == 0, (rules, second.stderr)
    assert second.stdout.splitlines()[-1] == "ok", second.stderr
    assert "planted" not in second.stdout
    assert (app / ".py-sandboxes").read_text() == rules
    assert not (tmp_cwd / ".py-sandboxes").exists()


def test_a_learned_policy_that_does_not_reach_the_scripts_directory_stays(
        run_sb, tmp_cwd, py):
    """The file moves only when it must: a program that writes in a
    directory beside its own keeps the seed's place. (One that makes a file
    in the current directory learns the current directory, which holds the
    script's: its rule file moves.)"""
    app = tmp_cwd / "app"
    app.mkdir()
    (tmp_cwd / "data").mkdir()
    (app / "main.py").write_text(
        "open('data/out.txt', 'w').write('1')\nprint('ok')\n")
    first = run_sb([f"--python={py}", "app/main.py"])
    assert first.returncode == 0, first.stderr
    assert "Write all learning rules in '.py-sandboxes'." in first.stderr
    assert not (app / ".py-sandboxes").exists()
    second = run_sb([f"--python={py}", "app/main.py"])
    assert (second.returncode, second.stdout) == (0, "ok\n"), second.stderr


def test_a_script_named_with_its_directory_in_the_current_one_learns_there(
        run_sb, tmp_cwd, py):
    """`python-sb ./app.py`: the script's directory is the current one, so
    no other place is read first and the file stays; the learned grant of
    the current directory is no error for it (it waited 30 s on its own
    lock before this was seen)."""
    (tmp_cwd / "app.py").write_text(
        "open('out.txt', 'w').write('1')\nprint('ok')\n")
    first = run_sb([f"--python={py}", "./app.py"])
    assert (first.returncode, first.stdout) == (0, "ok\n"), first.stderr
    assert "Write all learning rules in '.py-sandboxes'." in first.stderr
    assert "lock" not in first.stderr and "warning" not in first.stderr
    second = run_sb([f"--python={py}", "./app.py"])
    assert (second.returncode, second.stdout) == (0, "ok\n"), second.stderr


def test_a_proxy_from_the_environment_is_learned(run_sb, tmp_cwd, py,
                                                 tmp_path):
    """urllib (and requests, pip) finds http_proxy by scanning os.environ,
    and a scan is not a use (weaknesses 22): the proxy variable was not
    learned, and the first enforced run went to the host directly, where
    its refusal named the host (found by a learning probe). A proxy
    variable read by a scan is learned."""
    site = tmp_path / "site"
    # a proxy is asked for the absolute URL: the file server finds it
    # under http:/updates.example.invalid/
    (site / "http:" / "updates.example.invalid").mkdir(parents=True)
    (site / "http:" / "updates.example.invalid" / "index.html").write_text(
        "<title>via proxy</title>")
    proxy = serve(site)
    try:
        (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
            import urllib.request
            print(urllib.request.urlopen(
                "http://updates.example.invalid/index.html",
                timeout=5).read().decode())
            """))
        env = dict(os.environ,
                   http_proxy=f"http://127.0.0.1:{proxy.server_address[1]}",
                   SOME_SECRET="never learned")
        first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                                  ["app.py"], env=env)
        assert first.stdout == "<title>via proxy</title>\n", first.stderr
        assert "env=http_proxy=${http_proxy}" in active(rules), rules
        assert "SOME_SECRET" not in rules
        assert second.stdout == first.stdout, second.stderr
    finally:
        proxy.shutdown()


UDP_SELF = """\
import socket, sys, threading
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
srv.bind(("127.0.0.1", 0))
def serve():
    data, addr = srv.recvfrom(100)
    srv.sendto(data.upper(), addr)
threading.Thread(target=serve, daemon=True).start()
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.settimeout(10)
c.sendto(b"ping", srv.getsockname())
print(c.recvfrom(100)[0].decode())
if len(sys.argv) > 1:  # a host service's port is no 'self'
    try:
        c.sendto(b"leak", ("127.0.0.1", int(sys.argv[1])))
        print("sent")
    except OSError as e:
        print(type(e).__name__)
"""


@pytest.mark.parametrize("provider", ["auto", "subprocess"])
def test_a_datagram_server_of_the_program_is_learned_as_self(
        run_sb, tmp_cwd, py, provider):
    """A UDP server bound to port 0 that the program sends to itself
    (socketserver.UDPServer and its client) was learned with that run's
    port numbers, which the next run never has (found by a learning
    probe): 'self' now covers a UDP socket the sandbox holds, and nothing
    else, seen from a host socket that gets nothing."""
    (tmp_cwd / "app.py").write_text(UDP_SELF)
    env = dict(os.environ, OS_SANDBOX=provider)
    first, second, rules = learn_then_enforce(run_sb, tmp_cwd, py,
                                              ["app.py"], env=env)
    assert "net=ALLOW|UDP|127.0.0.1/32|self|OUT" in active(rules), rules
    assert second.stdout == "PING\n", second.stderr
    host = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    host.bind(("127.0.0.1", 0))
    host.setblocking(False)
    try:
        r = run_sb([f"--python={py}", "app.py",
                    str(host.getsockname()[1])], env=env)
        assert r.stdout.splitlines()[0] == "PING", r.stderr
        assert r.stdout.splitlines()[1] != "sent", r.stdout
        with pytest.raises(BlockingIOError):
            host.recvfrom(100)
    finally:
        host.close()
