"""Knowledge gaps turned into curated answers (grouped questions, a drafted answer, publish or
dismiss) and the curated answers themselves (list, test a question, add, edit, delete)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import anyio
from litestar import Request, Response, get, post

from app.cache import normalize_question
from app.console import gaps
from app.console.common import form_lines, form_of, form_text, page, redirect, tenant_for
from store.errors import InvalidInput, NotFound
from store.tenants import Connection, Tenant

# -- knowledge gaps → curated answers --------------------------------------------------------


@get("/t/{tenant_id:str}/gaps", include_in_schema=False)
async def gaps_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    ctx = request.app.state.ctx
    found = await anyio.to_thread.run_sync(gaps.clusters, ctx, tenant)
    return page(request, "gaps.html", session=session, tenant=tenant, section="gaps", clusters=found,
                questions=sum(len(c.questions) for c in found))


async def _cluster(request: Request, tenant: Tenant, gap_id: int) -> gaps.GapCluster:
    found = await anyio.to_thread.run_sync(gaps.cluster_of, request.app.state.ctx, tenant, gap_id)
    if found is None:
        raise NotFound("that knowledge gap is resolved or does not exist")
    return found


@get("/t/{tenant_id:str}/gaps/{gap_id:int}", include_in_schema=False)
async def gap_draft(request: Request, tenant_id: str, gap_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    cluster = await _cluster(request, tenant, gap_id)
    state = request.app.state
    draft = await anyio.to_thread.run_sync(gaps.draft, state.answerer, state.ctx, tenant, cluster)
    return page(request, "draft.html", session=session, tenant=tenant, section="gaps", cluster=cluster,
                draft=draft, form={"question": draft.question, "answer": draft.answer, "urls": "\n".join(draft.urls)},
                error=None)


def _save_curated(request: Request, tenant: Tenant, curated_id: int | None, question: str, answer: str,
                  urls: list[str], resolve: list[int] | None = None) -> int:
    """Add or replace a curated answer (embedding its question); optionally resolve gaps with it."""
    for i, url in enumerate(urls):
        if urlsplit(url).scheme not in ("http", "https"):
            raise InvalidInput(f"{url!r} is not an http(s) link", field="urls" if i == 0 else f"urls[{i}]")
    vector = request.app.state.ctx.tenant_embedder(tenant).embed_query(question) if question.strip() else None
    store = tenant.store
    with tenant.write() as conn:
        if curated_id is None:
            curated_id = store.curated.add(conn, question=question, normalized=normalize_question(question),
                                           answer=answer, urls=urls, lang="", vector=vector)
        else:
            store.curated.update(conn, curated_id, question=question, normalized=normalize_question(question),
                                 answer=answer, urls=urls, lang="", vector=vector)
        if resolve:
            store.conversations.resolve_gaps(conn, resolve, curated_id)
        tenant.bump_generation(conn)
    return curated_id


@post("/t/{tenant_id:str}/gaps/{gap_id:int}/publish", include_in_schema=False)
async def gap_publish(request: Request, tenant_id: str, gap_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    cluster = await _cluster(request, tenant, gap_id)
    question, answer = form_text(form, "question", 2000), form_text(form, "answer", 10_000)
    urls = form_lines(form_text(form, "urls", 20_000))
    try:
        await anyio.to_thread.run_sync(_save_curated, request, tenant, None, question, answer, urls, cluster.ids)
    except InvalidInput as exc:
        state = request.app.state
        draft = await anyio.to_thread.run_sync(gaps.draft, state.answerer, state.ctx, tenant, cluster)
        return page(request, "draft.html", status=400, session=session, tenant=tenant, section="gaps",
                    cluster=cluster, draft=draft,
                    form={"question": question, "answer": answer, "urls": "\n".join(urls)},
                    error={"field": exc.details.get("field", ""), "message": exc.message})
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/gaps?msg=published")


@post("/t/{tenant_id:str}/gaps/{gap_id:int}/dismiss", include_in_schema=False)
async def gap_dismiss(request: Request, tenant_id: str, gap_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    await form_of(request, session)
    cluster = await _cluster(request, tenant, gap_id)

    await tenant.write(lambda conn: tenant.store.conversations.resolve_gaps(conn, cluster.ids, None))
    return redirect(f"/console/t/{tenant.id}/gaps?msg=dismissed")


# -- curated answers -------------------------------------------------------------------------


def _curated_test(request: Request, tenant: Tenant, question: str) -> dict[str, Any]:
    from app.answer import CURATED_SIMILARITY

    embedder = request.app.state.ctx.tenant_embedder(tenant)
    vector = embedder.embed_query(question)
    with tenant.reading() as conn:
        match = tenant.store.curated.match(conn, normalize_question(question), vector, CURATED_SIMILARITY)
        vectors = list(tenant.store.curated.curated_vectors(conn))  # a generator: read it in the block
    nearest = sorted(((float(vector @ v), item) for item, v in vectors), key=lambda p: -p[0])[:3]
    return {"question": question, "match": match, "threshold": CURATED_SIMILARITY,
            "nearest": [{"similarity": round(s, 3), "item": item} for s, item in nearest]}


@get("/t/{tenant_id:str}/curated", include_in_schema=False)
async def curated_page(request: Request, tenant_id: str, q: str = "") -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    items = await tenant.read(tenant.store.curated.all_curated)
    test = await anyio.to_thread.run_sync(_curated_test, request, tenant, q.strip()[:2000]) if q.strip() else None
    return page(request, "curated.html", session=session, tenant=tenant, section="curated", items=items, test=test,
                form={}, error=None)


@post("/t/{tenant_id:str}/curated", include_in_schema=False)
async def curated_create(request: Request, tenant_id: str) -> Response:
    return await _curated_save(request, tenant_id, None)


@get("/t/{tenant_id:str}/curated/{curated_id:int}", include_in_schema=False)
async def curated_edit(request: Request, tenant_id: str, curated_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    item = await tenant.read(lambda conn: tenant.store.curated.get(conn, curated_id))
    return page(request, "curated_edit.html", session=session, tenant=tenant, section="curated", item=item,
                form={"question": item.question, "answer": item.answer, "urls": "\n".join(item.urls)}, error=None)


@post("/t/{tenant_id:str}/curated/{curated_id:int}", include_in_schema=False)
async def curated_update(request: Request, tenant_id: str, curated_id: int) -> Response:
    return await _curated_save(request, tenant_id, curated_id)


async def _curated_save(request: Request, tenant_id: str, curated_id: int | None) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    values = {"question": form_text(form, "question", 2000), "answer": form_text(form, "answer", 10_000),
              "urls": form_text(form, "urls", 20_000)}
    try:
        await anyio.to_thread.run_sync(_save_curated, request, tenant, curated_id, values["question"],
                                       values["answer"], form_lines(values["urls"]))
    except InvalidInput as exc:
        error = {"field": exc.details.get("field", ""), "message": exc.message}
        if curated_id is None:
            items = await tenant.read(tenant.store.curated.all_curated)
            return page(request, "curated.html", status=400, session=session, tenant=tenant, section="curated",
                        items=items, test=None, form=values, error=error)
        item = await tenant.read(lambda conn: tenant.store.curated.get(conn, curated_id))
        return page(request, "curated_edit.html", status=400, session=session, tenant=tenant, section="curated",
                    item=item, form=values, error=error)
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/curated?msg=curated_saved")


@post("/t/{tenant_id:str}/curated/{curated_id:int}/delete", include_in_schema=False)
async def curated_delete(request: Request, tenant_id: str, curated_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    await form_of(request, session)

    def remove(conn: Connection) -> None:
        tenant.store.curated.delete(conn, curated_id)
        tenant.bump_generation(conn)

    await tenant.write(remove)
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/curated?msg=curated_deleted")
