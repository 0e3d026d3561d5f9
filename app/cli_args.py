"""The `frontdesk` command line's arguments: every command's flags, and the --data-dir and --json
that each takes before or after its name. `app/__main__.py` runs the commands."""

from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = """The `frontdesk` command line: every command takes --data-dir and --json; progress goes to
stderr, results to stdout; exit 0 on success, 2 on bad usage, 1 on failure with a one-line reason."""


def global_flags(*, defaults: bool) -> argparse.ArgumentParser:
    """--data-dir and --json, which every command takes before or after its name.

    Only the top-level parser has real defaults. A subcommand's parser writes its values over the
    top level's namespace, so there the flags default to SUPPRESS: a flag left out after the
    command keeps the value given before it (`frontdesk --data-dir X eval …`), a flag given after
    it wins."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--data-dir", type=Path, default=None if defaults else argparse.SUPPRESS,
                       help="tenant data directory (default $FRONTDESK_DATA_DIR or ./data)")
    flags.add_argument("--json", action="store_true", default=False if defaults else argparse.SUPPRESS,
                       help="print one JSON document on stdout")
    return flags


def build_parser() -> argparse.ArgumentParser:
    common = global_flags(defaults=False)
    parser = argparse.ArgumentParser(prog="frontdesk", description=DESCRIPTION, parents=[global_flags(defaults=True)])
    sub = parser.add_subparsers(dest="command", required=True)

    tenant = sub.add_parser("tenant", help="create, list, delete, export or import tenants", parents=[common])
    tenant_sub = tenant.add_subparsers(dest="action", required=True)
    create = tenant_sub.add_parser("create", parents=[common], help="create a tenant")
    create.add_argument("id")
    create.add_argument("--site", required=True, help="the site's base URL")
    create.add_argument("--model", default=None, help="embedding model id")
    create.add_argument("--allow-private-network", action="store_true",
                        help="let the crawler fetch loopback/private addresses (local sites)")
    tenant_sub.add_parser("list", parents=[common], help="list tenants")
    delete = tenant_sub.add_parser("delete", parents=[common],
                                   help="delete a tenant and its file (or its PostgreSQL schema)")
    delete.add_argument("id")
    export = tenant_sub.add_parser("export", parents=[common],
                                   help="write a tenant as a standalone SQLite tenant file (from PostgreSQL "
                                        "when FRONTDESK_DATABASE_URL is set)")
    export.add_argument("id")
    export.add_argument("file", help="the SQLite file to write (replaced atomically)")
    load = tenant_sub.add_parser("import", parents=[common],
                                 help="load an SQLite tenant file as a new tenant (into PostgreSQL when "
                                      "FRONTDESK_DATABASE_URL is set)")
    load.add_argument("id")
    load.add_argument("file", help="an exported or backed-up tenant file of this tenant")

    index = sub.add_parser("index", parents=[common], help="index a folder of HTML files (no crawling)")
    index.add_argument("id")
    index.add_argument("dir")
    index.add_argument("--base-url", required=True, help="URL the folder is published at")

    crawl = sub.add_parser("crawl", parents=[common], help="crawl a tenant's site (delta by default)")
    crawl.add_argument("id")
    crawl.add_argument("--full", action="store_true", help="refetch every page (content hashes still decide)")
    crawl.add_argument("--reparse", action="store_true", help="rebuild chunks from cached HTML, no network")
    crawl.add_argument("--max-pages", type=int, default=None)
    crawl.add_argument("--rate", type=float, default=None, help="requests/s per host (0 = no limit)")
    crawl.add_argument("--url", action="append", help="refresh only this URL (repeatable)")

    search = sub.add_parser("search", parents=[common], help="hybrid search a tenant")
    search.add_argument("id")
    search.add_argument("query")
    search.add_argument("--k", type=int, default=10)
    search.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default="hybrid")
    search.add_argument("--lang", default=None)
    search.add_argument("--kind", action="append", choices=["prose", "fact", "faq", "form", "action"])
    search.add_argument("--url-prefix", default=None)
    search.add_argument("--trace", action="store_true", help="include each stage's candidates")

    ask = sub.add_parser("ask", parents=[common], help="ask a tenant a question (the full answer pipeline)")
    ask.add_argument("id")
    ask.add_argument("question")
    ask.add_argument("--page-url", default=None, help="answer as if asked on this page")

    serve_parser = sub.add_parser("serve", parents=[common], help="run the HTTP server (granian)")
    serve_parser.add_argument("--host", default=None)
    serve_parser.add_argument("--port", type=int, default=None)
    serve_parser.add_argument("--workers", type=int, default=None,
                              help="worker processes (default $FRONTDESK_WORKERS, else 0 = one per core as memory "
                                   "allows)")

    quick = sub.add_parser("quickstart", parents=[common],
                           help="crawl the bundled sample site and serve it with the widget")
    quick.add_argument("--port", type=int, default=None, help="frontdesk port (default 8000, or a free one)")
    quick.add_argument("--no-serve", action="store_true", help="crawl and print, but do not start the server")

    stats = sub.add_parser("stats", parents=[common], help="pages, chunks and crawl state of a tenant")
    stats.add_argument("id")

    backup = sub.add_parser("backup", parents=[common],
                            help="copy a tenant's file while the server runs (SQLite online backup)")
    backup.add_argument("id")
    backup.add_argument("dest", help="the backup file (or a folder: a dated file inside it)")

    restore = sub.add_parser("restore", parents=[common], help="replace a tenant's file with a backup")
    restore.add_argument("id")
    restore.add_argument("src", help="a backup file, or a copy of a stopped server's <id>.db")
    restore.add_argument("--allow-other-model", action="store_true",
                         help="accept a backup made with another embedding model (then run reindex)")

    reindex = sub.add_parser("reindex", parents=[common],
                             help="rebuild a tenant's vectors (or switch its embedding model)")
    reindex.add_argument("id")
    reindex.add_argument("--model", default=None, help="switch to this embedding model")
    reindex.add_argument("--batch", type=int, default=64, help="chunks embedded per batch")

    mcp = sub.add_parser("mcp", parents=[common], help="serve a tenant to LLM agents over MCP (stdio)")
    mcp.add_argument("--tenant", required=True)

    evaluate = sub.add_parser("eval", parents=[common],
                              help="measure retrieval on a BEIR dataset, or a tenant on a golden question set")
    evaluate.add_argument("id", nargs="?", default=None, help="tenant to evaluate (with --golden)")
    evaluate.add_argument("--golden", default=None, metavar="FILE.jsonl",
                          help='questions, one JSON a line: {"q", "expect_url", "a_contains", "lang", "kind"}')
    evaluate.add_argument("--beir", default=None, metavar="DIR",
                          help="a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), indexed once "
                               "per model into DATA_DIR/eval-cache")
    evaluate.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default=None,
                          help="with --beir: one search mode (default: all three)")
    evaluate.add_argument("--model", default=None, help="with --beir: embedding model (default: the server default)")
    evaluate.add_argument("--split", default="test", help="with --beir: qrels split")
    evaluate.add_argument("--rebuild", action="store_true", help="with --beir: re-embed even if cached")
    return parser
