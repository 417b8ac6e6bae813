#!/usr/bin/env bash
# The one set-up step behind `make run`, `make test` and `.ci/run`.
#
#   scripts/setup.sh          system packages, then the venv (.venv) and the web UI's libraries
#   scripts/setup.sh --test   the same, plus the MXNet 1.9.1 peer venv the compatibility tests use
#
# System packages come first because everything after needs them: Chromium (browser tests and
# screenshots; Playwright drives /usr/bin/chromium and never downloads a browser), Graphviz's
# `dot` (symbol graph rendering), g++ (custom-operator libraries), Node and npm (the web UI's
# pinned libraries). As root with apt-get they are installed; otherwise the script stops,
# before anything else, with the exact command to run.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_PEER=0
for arg in "$@"; do
    case "$arg" in
        --test) WITH_PEER=1 ;;
        *) echo "setup: unknown argument $arg (use --test or nothing)" >&2; exit 2 ;;
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

# ---------------------------------------------------------------- the MXNet peer (tests only)
# Real MXNet 1.9.1 in a venv of its own (its NumPy pin clashes with ours): the compatibility
# tests check that files written by MXLab load in MXNet itself. The Makefile's test target
# passes its interpreter to the tests as MXNET_PYTHON when it imports.
if [ "$WITH_PEER" = 1 ]; then
    PEER=.peers/mxvenv
    if ! "$PEER/bin/python" -c "import mxnet" 2>/dev/null; then
        echo "setup: installing MXNet 1.9.1 into $PEER for the compatibility tests"
        ("$PYTHON" -m venv "$PEER" && "$PEER/bin/pip" install --quiet --disable-pip-version-check \
            "mxnet==1.9.1" "numpy<1.24") ||
            echo "setup: could not install the MXNet peer (it needs Python <= 3.11 wheels); its tests will skip"
    fi
fi
