# Each target creates .venv and installs what it needs; `make test` is what CI runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q tests

demo: $(STAMP)
	$(PY) -m jitmagic.demos demo_notebooks demo_notebooks/html

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[test,bench]"
	$(PY) benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) demo_notebooks/html benchmarks/results
