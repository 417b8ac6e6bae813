"""The tests' own imports point down: a test module imports helper modules, never a test module or a conftest.

Test modules (``test_*.py``) are the top of tests/: pytest collects them, and importing one from
another runs its module code twice under two names and ties two test files together. A piece that
two test files share belongs in a helper module beside them (``op_helpers.py``, ``api_coverage.py``,
``server/server_helpers.py``, ``kvstore/kvstore_helpers.py``, ``browser/browser_helpers.py``...);
a conftest holds fixtures, which pytest hands to tests by name, so nothing needs to import it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _is_test_or_conftest(module: str, level: int, stems: set[str]) -> bool:
    """Whether ``module`` (imported at relative ``level``) is a test module or a conftest of the tree.

    The test folders are on ``sys.path`` (pytest's rootdir-relative imports), so an absolute import
    of one of their files is a bare name (``test_api_names``); ``framework.test_utils`` is no test file.
    """
    if level == 0 and "." in module:
        return False
    leaf = module.rpartition(".")[2]
    return leaf in stems and (leaf.startswith("test_") or leaf == "conftest")


def upward_test_imports(root: Path = TESTS) -> list[str]:
    """One line, ``path:line: imports name``, per import of a test module or a conftest under ``root``."""
    files = sorted(p for p in root.rglob("*.py") if "node_modules" not in p.parts)
    stems = {p.stem for p in files}
    problems = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                level, modules = 0, [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                level, base = node.level, node.module or ""
                # ``from . import test_x`` names the module in the alias; ``from .test_x import y`` in the base
                modules = [base] if base else [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                if _is_test_or_conftest(module, level, stems):
                    where = path.relative_to(root).as_posix()
                    problems.append(f"{where}:{node.lineno}: imports {'.' * level}{module}")
    return problems


def test_no_test_module_or_conftest_is_imported():
    problems = upward_test_imports()
    assert not problems, (
        "imports of a test module or a conftest (move the shared piece into a helper module):\n" + "\n".join(problems)
    )


# ----------------------------------------------------------------------------- the checker, checked
@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from test_a import shared\n", ["b/test_b.py:1: imports test_a"]),
        ("import test_a\n", ["b/test_b.py:1: imports test_a"]),
        ("from .conftest import ROOT\n", ["b/test_b.py:1: imports .conftest"]),
        ("from . import test_a\n", ["b/test_b.py:1: imports .test_a"]),
        ("from helpers import shared\nimport test_unknown_package\nfrom framework import test_utils\n", []),
        ("import framework.test_a\n", []),
    ],
)
def test_the_checker_names_each_import_of_a_test_module_or_conftest(tmp_path, source, found):
    (tmp_path / "b").mkdir()
    (tmp_path / "test_a.py").write_text("shared = 1\n", encoding="utf-8")
    (tmp_path / "helpers.py").write_text("shared = 1\n", encoding="utf-8")
    (tmp_path / "b" / "conftest.py").write_text("ROOT = 1\n", encoding="utf-8")
    (tmp_path / "b" / "test_b.py").write_text(source, encoding="utf-8")
    assert upward_test_imports(tmp_path) == found
