"""pysb_build - the in-tree PEP 517 backend of python-sb.

It builds the C parts with meson and ninja in a temporary directory and
writes a platform wheel by hand (no setuptools, no download): the
`pysandboxes` package with the guard library in `pysandboxes/_lib/` and the
frame transport (`_pysbframe.abi3.so`) in `pysandboxes/`, and the
`python-sb` binary as a wheel script, so that a venv's `bin/python-sb` runs
the venv's own interpreter (it takes the `python3` next to itself).
"""
import base64
import hashlib
import os
import pathlib
import shutil
import subprocess
import sysconfig
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAME, VERSION = "python_sb", "0.1.0"


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _metadata():
    return (f"Metadata-Version: 2.1\nName: python-sb\nVersion: {VERSION}\n"
            "Summary: Run a Python program under a readable deny-by-default "
            "policy\nRequires-Python: >=3.9\n")


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    dist = pathlib.Path(metadata_directory) / f"{NAME}-{VERSION}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(_metadata())
    return dist.name


def _build(tmp):
    for tool in ("meson", "ninja"):
        if not shutil.which(tool):
            raise RuntimeError(f"python-sb needs {tool} to build: "
                               f"apt-get install meson ninja-build")
    build = tmp / "build"
    subprocess.run(["meson", "setup", str(build), "--prefix=/usr/local",
                    "-Dbuildtype=debugoptimized"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", str(build), "python-sb",
                    "libpysb-guard.so", "libpysb-prescan.so",
                    "_pysbframe.abi3.so", "pysb-guest-init"], check=True,
                   stdout=subprocess.DEVNULL)
    return build


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return f"{arc},sha256={digest.rstrip(b'=').decode()},{len(data)}"


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pysb-wheel-"))
    try:
        build = _build(tmp)
        files = {}
        pkg = ROOT / "python" / "pysandboxes"
        for f in sorted(pkg.glob("*.py")):
            files[f"pysandboxes/{f.name}"] = (f.read_bytes(), 0o644)
        for lib in ("libpysb-guard.so", "libpysb-prescan.so"):
            files[f"pysandboxes/_lib/{lib}"] = (
                (build / lib).read_bytes(), 0o755)
        # os-sandbox=qemu's guest init, found beside the guard
        files["pysandboxes/_lib/pysb-guest-init"] = (
            (build / "pysb-guest-init").read_bytes(), 0o755)
        files["pysandboxes/_pysbframe.abi3.so"] = (
            (build / "_pysbframe.abi3.so").read_bytes(), 0o755)
        data = f"{NAME}-{VERSION}.data"
        files[f"{data}/scripts/python-sb"] = (
            (build / "python-sb").read_bytes(), 0o755)
        # the seed's alias: a wheel holds no symlink, so a tiny wrapper
        files[f"{data}/scripts/python3-sb"] = (
            (ROOT / "packaging" / "python3-sb").read_bytes(), 0o755)
        dist = f"{NAME}-{VERSION}.dist-info"
        files[f"{dist}/METADATA"] = (_metadata().encode(), 0o644)
        files[f"{dist}/WHEEL"] = (
            f"Wheel-Version: 1.0\nGenerator: pysb_build\nRoot-Is-Purelib: "
            f"false\nTag: {_tag()}\n".encode(), 0o644)
        name = f"{NAME}-{VERSION}-{_tag()}.whl"
        out = pathlib.Path(wheel_directory) / name
        record = []
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for arc, (blob, mode) in files.items():
                info = zipfile.ZipInfo(arc, date_time=(2026, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, blob)
                record.append(_record_line(arc, blob))
            record.append(f"{dist}/RECORD,,")
            z.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
        return name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
