#!/usr/bin/env bash
# On a GPU machine: the sandbox probe, the GPU-marked tests, the sandbox's cost per attempt, the
# neighbours-beside-background-work benchmark and the evaluator benchmark (two runs over every
# expert, its summary as data), each under its own time limit, with logs and JSON written as they go.
#   scripts/gpu_check.sh OUT_DIR [EVAL_LIMIT_S]        (STAGES="eval quiet" to run only some)
# Needs only torch, triton, nvidia-ml-py, pytest and kbx's source (PYTHONPATH); no MLflow or Hydra.
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUT_DIR [EVAL_LIMIT_S]}
eval_limit=${2:-240}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True
py=${PYTHON:-python3}
stage() {  # stage NAME LIMIT_S CMD...: run, log, and note the exit status and time
    local name=$1 limit=$2; shift 2
    [[ -n "${STAGES:-}" && " $STAGES " != *" $name "* ]] && return 0
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$out/stages.txt"
    tail -n 4 "$out/$name.log"
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; uname -r;
  ls -l /dev/nvidia*; $py -c 'import torch, triton; print(torch.__version__, triton.__version__)'; } >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
stage probe 60 $py -m kbx.sandbox.namespaces --gpu
stage zoo_gpu 330 $py -m pytest -q -s -m gpu tests/zoo/test_zoo.py -p no:cacheprovider
stage sandbox_cost 150 $py -m kbx.bench sandbox --pairs "${SANDBOX_PAIRS:-10}" --json "$out/sandbox_cost.json"
stage quiet 240 $py -m kbx.bench quiet --workers 4 --json "$out/quiet.json"
stage eval "$eval_limit" $py -m kbx.bench eval --runs 2 --workers 8 --json "$out/eval.json" \
    --summary "$out/eval-summary.json"
