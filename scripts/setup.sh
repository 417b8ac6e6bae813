#!/usr/bin/env bash
# The one set-up step behind `make run`, `make test` and `.ci/run`.
#
#   scripts/setup.sh          system packages, then the venv (.venv) and the web UI's libraries
#   scripts/setup.sh --test   the same, plus the MXNet 1.9.1 peer venv the compatibility tests use
#   scripts/setup.sh --bench  the same, plus both peers `make bench` measures beside MXLab: the
#                             MXNet 1.9.1 venv and a PyTorch 2.13.0 (CPU) venv (never for tests/CI)
#
# System packages come first because everything after needs them: Chromium (browser tests and
# screenshots; Playwright drives /usr/bin/chromium and never downloads a browser), Graphviz's
# `dot` (symbol graph rendering), g++ (custom-operator libraries), Node and npm (the web UI's
# pinned libraries). As root with apt-get they are installed; otherwise the script stops,
# before anything else, with the exact command to run.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_PEER=0
WITH_TORCH=0
for arg in "$@"; do
    case "$arg" in
        --test) WITH_PEER=1 ;;
        --bench) WITH_PEER=1; WITH_TORCH=1 ;;
        *) echo "setup: unknown argument $arg (use --test, --bench or nothing)" >&2; exit 2 ;;
    esac
done

# ---------------------------------------------------------------- system packages
# Each tool the project runs, and the Debian package that provides it.
NEED=()
command -v chromium >/dev/null || NEED+=(chromium)
command -v dot >/dev/null || NEED+=(graphviz)
command -v g++ >/dev/null || NEED+=(g++)
command -v node >/dev/null || NEED+=(nodejs)
command -v npm >/dev/null || NEED+=(npm)
if [ ${#NEED[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing ${NEED[*]} with apt-get"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${NEED[@]}" >/dev/null
    else
        echo "setup: missing system packages: ${NEED[*]}" >&2
        echo "setup: install them, then run this command again:" >&2
        echo "    sudo apt-get update && sudo apt-get install -y ${NEED[*]}" >&2
        exit 1
    fi
fi
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup: MXLab needs Python 3.11 or newer; $PYTHON is $("$PYTHON" --version 2>&1 || echo missing)" >&2
    echo "setup: install one and run: make PYTHON=python3.11 test" >&2
    exit 1
fi

# ---------------------------------------------------------------- the venv and the web UI
# The Makefile owns the stamp logic (reinstall when pyproject.toml or package-lock.json change).
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
make --no-print-directory PYTHON="$PYTHON" install

# ---------------------------------------------------------------- the MXNet peer (tests and benchmarks)
# Real MXNet 1.9.1 in a venv of its own (its NumPy pin clashes with ours): the compatibility
# tests check that files written by MXLab load in MXNet itself, and the benchmarks measure it
# beside MXLab. The Makefile's test and bench targets pass its interpreter on as MXNET_PYTHON
# when it imports.
if [ "$WITH_PEER" = 1 ]; then
    PEER=.peers/mxvenv
    if ! "$PEER/bin/python" -c "import mxnet" 2>/dev/null; then
        echo "setup: installing MXNet 1.9.1 into $PEER for the compatibility tests and benchmarks"
        ("$PYTHON" -m venv "$PEER" && "$PEER/bin/pip" install --quiet --disable-pip-version-check \
            "mxnet==1.9.1" "numpy<1.24") ||
            echo "setup: could not install the MXNet peer (it needs Python <= 3.11 wheels); its tests and benchmarks will skip"
    fi
fi

# ---------------------------------------------------------------- the PyTorch peer (benchmarks only)
# PyTorch 2.13.0 in a venv of its own, for the benchmarks that measure it beside MXLab (the
# Makefile's bench target passes its interpreter as TORCH_PYTHON when it imports), with NumPy
# (the peer scripts make the benchmarks' data with it) and threadpoolctl. Only the
# CPU build will do: pip resolves the pinned version first without installing anything
# (--dry-run --report), and a resolution that pulls in CUDA libraries (nvidia-* or triton
# packages, several GB) is refused before a byte of them is downloaded.
if [ "$WITH_TORCH" = 1 ]; then
    TORCH_PEER=.peers/torchvenv
    TORCH_PIN="torch==2.13.0"
    if ! "$TORCH_PEER/bin/python" -c "import torch, numpy, threadpoolctl" 2>/dev/null; then
        echo "setup: installing PyTorch 2.13.0 (CPU) into $TORCH_PEER for the benchmarks"
        REPORT="$(mktemp)"
        if "$PYTHON" -m venv "$TORCH_PEER" &&
            "$TORCH_PEER/bin/pip" install --quiet --disable-pip-version-check --dry-run --report "$REPORT" \
                "$TORCH_PIN" numpy threadpoolctl; then
            CUDA="$("$TORCH_PEER/bin/python" -c '
import json, sys
names = [p["metadata"]["name"].lower() for p in json.load(open(sys.argv[1]))["install"]]
print(" ".join(n for n in names if n.startswith("nvidia-") or n == "triton"))' "$REPORT")"
            if [ -n "$CUDA" ]; then
                echo "setup: not installing the PyTorch peer: pip would fetch the CUDA build of $TORCH_PIN" >&2
                echo "setup: (it needs $CUDA). Install the CPU-only build of $TORCH_PIN, numpy and threadpoolctl" >&2
                echo "setup: into $TORCH_PEER yourself (PyTorch's CPU wheel index); its benchmarks skip PyTorch until then" >&2
            else
                "$TORCH_PEER/bin/pip" install --quiet --disable-pip-version-check "$TORCH_PIN" numpy threadpoolctl ||
                    echo "setup: could not install the PyTorch peer; the benchmarks will skip PyTorch" >&2
            fi
        else
            echo "setup: could not install the PyTorch peer ($TORCH_PIN has no wheel for this Python or machine);" \
                "the benchmarks will skip PyTorch" >&2
        fi
        rm -f "$REPORT"
    fi
fi
