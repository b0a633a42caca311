"""The container image and the pod (issue 19 item 5), without a container
builder on this machine: packaging/container/Dockerfile's build stage runs
for real in a fresh copy of the tree, its runtime stage's files are
bind-mounted over /usr/local of this Debian 12 host (the image's base) in a
private mount namespace, and the Job of packaging/container/job.yaml runs
there as its pod would: uid 10001, no_new_privs, the runtime's default
seccomp profile (/usr/share/containers/seccomp.json), no capability, no
user namespace. Evidence is read outside: the result file the job writes,
and the files an attack would have written.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import tempfile

import pytest

from conftest import REPO, scaled

# The deployment checks run once, against the build users install (make
# check); the sanitizer run (make check-asan) instruments the launcher,
# which is not what a container ships, and would double their minutes.
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("PYSB_SANITIZED")),
    reason="deployment checks run in make check, not under ASan")

CONTAINER = REPO / "packaging" / "container"
DOCKERFILE = CONTAINER / "Dockerfile"
PROFILE = pathlib.Path("/usr/share/containers/seccomp.json")
UID = 10001


def stages():
    """[(name, [instruction lines])] of the Dockerfile, continuations
    joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("FROM "):
            out.append((line.split()[-1], [line]))
        elif out:
            out[-1][1].append(line)
    return out


def runs(stage):
    return [ln[4:].strip() for ln in stage if ln.startswith("RUN ")]


def apt_packages(run):
    m = re.search(r"apt-get install -y --no-install-recommends (.*?)"
                  r"(?:&&|$)", run)
    return m.group(1).split() if m else []


def test_dockerfile_shape():
    st = dict(stages())
    assert list(st) == ["build", "runtime"]
    text = DOCKERFILE.read_text()
    assert "ARG DEBIAN_RELEASE=bookworm" in text  # Debian 12
    for name, lines in st.items():
        assert lines[0] == f"FROM debian:${{DEBIAN_RELEASE}}-slim AS {name}"
    build_pkgs = [p for r in runs(st["build"]) for p in apt_packages(r)]
    run_pkgs = [p for r in runs(st["runtime"]) for p in apt_packages(r)]
    assert {"meson", "ninja-build", "gcc", "libseccomp-dev"} <= set(
        build_pkgs)
    # the runtime is slim: a CPython and libseccomp, no toolchain
    assert set(run_pkgs) == {"python3", "libseccomp2"}
    user = [ln for ln in st["runtime"] if ln.startswith("USER ")]
    assert user == [f"USER {UID}:{UID}"]
    assert any("COPY --from=build /staging/usr/local/ /usr/local/" == ln
               for ln in st["runtime"])
    # every package named exists in this Debian release
    for pkg in build_pkgs + run_pkgs:
        r = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                           capture_output=True, text=True)
        assert r.returncode == 0 and "Package:" in r.stdout, pkg


def test_job_is_locked_down():
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((CONTAINER / "job.yaml").read_text()))
    job = next(d for d in docs if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == UID
    assert pod["securityContext"]["seccompProfile"] == {
        "type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in sc
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    assert "os-sandbox=landlock" in cm["data"][".py-sandboxes"].split("\n")


def needs_root_tools():
    if os.geteuid() != 0:
        pytest.skip("the mount namespace needs root [core]")
    for tool in ("meson", "ninja", "unshare", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is missing [core]")
    if not PROFILE.exists():
        pytest.skip(f"{PROFILE} is missing: apt-get install "
                    "golang-github-containers-common [core]")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The build stage, run: returns the staged /usr/local of the image."""
    needs_root_tools()
    base = pathlib.Path(tempfile.mkdtemp(prefix="pysb-image-"))
    os.chmod(base, 0o755)
    ignore = [ln.strip() for ln in
              (CONTAINER / "Dockerfile.dockerignore").read_text()
              .splitlines() if ln.strip() and not ln.startswith("#")]
    names = [p.split("/")[-1] for p in ignore]
    src = base / "src"
    shutil.copytree(REPO, src, symlinks=True,
                    ignore=shutil.ignore_patterns(*names))
    st = dict(stages())
    meson_run = [r for r in runs(st["build"]) if r.startswith("meson")]
    assert len(meson_run) == 1
    cmd = (meson_run[0].replace("/build", str(base / "build"))
           .replace("/staging", str(base / "staging")))
    r = subprocess.run(["nice", "sh", "-c", cmd], cwd=src,
                       capture_output=True, text=True,
                       timeout=scaled(900))
    assert r.returncode == 0, (cmd, r.stdout[-3000:], r.stderr[-3000:])
    staged = base / "staging" / "usr" / "local"
    assert (staged / "bin" / "python-sb").is_file()
    assert os.readlink(staged / "bin" / "python3-sb") == "python-sb"
    # the helper that plays the runtime, where uid 10001 can run it
    shutil.copy2(REPO / "build" / "container-seccomp", base)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def in_pod(image, work, command, seccomp=True):
    """Run `command` (argv) as the Job's pod would: the image's /usr/local,
    /work from `work`, uid 10001, no_new_privs, the default seccomp
    profile, no user namespace. Returns the CompletedProcess."""
    staged = image / "staging" / "usr" / "local"
    runtime = [str(image / "container-seccomp"), "--profile",
               str(PROFILE), "--no-userns", "--"] if seccomp else []
    inner = (f"mount --bind {shlex.quote(str(staged))} /usr/local && "
             f"mount --bind {shlex.quote(str(work))} /work && cd /work/job "
             f"&& exec setpriv --reuid={UID} --regid={UID} --clear-groups "
             f"-- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/work "
             + shlex.join(runtime + command))
    return subprocess.run(["unshare", "--mount", "--propagation", "private",
                           "sh", "-c", inner], capture_output=True,
                          text=True, timeout=scaled(120))


@pytest.fixture
def work(tmp_path):
    """The Job's volumes: job/ (rule file and script, read-only for the
    pod), data/ (read-only), out/ (writable)."""
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((CONTAINER / "job.yaml").read_text()))
    data = next(d for d in docs if d["kind"] == "ConfigMap")["data"]
    w = pathlib.Path(tempfile.mkdtemp(prefix="pysb-pod-"))
    for sub in ("job", "data", "out"):
        (w / sub).mkdir()
    (w / "job" / ".py-sandboxes").write_text(data[".py-sandboxes"])
    (w / "job" / "untrusted.py").write_text(data["untrusted.py"])
    (w / "data" / "input.json").write_text(data["input.json"])
    os.chown(w / "out", UID, UID)
    for p in [w, *w.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(w / "out", 0o700)
    yield w
    shutil.rmtree(w, ignore_errors=True)


def job_args():
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((CONTAINER / "job.yaml").read_text()))
    job = next(d for d in docs if d["kind"] == "Job")
    return job["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_job_runs_in_the_pod(image, work):
    r = in_pod(image, work, ["/usr/local/bin/python-sb", *job_args()])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "done: 3 rows\n"
    assert (work / "out" / "result.json").read_text() == '{"rows": 3}'
    # the image's alias works there too
    r = in_pod(image, work, ["python3-sb", "-c", "print('alias')"])
    assert r.stdout == "alias\n", r.stderr


def test_the_pod_still_confines_the_script(image, work):
    """An untrusted script in the pod cannot write its data, read outside
    what is exposed, or reach the network: refused by the guard and, with
    the guard disarmed by native code, by Landlock."""
    (work / "job" / "untrusted.py").write_text(
        "import json\n"
        "for path, mode in (('/work/data/input.json', 'w'),\n"
        "                   ('/work/job/stolen', 'w'),\n"
        "                   ('/etc/passwd', 'r')):\n"
        "    try:\n"
        "        open(path, mode)\n"
        "        print('ESCAPED', path)\n"
        "    except Exception as e:\n"
        "        print('refused', path, type(e).__name__)\n")
    r = in_pod(image, work, ["/usr/local/bin/python-sb", *job_args()])
    assert "ESCAPED" not in r.stdout, r.stdout
    assert r.stdout.count("refused") == 3, (r.stdout, r.stderr)
    assert (work / "data" / "input.json").read_text() == "[1, 2, 3]\n"
    assert not (work / "job" / "stolen").exists()
    # native code past the guard: the kernel layer refuses, in the pod
    (work / "job" / ".py-sandboxes").write_text(
        "os-sandbox=landlock\npy-sandbox=false\nexpose-rw=/work/out\n")
    (work / "job" / "untrusted.py").write_text(
        "import os\n"
        "try:\n"
        "    fd = os.open('/work/data/planted', os.O_WRONLY | os.O_CREAT)\n"
        "    print('ESCAPED')\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n")
    os.chmod(work / "data", 0o777)  # only the sandbox stands in the way
    r = in_pod(image, work, ["/usr/local/bin/python-sb", *job_args()])
    assert r.stdout.startswith("refused"), (r.stdout, r.stderr)
    assert not (work / "data" / "planted").exists()


def test_unshare_says_what_to_use_in_the_pod(image, work):
    (work / "job" / ".py-sandboxes").write_text("os-sandbox=unshare\n")
    r = in_pod(image, work, ["/usr/local/bin/python-sb", *job_args()])
    assert r.returncode == 255
    assert "cannot create a user namespace" in r.stderr
    assert "os-sandbox=landlock" in r.stderr
    assert not (work / "out" / "result.json").exists()
