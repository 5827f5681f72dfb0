# Every target creates the virtualenv and installs what it needs, so a fresh clone just works.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-peers clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/research_writer.py

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check agentensemble agentensemble_review tests examples benchmarks
	$(PY) -m ruff format --check agentensemble agentensemble_review tests examples benchmarks
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/workflows.py
	$(PY) benchmarks/durable.py

bench-peers: $(STAMP)  # installs each peer into benchmarks/.peers/ (git-ignored) first
	$(PY) benchmarks/peers.py --install

clean:
	rm -rf $(VENV) build *.egg-info
