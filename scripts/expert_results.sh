#!/usr/bin/env bash
# On a GPU machine: the inputs of docs/EXPERTS.md for this GPU, the expert kernels and torch.compile of
# the references, one results file per category and method, so that a call cut short (a time limit)
# keeps every finished part and the next call resumes with the parts still missing.
#   scripts/expert_results.sh OUT_DIR [CATEGORY ...]     (default: every category)
#   METHODS=inductor scripts/expert_results.sh OUT_DIR   (one method only; default: reference inductor)
# Then, anywhere: python -m kbx.bench table OUT_DIR/*.json --out docs/EXPERTS.md (parts are merged).
# Needs only torch, triton, nvidia-ml-py and kbx's source (PYTHONPATH); no MLflow or Hydra.
set -uo pipefail
out=${1:?usage: scripts/expert_results.sh OUT_DIR [CATEGORY ...]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
categories=("$@")
if [ ${#categories[@]} -eq 0 ]; then
    categories=(activation convolution fusion index linearalgebra loss math matrixmultiply normalization optimizer
                pooling quantization random reduce spatialops)
fi
gpu=$($py -c 'import torch; print(torch.cuda.get_device_name().split()[1].lower())') || exit 1
for category in "${categories[@]}"; do
    for method in ${METHODS:-reference inductor}; do
        part="$out/${gpu}_${method}_${category}.json"
        [ -s "$part" ] && continue  # finished in an earlier call
        t0=$SECONDS
        # written under another name until finished: the table reads *.json only
        $py -m kbx.bench eval --runs 1 --workers "${WORKERS:-8}" --method "$method" --category "$category" \
            --json "$part.partial" >"${part%.json}.log" 2>&1
        rc=$?
        [ $rc -eq 0 ] && mv "$part.partial" "$part"
        echo "$gpu $method $category rc=$rc $((SECONDS - t0))s" | tee -a "$out/parts.txt"
    done
done
