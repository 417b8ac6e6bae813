# Everything runs from a virtual environment made here; nothing assumes packages
# installed by hand. `make run` and `make test` are the README's two commands.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The web UI's third-party libraries, pinned by webui/package-lock.json.
WEBUI_STAMP := webui/node_modules/.installed
$(WEBUI_STAMP): webui/package-lock.json
	cd webui && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEBUI_STAMP)

install: $(STAMP) $(if $(wildcard webui/package-lock.json),$(WEBUI_STAMP))

run: install
	$(BIN)/python -m server

test: install
	$(BIN)/python -m pytest

# Every benchmark (benchmarks/run_all.py's list); `make bench BENCH_ARGS=--quick` for small sizes.
BENCH_ARGS ?=
bench: install
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check framework server exercises tutorials examples tests benchmarks
	$(BIN)/ruff format --check framework server exercises tutorials examples tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info
