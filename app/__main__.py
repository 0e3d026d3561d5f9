"""The `frontdesk` command line: every command takes --data-dir and --json; progress goes to
stderr, results to stdout; exit 0 on success, 2 on bad usage, 1 on failure with a one-line reason."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from app.context import Context
from app.progress import Progress
from app.settings import Settings
from store.errors import FrontdeskError, InvalidInput

COMMANDS: dict[str, Callable[[Context, argparse.Namespace], object]] = {}


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn

    return register


def emit(args: argparse.Namespace, payload: object, text: str) -> None:
    if args.json:
        sys.stdout.write(msgspec.json.encode(payload).decode() + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")


@command("tenant create")
def tenant_create(ctx: Context, args: argparse.Namespace) -> None:
    tenant, admin_token = ctx.create_tenant(
        args.id, args.site, model=args.model, allow_private_network=args.allow_private_network
    )
    emit(
        args,
        {"id": tenant.id, "widget_key": tenant.widget_key, "admin_token": admin_token},
        f"created tenant {tenant.id}\nwidget key:  {tenant.widget_key}\n"
        f"admin token: {admin_token}   (shown once; keep it safe)\n"
        f"embed: <script src=\"{ctx.settings.base_url}/widget.js\" data-key=\"{tenant.widget_key}\" defer></script>",
    )


@command("tenant list")
def tenant_list(ctx: Context, args: argparse.Namespace) -> None:
    rows = []
    for tenant_id in ctx.registry.ids():
        try:
            info = msgspec.to_builtins(ctx.registry.get(tenant_id).info())
        except FrontdeskError as exc:
            info = {"id": tenant_id, "error": exc.code, "message": exc.message}
        rows.append(info)
    text = "\n".join(
        f"{r['id']}\t{r.get('site', '')}\t{r.get('embedder_id', r.get('error', ''))}" for r in rows
    ) or "no tenants"
    emit(args, {"tenants": rows}, text)


@command("tenant delete")
def tenant_delete(ctx: Context, args: argparse.Namespace) -> None:
    ctx.registry.delete(args.id)
    emit(args, {"deleted": args.id}, f"deleted tenant {args.id}")


@command("index")
def index_folder(ctx: Context, args: argparse.Namespace) -> None:
    from ingest.folder import index_folder as run

    tenant = ctx.tenant(args.id)
    progress = Progress(f"index {args.id}")
    summary = run(tenant, ctx.tenant_embedder(tenant), Path(args.dir), args.base_url,
                  on_progress=lambda done, total, url: progress.update(done, total, url))
    progress.finish()
    emit(args, summary, " ".join(f"{k}={v}" for k, v in msgspec.to_builtins(summary).items()))


@command("crawl")
def crawl_command(ctx: Context, args: argparse.Namespace) -> None:
    import asyncio

    from ingest.pipeline import CrawlOptions, crawl, summary_line

    tenant = ctx.tenant(args.id)
    embedder = ctx.tenant_embedder(tenant)
    progress = Progress(f"crawl {args.id}")
    options = CrawlOptions(full=args.full, reparse=args.reparse, max_pages=args.max_pages, rate=args.rate,
                           urls=args.url or None)

    def show(event) -> None:
        done = event.fetched + event.not_modified + event.unchanged + event.failed
        progress.update(done, done + event.queued if event.queued else None, summary_line(event))

    summary = asyncio.run(crawl(tenant, embedder, options, on_progress=show))
    progress.finish()
    data = msgspec.to_builtins(summary)
    emit(args, data, " ".join(f"{k}={v}" for k, v in data.items() if k not in ("skipped", "errors"))
         + (f"\nskipped: {data['skipped']}" if data["skipped"] else "")
         + (f"\nerrors: {data['errors']}" if data["errors"] else ""))
    if summary.status != "done":
        raise FrontdeskError(f"crawl {summary.status}")


@command("search")
def search_command(ctx: Context, args: argparse.Namespace) -> None:
    from store.search import Filters

    tenant = ctx.tenant(args.id)
    filters = Filters(url_prefix=args.url_prefix, kinds=args.kind or None, lang=args.lang)
    result = ctx.search(tenant, args.query, k=args.k, mode=args.mode, filters=filters, trace=args.trace)
    lines = []
    for i, hit in enumerate(result.hits, start=1):
        path = " > ".join(hit.heading_path)
        lines.append(f"{i:2}. {hit.score:.4f} sim={hit.similarity:.3f} {hit.url}\n    {hit.title} — {path}\n    "
                     + hit.text[:200].replace("\n", " "))
    emit(args, result, "\n".join(lines) or "no results")


@command("stats")
def stats_command(ctx: Context, args: argparse.Namespace) -> None:
    from store.pages import stats

    tenant = ctx.registry.get(args.id)
    result = stats(tenant.reader(), file_bytes=tenant.path.stat().st_size)
    data = msgspec.to_builtins(result)
    emit(args, data, "\n".join(f"{k}: {json.dumps(v)}" for k, v in data.items()))


@command("ask")
def ask_command(ctx: Context, args: argparse.Namespace) -> None:
    import asyncio

    from app.answer import Answerer
    from app.cache import AnswerCache
    from app.events import ChatRequest, PageContext
    from app.metrics import Metrics
    from app.providers import make_provider

    tenant = ctx.tenant(args.id)
    settings = ctx.settings
    provider = make_provider(settings.llm_base_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout)
    answerer = Answerer(ctx, provider, AnswerCache(16, 0), Metrics())
    page = PageContext(url=args.page_url) if args.page_url else None
    request = ChatRequest(key=tenant.widget_key, question=args.question, page=page)
    result: dict = {"answer": "", "citations": [], "actions": []}

    async def run() -> None:
        from app.answer import check_question

        request.question = check_question(request.question, settings.max_question_chars)
        async for event in answerer.stream(tenant, request):
            data = msgspec.to_builtins(event)
            name = type(event).__name__
            if name == "TokenEvent":
                result["answer"] += event.text
                if not args.json:
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
            elif name == "MetaEvent":
                result.update(confidence=data["confidence"], lang=data["lang"], answered=data["answered"],
                              source=data["source"], conversation_id=data["conversation_id"])
            elif name == "CitationsEvent":
                result["citations"] = data["citations"]
            elif name == "ActionsEvent":
                result["actions"] = data["actions"]
            elif name == "DoneEvent":
                result.update(message_id=data["message_id"], latency_ms=data["latency_ms"], ttft_ms=data["ttft_ms"])
        await answerer.drain()
        await provider.aclose()

    asyncio.run(run())
    if args.json:
        emit(args, result, "")
    else:
        lines = [""] + [f"[{i}] {c['title']} — {c['url']}" for i, c in enumerate(result["citations"], start=1)]
        lines.append(f"(confidence {result.get('confidence', 0):.2f}, {result.get('source')}, {result.get('latency_ms')} ms)")
        sys.stdout.write("\n".join(lines) + "\n")


@command("serve")
def serve_command(ctx: Context, args: argparse.Namespace) -> None:
    serve(ctx.settings, host=args.host, port=args.port)


def serve(settings: Settings, *, host: str | None = None, port: int | None = None) -> None:
    """Run the app under granian in this process's foreground until interrupted."""
    import os

    from granian import Granian
    from granian.constants import Interfaces

    host = host or settings.host
    port = port or settings.port
    os.environ["FRONTDESK_DATA_DIR"] = str(Path(settings.data_dir).resolve())
    os.environ["FRONTDESK_HOST"] = host
    os.environ["FRONTDESK_PORT"] = str(port)
    sys.stderr.write(f"frontdesk: serving on http://{host}:{port} (data in {settings.data_dir})\n")
    Granian("app.asgi:app_from_env", factory=True, address=host, port=port, interface=Interfaces.ASGI,
            workers=1, log_access=False).serve()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", type=Path, default=None,
                        help="tenant data directory (default $FRONTDESK_DATA_DIR or ./data)")
    common.add_argument("--json", action="store_true", help="print one JSON document on stdout")

    parser = argparse.ArgumentParser(prog="frontdesk", description=__doc__, parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)

    tenant = sub.add_parser("tenant", help="create, list or delete tenants", parents=[common])
    tenant_sub = tenant.add_subparsers(dest="action", required=True)
    create = tenant_sub.add_parser("create", parents=[common], help="create a tenant")
    create.add_argument("id")
    create.add_argument("--site", required=True, help="the site's base URL")
    create.add_argument("--model", default=None, help="embedding model id")
    create.add_argument("--allow-private-network", action="store_true",
                        help="let the crawler fetch loopback/private addresses (local sites)")
    tenant_sub.add_parser("list", parents=[common], help="list tenants")
    delete = tenant_sub.add_parser("delete", parents=[common], help="delete a tenant and its file")
    delete.add_argument("id")

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

    stats = sub.add_parser("stats", parents=[common], help="pages, chunks and crawl state of a tenant")
    stats.add_argument("id")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    name = args.command + (f" {args.action}" if getattr(args, "action", None) else "")
    try:
        settings = Settings.from_env(data_dir=args.data_dir)
        ctx = Context(settings)
        try:
            COMMANDS[name](ctx, args)
        finally:
            ctx.close()
    except InvalidInput as exc:
        sys.stderr.write(f"frontdesk: {exc.message}\n")
        return 2
    except FrontdeskError as exc:
        sys.stderr.write(f"frontdesk: {exc.message}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("frontdesk: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
