"""The global flags (--data-dir, --json) work before and after every command: a subcommand's
default never overwrites a flag given before it (`frontdesk --data-dir X eval …` once indexed
into ./data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.__main__ import main
from app.cli_args import build_parser

# Every command with the smallest valid arguments.
COMMANDS = {
    "tenant create": ["tenant", "create", "t1", "--site", "https://example.com/"],
    "tenant list": ["tenant", "list"],
    "tenant delete": ["tenant", "delete", "t1"],
    "index": ["index", "t1", "folder", "--base-url", "https://example.com/"],
    "crawl": ["crawl", "t1"],
    "search": ["search", "t1", "query"],
    "ask": ["ask", "t1", "question"],
    "serve": ["serve"],
    "quickstart": ["quickstart"],
    "stats": ["stats", "t1"],
    "backup": ["backup", "t1", "dest.db"],
    "restore": ["restore", "t1", "src.db"],
    "reindex": ["reindex", "t1"],
    "mcp": ["mcp", "--tenant", "t1"],
    "eval --beir": ["eval", "--beir", "beir-dir"],
    "eval --golden": ["eval", "t1", "--golden", "golden.jsonl"],
}


def test_every_parsed_command_is_listed_here():
    """A new command joins the table above, so its flags are tested too."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    names = set(sub.choices)
    assert names == {argv[0] for argv in COMMANDS.values()}


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["before", "after"])
def test_global_flags_before_or_after_the_command(name, where):
    argv = COMMANDS[name]
    flags = ["--data-dir", "/tmp/elsewhere", "--json"]
    parsed = build_parser().parse_args(flags + argv if where == "before" else argv + flags)
    assert parsed.data_dir == Path("/tmp/elsewhere")
    assert parsed.json is True


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_without_flags_the_defaults_hold(name):
    parsed = build_parser().parse_args(COMMANDS[name])
    assert parsed.data_dir is None and parsed.json is False


@pytest.mark.parametrize("name", ["tenant list", "crawl", "eval --beir"])
def test_a_flag_after_the_command_wins_over_one_before(name):
    argv = COMMANDS[name]
    parsed = build_parser().parse_args(["--data-dir", "/tmp/first", *argv, "--data-dir", "/tmp/second"])
    assert parsed.data_dir == Path("/tmp/second")


def test_one_flag_before_and_the_other_after(tmp_path):
    parsed = build_parser().parse_args(["--data-dir", str(tmp_path), "stats", "t1", "--json"])
    assert parsed.data_dir == tmp_path and parsed.json is True
    parsed = build_parser().parse_args(["--json", "stats", "t1", "--data-dir", str(tmp_path)])
    assert parsed.data_dir == tmp_path and parsed.json is True


def test_the_work_lands_in_the_data_dir_given_before_the_command(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "chosen"
    code = main(["--data-dir", str(target), "--json", "tenant", "create", "acme", "--site",
                 "https://example.com/", "--model", "fake-hash-words"])
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["id"] == "acme"
    assert (target / "tenants" / "acme.db").exists()
    assert not (tmp_path / "data").exists()
    assert main(["--json", "--data-dir", str(target), "tenant", "list"]) == 0
    assert [t["id"] for t in json.loads(capsys.readouterr().out)["tenants"]] == ["acme"]


@pytest.fixture(autouse=True)
def _fake_model():
    import tests.fakes  # noqa: F401  (registers the fake embedder the CLI test creates a tenant with)
