# Each target creates .venv and installs what it needs; `make test` is what CI runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BASE := $(VENV)/.base
NODE_STAMP := labextension/node_modules/.installed
LABEXT := jitmagic/labextension/static/style.js
LABEXT_SRC := $(wildcard labextension/src/*.ts labextension/style/*) \
	labextension/package.json labextension/tsconfig.json
CHROMIUM := /usr/bin/chromium
# the npm scripts run `jupyter labextension build`: the venv's JupyterLab
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: test test-quick demo bench clean labextension browser lint lint-ts bytecode

# a venv with what building the package needs (JupyterLab's extension builder, hatch plugins)
$(BASE):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "jupyterlab>=4.0.0,<5" "hatchling>=1.21" \
		"hatch-nodejs-version>=0.3.2" "hatch-jupyter-builder>=0.5" editables
	touch $@

$(NODE_STAMP): labextension/package.json labextension/package-lock.json
	cd labextension && npm ci --no-audit --no-fund
	touch $@

# the prebuilt JupyterLab extension; the wheel ships it as share/jupyter/labextensions/jitmagic
$(LABEXT): $(BASE) $(NODE_STAMP) $(LABEXT_SRC)
	cd labextension && npm run build:prod
	touch $@

labextension: $(LABEXT)

# eslint (with prettier's rules) + prettier --check + stylelint over the extension's sources
lint-ts: $(NODE_STAMP)
	cd labextension && npm run lint

# ruff (lint and format) over the Python, and the layers' import contract (pyproject.toml)
lint: $(STAMP) lint-ts
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports

$(STAMP): pyproject.toml $(BASE) $(LABEXT)
	$(PY) -m pip install -q --no-build-isolation -e ".[test]"
	touch $@

# the package's bytecode, as an installed wheel has it: with PYTHONDONTWRITEBYTECODE set (as on
# these machines) every process would otherwise compile jitmagic's source again (about 200 ms
# of each `import jitmagic`); Python still reads the files, and ignores stale ones
bytecode: $(STAMP)
	$(PY) -m compileall -q -j 0 jitmagic > /dev/null

# Debian's Chromium for the browser test (Playwright's own download is not used)
browser:
	test -x $(CHROMIUM) || (apt-get update && apt-get install -y chromium)

# the suite on two workers; one file's tests stay on one worker (shared shells, kernels)
test: $(STAMP) bytecode browser lint
	cd labextension && npm test
	$(PY) -m pytest -q -n 2 --dist loadfile tests

# the edit-test loop (about a minute): the core of jit and njit, the magics, the tracker
QUICK := tests/test_smoke.py tests/test_jit_semantics.py tests/test_ir_golden.py \
	tests/test_njit_features.py tests/test_imperative_convert.py tests/test_magics.py \
	tests/test_tracker.py tests/test_call_path.py tests/test_oracle.py
test-quick: $(STAMP) bytecode
	JM_RANDOM_PROGRAMS=300 $(PY) -m pytest -q -x -n 2 --dist loadfile $(QUICK)

demo: $(STAMP) bytecode
	$(PY) -m jitmagic.notebook.demos demo_notebooks demo_notebooks/html

bench: $(STAMP) bytecode
	$(PY) -m pip install -q -e ".[test,bench]"
	$(PY) benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) demo_notebooks/html benchmarks/results test-output \
		jitmagic/labextension jitmagic/_version.py labextension/lib labextension/node_modules
