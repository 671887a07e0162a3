#!/usr/bin/env bash
# Install kbx on a GPU node without internet, from a wheelhouse built elsewhere by `make wheelhouse`
# (docs/SCALING.md, "A GPU node without internet"). Usage, from the checkout's root:
#   scripts/node_install.sh WHEELHOUSE [VENV]   # WHEELHOUSE: wheelhouse.tar.xz or the directory; VENV: .venv
# Settings (environment): KBX_PYTHON (python3): the node's Python, the one that has its CUDA torch.
# The venv sees that Python's packages (--system-site-packages), so the node's torch, triton and
# nvidia-ml-py are used as they are; everything else comes from WHEELHOUSE (--no-index: pip never
# touches the network). kbx is installed editable from this checkout, which holds its tasks and configs.
# Ends with a smoke check: the task list, and the imports kbx needs at run time.
set -euo pipefail

fail() { echo "kbx: error: $*" >&2; exit 1; }

[ $# -ge 1 ] || fail "usage: scripts/node_install.sh WHEELHOUSE [VENV]"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${2:-$REPO/.venv}"
PYTHON="${KBX_PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || fail "no $PYTHON here (set KBX_PYTHON to the Python that has the node's torch)"
if [ -f "$1" ]; then  # the packed wheelhouse (wheelhouse.tar.xz): unpacked with Python's own tarfile and lzma
    UNPACKED="$(mktemp -d)"
    trap 'rm -rf "$UNPACKED"' EXIT
    "$PYTHON" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$1" "$UNPACKED" ||
        fail "$1 is not a wheelhouse archive (build one with: make wheelhouse)"
    WH="$UNPACKED/wheelhouse"
else
    WH="$(cd "$1" 2>/dev/null && pwd)" || fail "no wheelhouse at $1 (build one with: make wheelhouse)"
fi
export LITELLM_LOCAL_MODEL_COST_MAP=True  # litellm would fetch its price map at import (docs/DEPENDENCIES.md)

ls "$WH"/*.whl >/dev/null 2>&1 || fail "$WH holds no wheels (build it with: make wheelhouse)"
"$PYTHON" -c "import torch, triton" 2>/dev/null ||
    fail "$PYTHON cannot import torch and triton: this install reuses the node's own (set KBX_PYTHON)"
echo "kbx: node Python $("$PYTHON" -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)')"

# A Python without ensurepip (Debian's python3-venv missing) still gets a venv: pip comes from the wheelhouse.
if ! "$PYTHON" -m venv --system-site-packages "$VENV" 2>/dev/null; then
    echo "kbx: this Python cannot put pip in a venv (no ensurepip): pip comes from the wheelhouse"
    "$PYTHON" -m venv --system-site-packages --without-pip "$VENV"
    PIP_WHEEL="$(ls "$WH"/pip-*.whl | head -n 1)"
    "$VENV/bin/python" "$PIP_WHEEL/pip" install --quiet --no-index --find-links "$WH" pip  # pip runs from its wheel
fi
VPY="$VENV/bin/python"
# When the node's Python is itself a virtualenv (torch in /opt/torch/.venv, say), --system-site-packages
# reaches only its base interpreter's packages: a .pth file adds the node venv's own, torch included.
"$PYTHON" -c 'import site, sys; sys.prefix != sys.base_prefix and print("\n".join(site.getsitepackages()))' \
    >"$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/kbx-node-packages.pth"
"$VPY" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$WH" -e "$REPO"

echo "kbx: installed in $VENV; smoke check:"
cd "$REPO"
"$VPY" -m kbx.quality --json | "$VPY" -c "import json, sys; print('kbx:', len(json.load(sys.stdin)), 'tasks')"
"$VPY" - <<'EOF'
import importlib.metadata as md

import hydra, litellm, mlflow, optuna, pynvml, torch, triton  # noqa: F401, E401 - what kbx.run imports

names = ("torch", "triton", "mlflow-skinny", "hydra-core", "optuna", "litellm", "nvidia-ml-py", "numpy")
print("kbx:", ", ".join(f"{n} {md.version(n)}" for n in names))
print("kbx: CUDA available:", torch.cuda.is_available())
EOF
echo "kbx: ready. Run with: $VPY -m kbx.run ..."
