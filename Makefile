# The two commands of the README: `make demo` (set up, then run the main job end to end
# on the embedded default) and `make test` (set up, then the test suite and the linter).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-all lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[lake,airflow,dev]"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/probcep demo

test: lint
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not soak"  # a file per worker, both cores

test-all: lint  # the suite with the soak tests (about 40 min here)
	$(PY) -m pytest -q -n 2 --dist loadfile

lint: setup
	$(VENV)/bin/ruff check src tests jobs dags benchmarks examples

bench: setup
	$(PY) benchmarks/engine_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
