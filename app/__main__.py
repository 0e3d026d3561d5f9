"""The `frontdesk` command line: every command takes --data-dir and --json; progress goes to
stderr, results to stdout; exit 0 on success, 2 on bad usage, 1 on failure with a one-line reason."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from app.cli_args import build_parser
from app.context import Context
from app.progress import Progress
from app.settings import Settings
from app.workers import limit_malloc_arenas
from store.errors import FrontdeskError, InvalidConfig, InvalidInput
from store.tenants import TenantRegistry, validate_tenant_id

if TYPE_CHECKING:
    from store.pg.tenants import PgTenants
    from store.search import Mode

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
    """The tenants of the configured backend: the SQLite files, or PostgreSQL's schemas."""
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
    """Delete a tenant from the configured backend: its SQLite file, or its PostgreSQL schema,
    role and crawl lease."""
    ctx.registry.delete(validate_tenant_id(args.id))
    postgres = ctx.registry.backend == "postgres"
    emit(args, {"deleted": args.id, "backend": ctx.registry.backend},
         f"deleted tenant {args.id}{' from PostgreSQL' if postgres else ''}")


@command("index")
def index_folder(ctx: Context, args: argparse.Namespace) -> None:
    from ingest.folder import index_folder as run

    tenant = ctx.tenant(args.id)
    progress = Progress(f"index {args.id}")
    summary = run(tenant, ctx.tenant_embedder(tenant), Path(args.dir), args.base_url,
                  on_progress=lambda done, total, url: progress.update(done, total, url))
    progress.finish()
    emit(args, summary, " ".join(f"{k}={v}" for k, v in msgspec.to_builtins(summary).items()))


def show_crawl(progress: Progress, event) -> None:
    """Pages taken from the queue so far, of those plus the ones still queued."""
    from ingest.crawl_report import summary_line

    progress.update(event.found, event.found + event.queued, summary_line(event))


@command("crawl")
def crawl_command(ctx: Context, args: argparse.Namespace) -> None:
    import asyncio

    from ingest.crawl_report import page_limit_notice
    from ingest.pipeline import CrawlOptions, crawl

    tenant = ctx.tenant(args.id)
    embedder = ctx.tenant_embedder(tenant)
    progress = Progress(f"crawl {args.id}")
    options = CrawlOptions(full=args.full, reparse=args.reparse, max_pages=args.max_pages, rate=args.rate,
                           urls=args.url or None)

    summary = asyncio.run(crawl(tenant, embedder, options, on_progress=lambda event: show_crawl(progress, event),
                                page_processes=ctx.settings.page_processes))
    progress.finish()
    data = msgspec.to_builtins(summary)
    emit(args, data, " ".join(f"{k}={v}" for k, v in data.items() if k not in ("skipped", "errors", "junk"))
         + (f"\nskipped: {data['skipped']}" if data["skipped"] else "")
         + (f"\njunk kept out: {data['junk']}" if data["junk"] else "")
         + (f"\nerrors: {data['errors']}" if data["errors"] else ""))
    if summary.page_limit:
        sys.stderr.write(page_limit_notice(summary.page_limit, summary.skipped.get("max_pages", 0)) + "\n")
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
    if result.trace is not None:
        timings = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in result.trace.timings_ms.items())
        lines.append(f"trace: FTS {result.trace.fts_query or '(none)'}; {timings}")
    if result.coverage is not None:
        unknown = ", ".join(result.coverage.unknown) or "none"
        lines.append(f"words the site does not use: {unknown} (coverage {result.coverage.share:.2f})")
    emit(args, result, "\n".join(lines) or "no results")


@command("stats")
def stats_command(ctx: Context, args: argparse.Namespace) -> None:
    tenant = ctx.registry.get(args.id)
    pages = tenant.store.pages
    with tenant.reading() as conn:
        result = pages.stats(conn, file_bytes=tenant.size_bytes())
        render = pages.render_stats(conn)  # which pages needed a browser (crawl.render)
        junk = pages.junk_summary(conn)
    data = msgspec.to_builtins(result)
    data["render"] = render
    lines = [f"{k}: {json.dumps(v)}" for k, v in data.items()]
    lines.append(f"junk: {junk.total} URLs kept out of the index {json.dumps(junk.by_reason)}")
    lines += [f"  {f.family}: {f.urls} ({f.reason}, {f.fetched} fetched) — {f.detail}" for f in junk.families]
    data["junk"] = msgspec.to_builtins(junk)
    emit(args, data, "\n".join(lines))


@command("ask")
def ask_command(ctx: Context, args: argparse.Namespace) -> None:
    import asyncio

    from app.events import ChatRequest, PageContext
    from app.stack import answer_stack

    tenant = ctx.tenant(args.id)
    settings = ctx.settings
    page = PageContext(url=args.page_url) if args.page_url else None
    request = ChatRequest(key=tenant.widget_key, question=args.question, page=page)

    def show(text: str) -> None:
        if not args.json:
            sys.stdout.write(text)
            sys.stdout.flush()

    async def run():
        from app.question import check_question

        request.question = check_question(request.question, settings.max_question_chars)
        async with answer_stack(ctx) as stack:
            return await stack.answerer.answer(tenant, request, on_token=show)

    result = asyncio.run(run())
    if args.json:
        emit(args, result, "")
    else:
        lines = [""] + [f"[{i}] {c.title} — {c.url}" for i, c in enumerate(result.citations, start=1)]
        lines.append(f"(confidence {result.confidence:.2f}, {result.source}, {result.latency_ms} ms)")
        sys.stdout.write("\n".join(lines) + "\n")


def _database_url(ctx: Context) -> str:
    """FRONTDESK_DATABASE_URL: the PostgreSQL backend's, or empty for the SQLite files."""
    return ctx.settings.database_url.strip()


def _files(ctx: Context) -> TenantRegistry:
    """The SQLite tenant files: what the SQLite-only commands (backup, restore) work on."""
    if isinstance(ctx.registry, TenantRegistry):
        return ctx.registry
    raise InvalidConfig("this command works on the SQLite tenant files; unset FRONTDESK_DATABASE_URL")


def _pg_tenants(ctx: Context) -> PgTenants:
    from store.pg.registry import PgTenantRegistry

    assert isinstance(ctx.registry, PgTenantRegistry)  # FRONTDESK_DATABASE_URL is set
    return ctx.registry.tenants


@command("tenant export")
def tenant_export(ctx: Context, args: argparse.Namespace) -> None:
    """A tenant as one standalone SQLite tenant file, from whichever backend holds it."""
    from store.pg.portable import export_sqlite

    url = _database_url(ctx)
    if url:
        from store.pg.transfer import export_postgres

        info = export_postgres(_pg_tenants(ctx), args.id, Path(args.file))
    else:
        info = export_sqlite(_files(ctx), args.id, Path(args.file))
    emit(args, info, f"exported tenant {args.id} from {'PostgreSQL' if url else 'its SQLite file'} to "
                     f"{info.path}: {info.pages} pages, {info.chunks} chunks, {info.vectors} vectors")


@command("tenant import")
def tenant_import(ctx: Context, args: argparse.Namespace) -> None:
    """An SQLite tenant file loaded into the configured backend as a new tenant."""
    from store.pg.portable import import_sqlite

    url = _database_url(ctx)
    if url:
        from store.pg.transfer import import_postgres

        info = import_postgres(_pg_tenants(ctx), args.id, Path(args.file))
    else:
        info = import_sqlite(_files(ctx), args.id, Path(args.file))
    skipped = "".join(f"\nnot imported (a table this build does not know): {n} {table} rows"
                      for table, n in info.not_imported.items())
    emit(args, info, f"imported tenant {args.id} into {'PostgreSQL' if url else 'a SQLite file'}: "
                     f"{info.pages} pages, {info.chunks} chunks, {info.vectors} vectors{skipped}")


@command("backup")
def backup_command(ctx: Context, args: argparse.Namespace) -> None:
    import time

    from store.backup import backup
    from store.errors import TenantNotFound

    source = _files(ctx).path(args.id)
    if not source.exists():
        raise TenantNotFound(f"tenant {args.id} does not exist")
    dest = Path(args.dest)
    if dest.is_dir():  # a folder: a dated file inside it
        dest = dest / f"{args.id}-{time.strftime('%Y%m%dT%H%M%S')}.db"
    info = backup(source, dest)
    emit(args, info, f"backed up tenant {args.id} to {info.path} ({info.bytes} bytes) in {info.seconds} s")


@command("restore")
def restore_command(ctx: Context, args: argparse.Namespace) -> None:
    from store.backup import restore

    info = restore(_files(ctx), args.id, Path(args.src), allow_other_model=args.allow_other_model)
    checked = info.verified
    emit(args, info, f"restored tenant {args.id} from {info.source}: {checked.pages} pages, {checked.chunks} "
                     f"chunks, model {checked.embedder_id}")


@command("reindex")
def reindex_command(ctx: Context, args: argparse.Namespace) -> None:
    from app.reindex import reindex

    progress = Progress(f"reindex {args.id}")
    summary = reindex(ctx, args.id, model=args.model, batch=args.batch,
                      on_progress=lambda done, total: progress.update(done, total))
    progress.finish()
    switched = f" (was {summary.previous_model})" if summary.previous_model != summary.model else ""
    emit(args, summary, f"reindexed tenant {args.id}: {summary.chunks} chunks with {summary.model}{switched}, "
                        f"{summary.dim}-d, in {summary.seconds} s")


@command("mcp")
def mcp_command(ctx: Context, args: argparse.Namespace) -> None:
    import anyio

    from app.mcp import serve_stdio

    anyio.run(serve_stdio, ctx, args.tenant)


@command("eval")
def eval_command(ctx: Context, args: argparse.Namespace) -> None:
    """`eval --beir DIR`: retrieval metrics on a BEIR dataset; `eval ID --golden FILE`: a tenant."""
    from app import eval as evaluate

    if bool(args.beir) == bool(args.golden):
        raise InvalidInput("use `frontdesk eval --beir DIR` or `frontdesk eval ID --golden FILE.jsonl`")
    if args.beir:
        data = evaluate.load_beir(Path(args.beir), split=args.split)
        embedder = ctx.embedder(args.model)
        progress = Progress(f"eval {data.name}")
        corpus, info = evaluate.index_beir(ctx.data_dir, data, embedder, rebuild=args.rebuild,
                                           on_progress=lambda done, total, what: progress.update(done, total, what))
        modes: list[Mode] = [args.mode] if args.mode else ["bm25", "dense", "hybrid"]
        vectors = None if modes == ["bm25"] else evaluate.embed_queries(data, embedder)
        reports = [evaluate.run_beir(corpus, data, embedder, mode=mode, vectors=vectors, index=info,
                                     on_progress=lambda done, total, what: progress.update(done, total, what))
                   for mode in modes]
        progress.finish()
        emit(args, {"dataset": data.name, "runs": reports}, evaluate.beir_markdown(reports))
        return
    if not args.id:
        raise InvalidInput("`frontdesk eval --golden FILE` needs the tenant id: frontdesk eval ID --golden FILE")
    tenant = ctx.tenant(args.id)
    items = evaluate.load_golden(Path(args.golden))
    progress = Progress(f"eval {args.id}")
    report = evaluate.run_golden(ctx, tenant, items, golden_name=Path(args.golden).name,
                                 on_progress=lambda done, total, what: progress.update(done, total, what))
    progress.finish()
    emit(args, report, evaluate.golden_markdown(report))


@command("quickstart")
def quickstart_command(ctx: Context, args: argparse.Namespace) -> None:
    """The whole loop on the bundled sample site: serve it, crawl it into the `demo` tenant,
    serve frontdesk, and print where to see the widget answer questions."""
    import asyncio

    from app.demo import as_its_owner_would
    from app.demo.server import DemoSite
    from ingest.pipeline import CrawlOptions, crawl

    port = args.port or free_port(8000)
    frontdesk_origin = f"http://127.0.0.1:{port}"
    site = DemoSite(frontdesk_origin, port=free_port(8780)).start()
    try:
        site_url = site.url + "/"
        if ctx.registry.exists("demo"):
            tenant = ctx.tenant("demo")
            config = tenant.config()
            if config.site != site_url:
                tenant.set_config(msgspec.structs.replace(config, site=site_url))
        else:
            tenant, admin_token = ctx.create_tenant("demo", site_url, allow_private_network=True, name="Harbor & Pine")
            sys.stderr.write(f"created tenant demo (admin token, shown once: {admin_token})\n")
        config = as_its_owner_would(tenant.config())
        if frontdesk_origin not in config.allowed_origins:
            config = msgspec.structs.replace(config, allowed_origins=[*config.allowed_origins, frontdesk_origin])
        if config != tenant.config():
            tenant.set_config(config)
        site.widget_key = tenant.widget_key
        progress = Progress("crawl demo")

        summary = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0),
                                    on_progress=lambda event: show_crawl(progress, event),
                                    page_processes=ctx.settings.page_processes))
        progress.finish()
        sys.stderr.write(f"indexed the sample site: {summary.fetched} pages fetched, {summary.skipped_unchanged} "
                         f"unchanged, {summary.chunks_embedded} chunks embedded in {summary.seconds:.1f}s\n")
        ctx.close()
        if args.no_serve:
            sys.stdout.write(f"\nThe demo tenant is ready. Sample site (served only while this runs): {site.url}/\n")
            return
        sys.stdout.write(
            f"\nfrontdesk is running.\n"
            f"  Open the sample site: {site.url}/  (the chat button is at the bottom right)\n"
            f"  Try: \"Do you open on Sundays?\", \"How much is shipping?\", \"¿Tenéis opciones sin gluten?\"\n"
            f"  API: {frontdesk_origin}/v1/chat   metrics: {frontdesk_origin}/metrics   Ctrl-C stops both.\n\n"
        )
        sys.stdout.flush()
        serve(ctx.settings, host="127.0.0.1", port=port)
    finally:
        site.close()


@command("serve")
def serve_command(ctx: Context, args: argparse.Namespace) -> None:
    serve(ctx.settings, host=args.host, port=args.port, workers=args.workers)


def free_port(preferred: int) -> int:
    """`preferred` if nothing listens there on 127.0.0.1, else any free port."""
    import socket

    for candidate in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise FrontdeskError("no free port on 127.0.0.1")


def serve(settings: Settings, *, host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    """Run the app under granian in this process's foreground until interrupted.

    With more than one worker, granian respawns a worker that dies, and what the workers must
    agree on is shared through files (README, "Workers"): the metrics in a fresh
    PROMETHEUS_MULTIPROC_DIR made here (before granian forks the workers, and removed at exit),
    the rate limits in DATA_DIR/ratelimits.db, the scheduler and each tenant's crawl behind
    flocks (app/leader.py, app/jobs.py)."""
    import os
    import shutil
    import tempfile

    from granian import Granian
    from granian.constants import Interfaces

    from app.workers import resolve_workers

    host = host or settings.host
    port = port or settings.port
    count = resolve_workers(workers if workers is not None else settings.workers)
    os.environ["FRONTDESK_DATA_DIR"] = str(Path(settings.data_dir).resolve())
    os.environ["FRONTDESK_HOST"] = host
    os.environ["FRONTDESK_PORT"] = str(port)
    os.environ["FRONTDESK_WORKERS"] = str(count)
    metrics_dir = None
    if count > 1:
        # Set before anything imports prometheus_client: it picks its value store at import.
        metrics_dir = tempfile.mkdtemp(prefix="frontdesk-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    plural = "s" if count > 1 else ""
    sys.stderr.write(f"frontdesk: serving on http://{host}:{port} with {count} worker{plural} "
                     f"(data in {settings.data_dir})\n")
    try:
        Granian("app.asgi:app_from_env", factory=True, address=host, port=port, interface=Interfaces.ASGI,
                workers=count, respawn_failed_workers=count > 1, log_access=False).serve()
    finally:
        if metrics_dir is not None:
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
            shutil.rmtree(metrics_dir, ignore_errors=True)


#: The commands that work on the SQLite files only: with FRONTDESK_DATABASE_URL set they refuse to
#: start; every other command runs on PostgreSQL (`eval --beir` builds its own scratch corpus file
#: under the data dir whichever backend tenants use).
SQLITE_ONLY_COMMANDS = frozenset({"backup", "restore", "quickstart"})


def main(argv: list[str] | None = None) -> int:
    # First, before any thread starts (and before `serve` forks its workers, which inherit it).
    limit_malloc_arenas()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    name = args.command + (f" {args.action}" if getattr(args, "action", None) else "")
    try:
        settings = Settings.from_env(data_dir=args.data_dir)
        if settings.database_url.strip() and name in SQLITE_ONLY_COMMANDS:
            # Never run on the SQLite files while the operator believes the data is in PostgreSQL.
            on_postgres = sorted(COMMANDS.keys() - SQLITE_ONLY_COMMANDS)
            raise InvalidConfig(
                f"FRONTDESK_DATABASE_URL is set, but `{name}` does not run on PostgreSQL in this build: only "
                f"{', '.join(f'`{c}`' for c in on_postgres)} do (README, \"PostgreSQL backend\"). "
                "Unset it to use the SQLite files under FRONTDESK_DATA_DIR.")
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
