# Every target creates the virtualenv and installs what it needs, so a fresh clone just works.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-peers clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/research_writer.py

test: $(STAMP) browser
	$(PY) -m pytest

# The web console's browser tests drive Debian's chromium through its chromedriver.
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || \
		(apt-get update && apt-get install -y chromium chromium-driver)

lint: $(STAMP)
	$(PY) -m ruff check agentensemble agentensemble_review agentensemble_web tests examples benchmarks
	$(PY) -m ruff format --check agentensemble agentensemble_review agentensemble_web tests examples benchmarks
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/workflows.py
	$(PY) benchmarks/durable.py
	$(PY) benchmarks/evals.py

bench-peers: $(STAMP)  # installs each peer into benchmarks/.peers/ (git-ignored) first
	$(PY) benchmarks/peers.py --install

clean:
	rm -rf $(VENV) build *.egg-info
