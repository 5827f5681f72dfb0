# Every target creates the virtualenv and installs what it needs, so a fresh clone just works.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CORE_STAMP := $(VENV)/.installed-core
# The browser tests drive these two; `make browser` installs them where it can (root with apt-get).
CHROMIUM ?= /usr/bin/chromium
CHROMEDRIVER ?= /usr/bin/chromedriver

# The suite runs side by side (pytest-xdist): most of tests/durable waits on Postgres, workers
# and leases rather than computing, so four workers overlap those waits even on two cores. Whole
# files go to one worker (--dist loadfile): a module's tests keep their order and its fixtures.
TEST_WORKERS ?= 4

.PHONY: demo test bench-smoke contracts lint docs bench bench-peers clean browser npm-clients phoenix

# The Python that makes the virtualenv: any python3 on PATH (Debian's /usr/bin/python3 does),
# checked first, so an old one or one without venv says what to do instead of failing in pip.
PYTHON_MIN ?= 3.10
CHECK_PYTHON := import sys; need = tuple(map(int, '$(PYTHON_MIN)'.split('.'))); \
	sys.exit(None if sys.version_info[:2] >= need else 'make: agentensemble needs Python \
	$(PYTHON_MIN) or newer, and $(PYTHON) is ' + sys.version.split()[0] + ': run make PYTHON=python3.12 \
	(or any newer python3 on your PATH)')

# The virtualenv itself, checked Python first; what goes into it is the two stamps' job.
$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: no $(PYTHON) on PATH: install Python \
	$(PYTHON_MIN)+ (python3), or run make PYTHON=/path/to/python3"; exit 1; }
	@$(PYTHON) -c "import ensurepip" 2>/dev/null || { echo "make: $(PYTHON) cannot create a \
	virtualenv (no ensurepip): on Debian/Ubuntu, sudo apt-get install python3-venv"; exit 1; }
	@$(PYTHON) -c "$(CHECK_PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip uninstall -q -y agentensemble 2>/dev/null || true  # the distribution's old name

# The package and its own dependencies only: what the demo needs (no extra, no test tools).
# After the install, the clone goes on sys.path: a script saved in the folder that holds the
# clone then imports this package, not the clone's folder as an empty namespace package
# (setuptools' import hook comes after the folder of the script).
$(CORE_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	$(PY) -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], \
		'agentensemble-clone.pth').write_text(str(pathlib.Path.cwd()) + '\n')"
	touch $(CORE_STAMP)

# Every extra and the test, lint and docs tools: what make test, lint and docs need.
$(STAMP): pyproject.toml $(CORE_STAMP)
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

# The demo installs what it needs and no more: the package and its dependencies.
demo: $(CORE_STAMP)
	$(PY) examples/research_writer.py

# `make test` changes nothing on the system: without a browser the browser tests are skipped in
# one line of the summary (`make browser` installs one; CI runs it first).
test: $(STAMP)
	AGENTENSEMBLE_CHROMIUM=$(CHROMIUM) AGENTENSEMBLE_CHROMEDRIVER=$(CHROMEDRIVER) \
		$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# The benchmark scripts at their smallest sizes, so they cannot rot (not part of `make test`);
# two at a time: most of their time is waiting on servers and workers they start.
bench-smoke: $(STAMP)
	$(PY) -m pytest -m bench_smoke -n 2 --dist loadfile

# The contract tests against the newest versions pyproject.toml allows of the dependencies whose
# behaviour (not only API) the package relies on: installed into a throwaway folder put first on
# sys.path (the venv is left as it is), then the tests that pin what we rely on. litellm is pinned
# to one release, so nothing newer is allowed; dbos' contract test is seams-dbos' (run if present).
# Not in .ci/run: the install alone took minutes on the shared two-core machine (8.8 min in all at
# load 25, 2.4 of them the tests); run it before raising a bound, and on a schedule.
CONTRACTS_DIR ?= $(or $(TMPDIR),/tmp)/agentensemble-contracts
CONTRACT_TESTS = tests/test_architecture.py $(wildcard tests/durable/test_dbos_contract.py) \
	tests/test_outputs_pickle.py tests/_base/test_saveable.py tests/workflows/test_prepared_run_reuse.py \
	tests/tracing/test_trace_deferred.py tests/mcp/test_mcp_schema_attacks.py \
	tests/mcp/test_mcp_stdio_lines.py
NEWEST_ALLOWED = import re, pathlib; text = pathlib.Path('pyproject.toml').read_text(); \
	print(' '.join(sorted(set(re.findall(r'\x22((?:pydantic|dbos|mcp)[<>=][^\x22]*)\x22', text)))))

contracts: $(STAMP)
	rm -rf $(CONTRACTS_DIR)
	$(PY) -m pip install -q --upgrade --target $(CONTRACTS_DIR) $$($(PY) -c "$(NEWEST_ALLOWED)")
	PYTHONPATH=$(CONTRACTS_DIR):$(CURDIR) $(PY) -c "import dbos, mcp, pydantic; \
		from importlib.metadata import version as v; \
		print('contracts against', *(f'{n} {v(n)}' for n in ('pydantic', 'dbos', 'mcp')))"
	PYTHONPATH=$(CONTRACTS_DIR):$(CURDIR) $(PY) -m pytest -q -n $(TEST_WORKERS) $(CONTRACT_TESTS)
	rm -rf $(CONTRACTS_DIR)

# The web console's browser tests drive Debian's chromium through its chromedriver. Installed only
# where that can work (root, with apt-get); anywhere else the browser tests are skipped, and say so.
# --no-upgrade: a chromium already installed is left as it is (apt may still upgrade a library the
# new packages need, as any install does).
browser:
	@if [ -x "$(CHROMIUM)" ] && [ -x "$(CHROMEDRIVER)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && apt-get install -y --no-upgrade chromium chromium-driver; \
	else \
		echo "make browser: no chromium here, and only root with apt-get installs it: the browser tests will be skipped (to run them: sudo make browser, or CHROMIUM=... CHROMEDRIVER=... make test)"; \
	fi

# The npm clients the tests drive our servers with (the AG-UI client), from the committed lock
# file into the harness folder (git-ignored node_modules); without npm their tests skip.
npm-clients:
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/serve/ag_ui_client && npm ci --no-audit --no-fund --loglevel=error; \
	else \
		echo "make npm-clients: no npm here: the AG-UI client test will be skipped"; \
	fi

# A real Arize Phoenix for the traces-with-content test, in a virtualenv of its own (.phoenix,
# about 860 MB: in ours it would move openai and tenacity); without it that test skips.
phoenix:
	@[ -x .phoenix/bin/phoenix ] || { $(PYTHON) -m venv .phoenix && \
		.phoenix/bin/python -m pip install -q arize-phoenix; }

lint: $(STAMP)
	$(PY) -m ruff check agentensemble agentensemble_review agentensemble_web tests examples benchmarks
	$(PY) -m ruff format --check agentensemble agentensemble_review agentensemble_web tests examples benchmarks
	$(PY) -m mypy

# The docs site (MkDocs + mkdocstrings) into site/, offline; CI builds it with --strict.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/workflows.py
	$(PY) benchmarks/durable.py
	$(PY) benchmarks/evals.py
	$(PY) benchmarks/loops.py
	$(PY) benchmarks/memory.py
	$(PY) benchmarks/serve_overhead.py
	$(PY) benchmarks/durable_ops.py

bench-peers: $(STAMP)  # installs each peer into benchmarks/.peers/ (git-ignored) first
	$(PY) benchmarks/peers.py --install

clean:
	rm -rf $(VENV) build site *.egg-info
