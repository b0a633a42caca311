"""System files that C functions read by a fixed name, with no audit event
(guard/sysfiles.c): pwd, grp and spwd read the account databases through
NSS (/etc/passwd, /etc/group, /etc/shadow), socket.getservbyname and its
kin (and a service name given to getaddrinfo or getnameinfo)
/etc/services and /etc/protocols. Under os-sandbox=subprocess only the
guard stands there: before it, pwd.getpwall() listed the accounts while
open('/etc/passwd') was refused. Each call is judged as a read of its file,
so it answers only where the file is exposed, and learning writes the rule.
"""
import pytest

CALLS = {
    "pwd.getpwall": ("len(__import__('pwd').getpwall()) > 0", "/etc/passwd"),
    "pwd.getpwuid": ("__import__('pwd').getpwuid(0).pw_name", "/etc/passwd"),
    "pwd.getpwnam": ("__import__('pwd').getpwnam('root').pw_uid",
                     "/etc/passwd"),
    "grp.getgrall": ("len(__import__('grp').getgrall()) > 0", "/etc/group"),
    "grp.getgrgid": ("__import__('grp').getgrgid(0).gr_name", "/etc/group"),
    "os.getgrouplist": ("os.getgrouplist('root', 0)", "/etc/group"),
    "socket.getservbyname": ("__import__('socket').getservbyname('http')",
                             "/etc/services"),
    "socket.getservbyport": ("__import__('socket').getservbyport(80)",
                             "/etc/services"),
    # a service name given to the resolver (E40)
    "socket.getaddrinfo": ("__import__('socket').getaddrinfo("
                           "'127.0.0.1', 'http')[0][4]", "/etc/services"),
    "socket.getnameinfo": ("__import__('socket').getnameinfo("
                           "('127.0.0.1', 80), 1)", "/etc/services"),
    "socket.getprotobyname": ("__import__('socket').getprotobyname('tcp')",
                              "/etc/protocols"),
}


def program(expr):
    return ("import os\ntry:\n"
            f"    print('OK', {expr})\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_call_reads_its_file_only_where_a_rule_exposes_it(
        run_sb, tmp_cwd, python_exe, name):
    expr, path = CALLS[name]
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=subprocess\npython-import=*\nlearn=false\n")
    r = run_sb([f"--python={python_exe}", "-c", program(expr)])
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"RuleFileNotFoundError Access to '{path}' must be "
                        "accepted by a rule.\n"), r.stdout
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=subprocess\npython-import=*\nlearn=false\n"
        f"expose-ro={path}\n")
    r = run_sb([f"--python={python_exe}", "-c", program(expr)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OK "), r.stdout


def test_a_module_made_again_is_judged_too(run_sb, tmp_cwd):
    """pwd is loaded by the interpreter's start, before the guard arms; a
    fresh copy (del sys.modules, import again) gets the wrappers too."""
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=subprocess\npython-import=*\nlearn=false\n")
    r = run_sb(["-c", "import sys\nsys.modules.pop('pwd', None)\n" +
                program("__import__('pwd').getpwall()")])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("RuleFileNotFoundError Access to "
                               "'/etc/passwd'"), r.stdout


def test_learning_writes_the_file_and_the_next_run_works(run_sb, tmp_cwd):
    (tmp_cwd / "p.py").write_text(
        "import pwd, socket\n"
        "print(pwd.getpwuid(0).pw_name, socket.getservbyname('http'))\n")
    env_run = dict(__import__("os").environ, OS_SANDBOX="subprocess")
    r = run_sb(["p.py"], env=env_run)
    assert (r.returncode, r.stdout) == (0, "root 80\n"), r.stderr
    rules = (tmp_cwd / ".py-sandboxes").read_text().splitlines()
    assert "expose-ro=/etc/passwd" in rules
    assert "expose-ro=/etc/services" in rules
    r = run_sb(["p.py"], env=env_run)
    assert (r.returncode, r.stdout) == (0, "root 80\n"), r.stderr
