# Everything runs from a virtual environment made here; nothing assumes packages
# installed by hand. `make run` and `make test` are the README's two set-up commands: both
# start with scripts/setup.sh (system packages, then `make install`), so a fresh machine needs
# nothing else. `make notebook` and `make bench` are extras.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PEER_PYTHON := .peers/mxvenv/bin/python
TORCH_PEER_PYTHON := .peers/torchvenv/bin/python

.PHONY: setup install run test notebook bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The web UI's third-party libraries, pinned by webui/package-lock.json.
WEBUI_STAMP := webui/node_modules/.installed
$(WEBUI_STAMP): webui/package-lock.json
	cd webui && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEBUI_STAMP)

# The Python and npm part of the set-up (scripts/setup.sh runs it after the system packages).
install: $(STAMP) $(if $(wildcard webui/package-lock.json),$(WEBUI_STAMP))

# System packages (installed as root, otherwise the exact command to run), then `install`.
setup:
	PYTHON=$(PYTHON) scripts/setup.sh

run: setup
	$(BIN)/python -m server

# The MXNet peer (scripts/setup.sh --test) reaches the compatibility tests as MXNET_PYTHON when
# it imports; -ra (pyproject.toml) ends the run with every skipped test and its reason.
test:
	PYTHON=$(PYTHON) scripts/setup.sh --test
	MXNET_PYTHON="$$($(PEER_PYTHON) -c 'import mxnet, sys; print(sys.executable)' 2>/dev/null)" \
		$(BIN)/python -m pytest

# The tutorials as Jupyter notebooks: JupyterLab into the venv, the .ipynb pairs written by
# jupytext (tutorials/jupytext.toml), then JupyterLab on tutorials/ (it prints the URL to open;
# as root, e.g. in a container, JupyterLab refuses to start without --allow-root).
NOTEBOOK_STAMP := $(VENV)/.notebook-installed
$(NOTEBOOK_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,notebook]'
	touch $(NOTEBOOK_STAMP)

notebook: install $(NOTEBOOK_STAMP)
	$(BIN)/jupytext --sync tutorials/[0-9][0-9]-*.md
	$(BIN)/jupyter lab --no-browser --notebook-dir=tutorials $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# Every benchmark (benchmarks/run_all.py's list); `make bench BENCH_ARGS=--quick` for small sizes.
# scripts/setup.sh --bench makes the two peer venvs (MXNet 1.9.1; PyTorch 2.13.0, CPU build only),
# and each peer that imports is measured beside MXLab. MXNET_PYTHON=... / TORCH_PYTHON=... (command
# line or environment) name other interpreters instead. `make test` never installs PyTorch.
BENCH_ARGS ?=
bench:
	PYTHON=$(PYTHON) scripts/setup.sh --bench
	MXNET_PYTHON="$${MXNET_PYTHON:-$$($(PEER_PYTHON) -c 'import mxnet, sys; print(sys.executable)' 2>/dev/null)}" \
	TORCH_PYTHON="$${TORCH_PYTHON:-$$($(TORCH_PEER_PYTHON) -c 'import torch, numpy, sys; print(sys.executable)' 2>/dev/null)}" \
		$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check framework server exercises tutorials examples tests benchmarks
	$(BIN)/ruff format --check framework server exercises tutorials examples tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info
