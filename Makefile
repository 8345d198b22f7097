# CommHub: `make run` serves the hub, `make test` runs the suite. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test test-fast setup lint

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

setup: $(VENV)/.installed

# The whole hub (commhub/run.py): daphne through commhub.serving (its access lines through the filter
# that redacts tokens), with the sweep and the webhooks deliverer beside it; Ctrl-C stops all three.
run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo ""
	@echo "CommHub on http://127.0.0.1:$(PORT)/  (operator dashboard; Django admin at /admin/)"
	@echo "  MCP endpoint for agents:       http://127.0.0.1:$(PORT)/mcp"
	@echo "  a network and an agent token:  $(PY) manage.py create_network demo"
	@echo "                                 $(PY) manage.py create_token --network demo"
	@echo "  connect Claude Code:           claude mcp add --transport http commhub http://127.0.0.1:$(PORT)/mcp --header \"Authorization: Bearer <token>\""
	@echo "  an operator login:             $(PY) manage.py createsuperuser   (its first login owns 'demo' above, or a new 'default')"
	@echo ""
	exec $(PY) -m commhub.run --bind 127.0.0.1 --port $(PORT)

# The whole suite on two workers (pytest-xdist: each has its own test database). The longest kinds
# start first (tests/plugins/markers.py) and an idle worker takes half of the other's queue
# (worksteal), so neither waits on the other's minutes-long tests; the 25 longest are named at the end,
# and the compiled tests are kept as test-fast keeps them. `.venv/bin/pytest path` runs a part.
test: setup
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 2 --dist worksteal --durations=25

# The inner loop: unit, service and in-process HTTP/websocket tests on every core (pytest-xdist; each
# worker has its own test database), and the wall time it took, start to end. `make test` runs the
# rest too: live servers, the browser, races on real threads, fuzzing, the seconds- and minutes-long
# runs. Each worker imports and assertion-rewrites every test module; keeping that bytecode
# (__pycache__, ignored by git) even where the environment sets PYTHONDONTWRITEBYTECODE saves each
# run after the first about 8 s of every worker's start.
FAST := not live and not browser and not race and not fuzz and not slow
test-fast: setup
	@started=$$(date +%s%N); \
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -p no:cacheprovider -n auto --dist worksteal -m "$(FAST)"; \
	status=$$?; \
	took=$$(( ($$(date +%s%N) - started) / 100000000 )); \
	echo "make test-fast: $$((took / 10)).$$((took % 10)) s wall on $$(nproc) cores, start to end"; \
	exit $$status

lint: setup
	$(PY) -m pip install --quiet ruff==0.17.5
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
