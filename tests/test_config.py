"""framework.config: one table of environment variables, one parser, MXNet's names as aliases.

Also checks that the README's Configuration table is the table, and that no module in
framework/, server/ or exercises/ reads an MXLab or MXNet variable around the parser.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import framework as mx
from framework import config
from framework.base import MXLabError
from framework.config import SETTINGS, Boolean, Choice, ConfigError, Integer, Number, Text
from framework.module import aggregation
from framework.module.base_module import progress_enabled
from framework.tools.config_table import MarkerError, documented_table, with_table

ROOT = Path(__file__).resolve().parents[1]

#: One malformed value per kind of setting.
MALFORMED = {Integer: "three", Number: "soon", Choice: "Turbo", Boolean: "garbage"}


@pytest.fixture
def clean_env(monkeypatch):
    """No MXLab setting and no MXNet alias set, whatever the shell running the tests has."""
    for row in SETTINGS.values():
        for variable, _ in row.sources():
            monkeypatch.delenv(variable, raising=False)
    return monkeypatch


# ----------------------------------------------------------------------------- the parser
def test_unset_and_blank_values_give_the_default(clean_env):
    for name, row in SETTINGS.items():
        assert config.get(name) == row.default, name
        clean_env.setenv(name, "  ")
        assert config.get(name) == row.default, name
        assert not config.is_set(name)


@pytest.mark.parametrize("name", [n for n, row in SETTINGS.items() if type(row.kind) in MALFORMED])
def test_a_malformed_value_is_an_error_naming_the_variable_and_what_it_accepts(clean_env, name):
    row = SETTINGS[name]
    bad = MALFORMED[type(row.kind)]
    clean_env.setenv(name, bad)
    with pytest.raises(ConfigError) as caught:
        config.get(name)
    message = str(caught.value)
    assert message == f"environment variable {name} must be {row.kind.describe()}, got {bad!r}"
    assert isinstance(caught.value, MXLabError) and isinstance(caught.value, ValueError)


def test_each_kind_parses_and_checks_its_range():
    assert Integer(minimum=1).parse("7") == 7
    assert Integer(minimum=0, maximum=48).describe() == "an integer from 0 to 48"
    for kind, text in [
        (Integer(minimum=1), "0"),
        (Integer(minimum=0, maximum=48), "49"),
        (Integer(), "1.5"),
        (Number(above=0.0), "-1"),
        (Number(above=0.0), "inf"),
        (Number(above=0.0), "nan"),
        (Choice(("Round", "Naive")), "round"),  # case-sensitive, as MXNet's
        (Boolean(), "2"),
        (Boolean(), "y"),
    ]:
        with pytest.raises(ValueError):
            kind.parse(text)
    assert Number(above=0.0).parse("2.5") == 2.5
    assert Text().parse("ns-1") == "ns-1"


@pytest.mark.parametrize(
    ("text", "value"),
    [(w, True) for w in ("1", "true", "YES", "On")] + [(w, False) for w in ("0", "False", "no", "OFF")],
)
def test_booleans_accept_one_rule_in_any_letter_case(clean_env, text, value):
    clean_env.setenv("MXLAB_EXEC_ENABLE_INPLACE", f" {text} ")
    assert config.get("MXLAB_EXEC_ENABLE_INPLACE") is value


def test_update_on_kvstore_off_turns_the_update_off(clean_env):
    # It used to count anything but 0/false/False as on, so "off" turned the update on.
    params = {"w": mx.nd.ones((2, 2))}
    _, on_store = aggregation.create_kvstore("local", 2, params)
    assert on_store
    clean_env.setenv("MXLAB_UPDATE_ON_KVSTORE", "off")
    kv, on_store = aggregation.create_kvstore("local", 2, params)
    assert kv is not None and not on_store
    clean_env.setenv("MXLAB_UPDATE_ON_KVSTORE", "maybe")
    with pytest.raises(ConfigError, match="MXLAB_UPDATE_ON_KVSTORE must be a boolean"):
        aggregation.create_kvstore("local", 2, params)


def test_progress_garbage_is_an_error_not_unset(clean_env):
    assert progress_enabled(None) is None
    clean_env.setenv("MXLAB_PROGRESS", "off")
    assert progress_enabled(None) is False
    clean_env.setenv("MXLAB_PROGRESS", "garbage")
    with pytest.raises(ConfigError, match="MXLAB_PROGRESS must be a boolean .*got 'garbage'"):
        progress_enabled(None)
    assert progress_enabled(True) is True  # the argument wins without reading the variable


def test_reading_a_variable_outside_the_table_is_refused():
    with pytest.raises(ConfigError, match="MXLAB_TURBO is not an MXLab setting"):
        config.get("MXLAB_TURBO")


# ----------------------------------------------------------------------------- MXNet's names
def test_an_mxnet_name_is_read_when_the_mxlab_name_is_unset_and_loses_when_both_are(clean_env):
    clean_env.setenv("MXNET_CPU_WORKER_NTHREADS", "5")
    assert config.get("MXLAB_CPU_WORKER_NTHREADS") == 5 and config.is_set("MXLAB_CPU_WORKER_NTHREADS")
    clean_env.setenv("MXLAB_CPU_WORKER_NTHREADS", "3")
    assert config.get("MXLAB_CPU_WORKER_NTHREADS") == 3
    clean_env.setenv("MXNET_CPU_WORKER_NTHREADS", "garbage")  # not read: the MXLab name wins
    assert config.get("MXLAB_CPU_WORKER_NTHREADS") == 3
    clean_env.delenv("MXLAB_CPU_WORKER_NTHREADS")
    with pytest.raises(ConfigError, match=r"MXNET_CPU_WORKER_NTHREADS \(MXNet's name for MXLAB_CPU_WORKER_NTHREADS\)"):
        config.get("MXLAB_CPU_WORKER_NTHREADS")


def test_another_environment_is_read_like_this_one(clean_env):
    clean_env.setenv("MXLAB_CPU_WORKER_NTHREADS", "7")  # this process's value does not leak into the other
    child = {"MXNET_CPU_WORKER_NTHREADS": "4", "MXLAB_BLAS_THREADS": " "}
    assert config.get("MXLAB_CPU_WORKER_NTHREADS", child) == 4
    assert config.is_set("MXLAB_CPU_WORKER_NTHREADS", child)
    assert not config.is_set("MXLAB_BLAS_THREADS", child) and config.get("MXLAB_BLAS_THREADS", child) == 0
    assert config.get("MXLAB_CPU_WORKER_NTHREADS", {}) == 2
    with pytest.raises(ConfigError, match=r"MXNET_CPU_WORKER_NTHREADS \(MXNet's name for MXLAB_CPU_WORKER_NTHREADS\)"):
        config.get("MXLAB_CPU_WORKER_NTHREADS", {"MXNET_CPU_WORKER_NTHREADS": "0"})


def test_mxnet_engine_type_chooses_the_default_engine(clean_env):
    clean_env.setenv("MXNET_ENGINE_TYPE", "NaiveEngine")
    engine = mx.engine.create()
    assert isinstance(engine, mx.engine.NaiveEngine)
    engine.stop()


def test_mxnet_names_without_an_mxlab_setting_are_ignored(clean_env):
    clean_env.setenv("MXNET_SAFE_ACCUMULATION", "1")
    clean_env.setenv("MXNET_ENGINE_INFO", "garbage")
    assert all(config.get(name) == row.default for name, row in SETTINGS.items())
    known = {row.mxnet for row in SETTINGS.values()}
    assert "MXNET_SAFE_ACCUMULATION" not in known and "MXNET_ENGINE_INFO" not in known


def test_aliases_are_unique_and_never_mxlab_names():
    aliases = [row.mxnet for row in SETTINGS.values() if row.mxnet]
    assert len(aliases) == len(set(aliases))
    assert not set(aliases) & set(SETTINGS)
    assert all(row.mxnet_kind is None or row.mxnet for row in SETTINGS.values())


# ----------------------------------------------------------------------------- the README
def readme_rows(table: str) -> dict[str, str]:
    rows = {}
    for line in table.splitlines()[2:]:
        name = re.match(r"\| `([A-Z_]+)` \|", line)
        assert name, f"README configuration row not understood: {line!r}"
        rows[name.group(1)] = line
    return rows


def test_the_readme_table_is_the_settings_table():
    documented = documented_table((ROOT / "README.md").read_text(encoding="utf-8"))
    generated = config.markdown_table()
    readme, table = readme_rows(documented), readme_rows(generated)
    assert sorted(set(readme) - set(table)) == [], "README rows for variables the code does not read"
    assert sorted(set(table) - set(readme)) == [], "variables missing from the README"
    changed = [name for name in table if readme[name] != table[name]]
    assert changed == [], "default, accepted values or meaning differ; run python -m framework.tools.config_table"
    assert documented == generated, "rows in another order; run python -m framework.tools.config_table --write"


def test_the_table_tool_rewrites_between_the_markers_only():
    text = "intro\n<!-- config-table:start -->\nold\n<!-- config-table:end -->\noutro\n"
    assert with_table(text, "new") == "intro\n<!-- config-table:start -->\nnew\n<!-- config-table:end -->\noutro\n"
    with pytest.raises(MarkerError, match="expected one"):
        documented_table("no markers here")


# ----------------------------------------------------------------------------- nobody reads around it
def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments (how ENV_RANK and friends are spelled)."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node.value.value
    return names


def _environ_reads(tree: ast.Module) -> list[tuple[int, ast.expr]]:
    """(line, key expression) of every read of one environment variable."""

    def is_environ(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    reads = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and is_environ(func.value):
                reads.append((node.lineno, node.args[0]))
            elif isinstance(func, ast.Attribute) and func.attr == "getenv":
                reads.append((node.lineno, node.args[0]))
        elif isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
            reads.append((node.lineno, node.slice))
        elif isinstance(node, ast.Compare) and any(is_environ(c) for c in node.comparators):
            reads.append((node.lineno, node.left))
    return reads


def _settings_name(key: ast.expr, strings: dict[str, str]) -> bool:
    """Whether ``key`` spells (or builds) an MXLab or MXNet variable name."""
    if isinstance(key, ast.Name):
        text = strings.get(key.id, key.id)
    else:
        text = ast.unparse(key)
    return bool(re.search(r"(MXLAB|MXNET|NNVM)_", text))


def test_no_module_reads_a_setting_around_the_parser():
    bypasses = []
    for folder in ("framework", "server", "exercises"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "framework" / "config.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            strings = _module_strings(tree)
            for line, key in _environ_reads(tree):
                if _settings_name(key, strings):
                    bypasses.append(f"{path.relative_to(ROOT)}:{line}")
    assert bypasses == [], "read these through framework.config.get"


def test_the_bypass_detector_sees_each_form_of_read():
    source = (
        'import os\nENV = "MXLAB_X"\nos.environ.get("MXLAB_A")\nos.getenv("MXNET_B")\nos.environ[ENV]\n'
        '"MXLAB_C" in os.environ\nos.environ.get(f"MXLAB_{kind}_D")\nos.environ.get("PYTHONPATH")\n'
        'os.environ["MXLAB_E"] = "1"\n'
    )
    tree = ast.parse(source)
    strings = _module_strings(tree)
    flagged = [line for line, key in _environ_reads(tree) if _settings_name(key, strings)]
    assert flagged == [3, 4, 5, 6, 7]  # not PYTHONPATH, not the write
