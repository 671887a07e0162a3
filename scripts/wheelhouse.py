"""Build a wheelhouse: every wheel kbx needs on a machine without internet, for a chosen Python and platform.

A GPU node keeps its own CUDA torch and triton (and NVIDIA's libraries), so those are left out; the
node's venv sees them through --system-site-packages (scripts/node_install.sh). Run this on a machine
with internet (docs/SCALING.md, "A GPU node without internet"):

    python3 scripts/wheelhouse.py --python-version 3.12 --out wheelhouse

hydra-core 1.3.8 needs antlr4-python3-runtime 4.9.3, which ships only as source: its (pure-Python)
wheel is built here, so the target needs no compiler and no source download.

Size: the node install leaves out what only the home machine needs (the [analysis] and [ui] extras:
pandas, statsmodels, scipy, matplotlib, the full MLflow with pyarrow and scikit-learn), and two
steps make the rest small enough to carry with the checkout (a 64 MiB limit was the target):
- litellm's wheel (36 MB) is mostly an optional native extension (`rust_bridge/_native`, which
  litellm replaces by its Python path when it cannot import it) and its proxy server's web UI, and
  it requires boto3 (17 MB with botocore), which it needs for AWS providers (Bedrock, SageMaker)
  only: `import litellm` and a completion run with both boto3 and the extension made unimportable.
  The wheel is rewritten without the three, under the local version `+kbx.slim` so
  that it never passes for upstream's; --full-litellm keeps upstream's wheel (and boto3).
- With --extras cluster, Ray's wheel (79 MB) is slimmed the same way: without `ray/jars/` (32 MB
  packed: the Java worker, for Java and cross-language tasks, which kbx never runs) and the
  dashboard's JavaScript source maps. On two H200s (2026-11-27) kbx.run's Ray pool judged the whole
  suite with this wheel. The slim wheel keeps every file's mode, so Ray's executables (raylet,
  gcs_server) stay executable.
- --pack ARCHIVE also writes the wheels as one .tar.xz, each wheel stored uncompressed inside it
  so that xz compresses across them (about a third smaller than the wheels' own zip compression;
  the files inside every wheel, and so its RECORD, are unchanged). scripts/node_install.sh takes
  the directory or the archive.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PLATFORM = "manylinux_2_28_x86_64"  # the glibc floor of torch 2.11's own CUDA wheels
MANYLINUX_OLDEST_GLIBC_MINOR = 17  # manylinux2014 = manylinux_2_17; nothing kbx needs is older
NODE_PROVIDED = ("torch", "triton")  # the node's own; NVIDIA's libraries come only through these
ANTLR = "antlr4-python3-runtime==4.9.3"
BUILD_TOOLS = ("setuptools>=68", "wheel", "pip")  # the editable install of the checkout builds offline
SLIM_LABEL = "kbx.slim"
PACKED_DIR = "wheelhouse"  # the archive's one folder
XZ_PRESET = 6  # xz's default
# litellm's optional native extension, and the web UI of its proxy server (which kbx never runs)
LITELLM_UNUSED = re.compile(r"^litellm/(rust_bridge/_native[^/]*\.so|proxy/_experimental/out/.*)$")
LITELLM_DROPPED_REQUIRES = ("boto3",)
RAY_UNUSED = re.compile(r"^ray/(jars/.*|dashboard/client/build/.*\.map)$")  # the Java worker; JS source maps
SLIMMED = {"litellm": (LITELLM_UNUSED, LITELLM_DROPPED_REQUIRES), "ray": (RAY_UNUSED, ())}  # name -> what goes


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    requirements = node_requirements(args.extras)
    target = target_flags(args.python_version, args.platform)
    pip(["wheel", "--no-deps", "--wheel-dir", str(out), ANTLR])
    constraints: list[str] = []
    for name, (drop_files, drop_requires) in SLIMMED.items():
        requirement = next((r for r in requirements if requirement_name(r) == name), None)
        if requirement and not (name == "litellm" and args.full_litellm):
            constraints.append(slim_into(out, requirement, target, drop_files, drop_requires))
    with tempfile.TemporaryDirectory() as tmp:
        req_file = write_lines(Path(tmp) / "requirements.txt", [*requirements, *BUILD_TOOLS])
        con_file = write_lines(Path(tmp) / "constraints.txt", constraints)
        pip(["download", "--dest", str(out), "--find-links", str(out), "-r", str(req_file), "-c", str(con_file), *target])
        refuse_node_provided(out)
        pip(["install", "--dry-run", "--ignore-installed", "--no-index", "--find-links", str(out),
             "--target", str(Path(tmp) / "t"), "-r", str(req_file), *target])
    write_lines(out / "requirements.txt", requirements)
    wheels = sorted(out.glob("*.whl"))
    size_mb = sum(w.stat().st_size for w in wheels) / 1e6
    print(f"kbx: {len(wheels)} wheels, {size_mb:.1f} MB in {out} (Python {args.python_version}, {args.platform}); "
          "resolved offline against this directory alone")
    if args.pack:
        pack(wheels, args.pack.resolve())
        print(f"kbx: packed into {args.pack} ({args.pack.stat().st_size / 1e6:.1f} MB)")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="wheelhouse", description=__doc__.splitlines()[0])
    parser.add_argument("--python-version", default="3.12", help="target CPython, e.g. 3.12 (default)")
    parser.add_argument("--platform", default=DEFAULT_PLATFORM, help=f"target wheel platform (default {DEFAULT_PLATFORM})")
    parser.add_argument("--out", type=Path, default=REPO / "wheelhouse", help="directory for the wheels")
    parser.add_argument("--extras", default="", help="kbx extras to include as well, comma-separated (e.g. analysis)")
    parser.add_argument("--full-litellm", action="store_true", help="keep upstream's litellm wheel and boto3")
    parser.add_argument("--pack", type=Path, help="also write the wheels as this .tar.xz (smaller to carry)")
    return parser.parse_args(argv)


def node_requirements(extras: str) -> list[str]:
    """kbx's dependencies (and those of the named extras) without what the node brings itself."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    optional = project.get("optional-dependencies", {})
    for extra in filter(None, (e.strip() for e in extras.split(","))):
        if extra not in optional:
            raise SystemExit(f"kbx: error: no extra {extra!r} in pyproject.toml (have: {', '.join(optional)})")
        requirements += optional[extra]
    return [r for r in requirements if requirement_name(r) not in NODE_PROVIDED]


def requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()


def target_flags(python_version: str, platform: str) -> list[str]:
    abi = "cp" + python_version.replace(".", "")
    platforms = [flag for p in compatible_platforms(platform) for flag in ("--platform", p)]
    return ["--only-binary=:all:", *platforms, "--python-version", python_version, "--implementation", "cp", "--abi", abi]


def compatible_platforms(platform: str) -> list[str]:
    """`platform` and the older manylinux tags a machine of that glibc also runs (pip takes
    `--platform` literally): manylinux_2_28_x86_64 also admits manylinux_2_27 ... 2_17 (= 2014)."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if not match:
        return [platform]
    glibc_minor, arch = int(match[1]), match[2]
    older = [f"manylinux_2_{minor}_{arch}" for minor in range(glibc_minor, MANYLINUX_OLDEST_GLIBC_MINOR - 1, -1)]
    return [*older, f"manylinux2014_{arch}"]


def pip(args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args], check=True)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def slim_into(out: Path, requirement: str, target: list[str], drop_files: re.Pattern[str],
              drop_requires: tuple[str, ...]) -> str:  # fmt: skip
    """Download upstream's wheel for `requirement`, write the slim one into `out`, and return its pin."""
    name = requirement_name(requirement)
    with tempfile.TemporaryDirectory() as tmp:
        pip(["download", "--no-deps", "--dest", tmp, requirement, *target])
        (upstream,) = Path(tmp).glob(f"{name}-*.whl")
        slim = slim_wheel(upstream, out, drop_files, drop_requires)
    return f"{name}=={wheel_version(slim)}"


def wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def slim_wheel(wheel: Path, out: Path, drop_files: re.Pattern[str], drop_requires: tuple[str, ...]) -> Path:
    """Rewrite `wheel` into `out` without the files matching `drop_files` and the `drop_requires`
    dependencies, as version `<version>+kbx.slim`, with a RECORD that matches what is inside."""
    name, version, *tags = wheel.name[: -len(".whl")].split("-")
    slim_version = f"{version}+{SLIM_LABEL}"
    old_info, new_info = f"{name}-{version}.dist-info/", f"{name}-{slim_version}.dist-info/"
    target = out / ("-".join([name, slim_version, *tags]) + ".whl")
    records: list[str] = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if drop_files.match(item.filename) or item.filename == old_info + "RECORD":
                continue
            data = src.read(item)
            path = item.filename.replace(old_info, new_info, 1)
            if path == new_info + "METADATA":
                data = slim_metadata(data.decode(), slim_version, drop_requires).encode()
            info = zipfile.ZipInfo(path, item.date_time)
            info.external_attr = item.external_attr  # the file's mode: executables stay executable
            dst.writestr(info, data, zipfile.ZIP_DEFLATED)
            records.append(f"{path},sha256={record_hash(data)},{len(data)}")
        records.append(f"{new_info}RECORD,,")
        dst.writestr(new_info + "RECORD", "".join(f"{r}\n" for r in records), zipfile.ZIP_DEFLATED)
    return target


def slim_metadata(metadata: str, version: str, drop_requires: tuple[str, ...]) -> str:
    kept = []
    for line in metadata.splitlines():
        if line.startswith("Version:"):
            line = f"Version: {version}"
        elif line.startswith("Requires-Dist:") and requirement_name(line[len("Requires-Dist:"):].strip()) in drop_requires:
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def pack(wheels: list[Path], archive: Path) -> None:
    """One .tar.xz of the wheels, each rewritten with its files stored uncompressed (the same files,
    so the same RECORD) under `wheelhouse/`, so that xz sees, and compresses, the bytes themselves."""
    with tarfile.open(archive, "w:xz", preset=XZ_PRESET) as tar:
        for wheel in wheels:
            data = stored_wheel(wheel)
            info = tarfile.TarInfo(f"{PACKED_DIR}/{wheel.name}")
            info.size, info.mtime, info.mode = len(data), int(wheel.stat().st_mtime), 0o644
            tar.addfile(info, io.BytesIO(data))


def stored_wheel(wheel: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item), compress_type=zipfile.ZIP_STORED)
    return buffer.getvalue()


def refuse_node_provided(out: Path) -> None:
    """The node's CUDA torch must never be shadowed: fail if anything pulled torch, triton or NVIDIA's
    CUDA libraries in (nvidia-ml-py, the NVML binding kbx needs, is not one of them)."""
    banned = [w.name for w in out.glob("*.whl")
              if requirement_name(w.name.split("-")[0].replace("_", "-")) in NODE_PROVIDED
              or (w.name.startswith("nvidia_") and not w.name.startswith("nvidia_ml_py"))]
    if banned:
        raise SystemExit(f"kbx: error: the wheelhouse would replace the node's own packages: {', '.join(banned)}")


if __name__ == "__main__":
    sys.exit(main())
