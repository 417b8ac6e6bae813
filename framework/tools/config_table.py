"""Print the README's Configuration table from :data:`framework.config.SETTINGS`, or rewrite it.

``python -m framework.tools.config_table`` prints the Markdown table;
``python -m framework.tools.config_table --write README.md`` replaces the table between the
README's ``<!-- config-table -->`` markers, so the documented variables, defaults and meanings
are always the ones the code reads (``tests/test_config.py`` fails when they differ).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import markdown_table

START = "<!-- config-table:start -->"
END = "<!-- config-table:end -->"


class MarkerError(ValueError):
    """The file does not hold exactly one pair of markers."""


def documented_table(text: str, start: str = START, end: str = END) -> str:
    """The text between the ``start`` and ``end`` marker lines of ``text`` (without the markers)."""
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise MarkerError(f"expected one {start} line followed by one {end} line")
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def with_table(text: str, table: str, start: str = START, end: str = END) -> str:
    """``text`` with what stands between its markers replaced by ``table``."""
    documented_table(text, start, end)  # checks the markers
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    return f"{before}{start}\n{table}\n{end}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--write", metavar="FILE", help="replace the table between FILE's markers")
    args = parser.parse_args(argv)
    if args.write is None:
        print(markdown_table())
        return 0
    path = Path(args.write)
    path.write_text(with_table(path.read_text(encoding="utf-8"), markdown_table()), encoding="utf-8")
    print(f"wrote the configuration table into {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
