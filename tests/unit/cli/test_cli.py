"""Every ``tandem`` command parses, has help, and dispatches to a handler."""

from __future__ import annotations

import argparse

import pytest

from services.cli._main import _parser


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser)]
    leaves = []
    for name, child in subs[0].choices.items():
        leaves.extend(_leaves(child, (*path, name)))
    return leaves


LEAVES = _leaves(_parser())


def test_the_command_tree_is_not_empty() -> None:
    names = {" ".join(path) for path, _ in LEAVES}
    assert {"run", "bench embed", "eval sql"} <= names


@pytest.mark.parametrize(("path", "leaf"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_every_command_has_help_and_a_handler(
    path: tuple[str, ...], leaf: argparse.ArgumentParser
) -> None:
    assert leaf.format_help().strip()
    assert callable(leaf.get_default("handler")), f"tandem {' '.join(path)} has no handler"


def test_a_missing_subcommand_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(["bench"])
    assert exit_info.value.code == 2
