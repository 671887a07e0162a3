"""scripts/wheelhouse.py: the slimmed litellm and Ray wheels and the packed archive are wheels pip installs as they are."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("wheelhouse", REPO / "scripts" / "wheelhouse.py")
wheelhouse = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(wheelhouse)

METADATA = """Metadata-Version: 2.1
Name: litellm
Version: 1.106.2
Requires-Dist: httpx>=0.28
Requires-Dist: boto3>=1.43.1,<2.0
Requires-Dist: boto3-stubs; extra == "typing"
"""


def upstream_like_wheel(folder: Path) -> Path:
    """A small wheel laid out like litellm's: a package, its native extension, its proxy's UI files."""
    files = {"litellm/__init__.py": b"VERSION = 1\n", "litellm/rust_bridge/_native.abi3.so": b"\x7fELF" + b"\0" * 64,
             "litellm/rust_bridge/loader.py": b"pass\n", "litellm/proxy/_experimental/out/index.html": b"<html/>",
             "litellm/proxy/_experimental/mcp_server/server.py": b"pass\n",
             "litellm-1.106.2.dist-info/METADATA": METADATA.encode(),
             "litellm-1.106.2.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp310-abi3-linux_x86_64\n"}  # fmt: skip
    wheel = folder / "litellm-1.106.2-cp310-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
        tool = zipfile.ZipInfo("litellm/bin/tool")  # an executable, as Ray ships raylet and gcs_server
        tool.external_attr = EXECUTABLE << 16
        z.writestr(tool, b"#!/bin/sh\necho tool\n")
        z.writestr("litellm-1.106.2.dist-info/RECORD", "")
    return wheel


EXECUTABLE = 0o100755  # a regular file, rwxr-xr-x


def test_slim_wheel_drops_the_unused_parts_and_installs(tmp_path):
    (tmp_path / "up").mkdir()
    (tmp_path / "out").mkdir()
    slim = wheelhouse.slim_wheel(upstream_like_wheel(tmp_path / "up"), tmp_path / "out", wheelhouse.LITELLM_UNUSED,
                                 wheelhouse.LITELLM_DROPPED_REQUIRES)  # fmt: skip
    assert slim.name == "litellm-1.106.2+kbx.slim-cp310-abi3-linux_x86_64.whl"
    names = zipfile.ZipFile(slim).namelist()
    assert "litellm/rust_bridge/_native.abi3.so" not in names and "litellm/proxy/_experimental/out/index.html" not in names
    assert "litellm/rust_bridge/loader.py" in names and "litellm/proxy/_experimental/mcp_server/server.py" in names
    metadata = zipfile.ZipFile(slim).read("litellm-1.106.2+kbx.slim.dist-info/METADATA").decode()
    assert "Version: 1.106.2+kbx.slim" in metadata and "boto3>=" not in metadata
    assert "httpx>=0.28" in metadata and "boto3-stubs" in metadata  # only boto3 itself goes
    # pip checks every file against RECORD's hashes and sizes as it installs
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(target), str(slim)], check=True)  # fmt: skip
    assert (target / "litellm" / "__init__.py").read_bytes() == b"VERSION = 1\n"
    assert os.access(target / "litellm" / "bin" / "tool", os.X_OK)  # the mode survives the rewrite
    assert (target / "litellm-1.106.2+kbx.slim.dist-info").is_dir()


def test_ray_loses_only_its_java_worker_and_source_maps():
    drops = wheelhouse.SLIMMED["ray"][0].match
    assert drops("ray/jars/ray_dist.jar") and drops("ray/dashboard/client/build/static/js/main.84605326.js.map")
    assert not any(drops(f) for f in ("ray/_raylet.so", "ray/core/src/ray/raylet/raylet",
                                      "ray/dashboard/client/build/static/js/main.84605326.js", "ray/__init__.py"))  # fmt: skip


def test_packed_wheels_hold_the_same_files(tmp_path):
    (tmp_path / "up").mkdir()
    wheel = upstream_like_wheel(tmp_path / "up")
    archive = tmp_path / "wheelhouse.tar.xz"
    wheelhouse.pack([wheel], archive)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    unpacked = tmp_path / "unpacked" / "wheelhouse" / wheel.name
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(unpacked) as b:
        assert a.namelist() == b.namelist()
        assert all(a.read(n) == b.read(n) for n in a.namelist())
        assert {i.compress_type for i in b.infolist()} == {zipfile.ZIP_STORED}


def test_manylinux_target_admits_older_glibc_tags():
    platforms = wheelhouse.compatible_platforms("manylinux_2_28_x86_64")
    assert platforms[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in platforms
    assert platforms[-1] == "manylinux2014_x86_64" and len(platforms) == 28 - 17 + 2
    assert wheelhouse.compatible_platforms("macosx_11_0_arm64") == ["macosx_11_0_arm64"]
