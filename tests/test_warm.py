"""Warming (app/warm.py): /readyz is not ready until every tenant has been warmed for its first
question, and the first question after ready is answered. (How much faster that first answer is
belongs to the benchmark: `python -m tests.bench answer`, "first answer after start".)"""

from __future__ import annotations

import threading
import time

import pytest
from litestar.testing import TestClient

from app.asgi import create_app
from app.warm import Warmer
from ingest.document import Document, Section
from ingest.indexer import PageIndexer

SITE = "https://bakery.test"

# In-process (the gate below patches this process's Warmer); building the app here reports
# Litestar's deprecation notes about route declarations, which are not this test's subject.
pytestmark = pytest.mark.filterwarnings("ignore::litestar.exceptions.LitestarDeprecationWarning")


def _bakery(ctx) -> str:
    tenant, _ = ctx.create_tenant("bakery", SITE + "/")
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    for n, text in enumerate(["Our sourdough is baked every morning at five with a 48-hour ferment.",
                              "We are open Monday to Saturday, 7am to 6pm; closed on Sundays."]):
        indexer.index(Document(url=f"{SITE}/p{n}", canonical_url=f"{SITE}/p{n}", title=f"Bakery page {n}",
                               lang="en", sections=[Section(heading_path=(f"Bakery page {n}",), text=text)]))
    return tenant.widget_key


def _sse_names(body: str) -> list[str]:
    return [line[6:].strip() for line in body.splitlines() if line.startswith("event:")]


def test_readyz_waits_for_warming_and_the_first_answer_after_ready_is_served(ctx, monkeypatch):
    key = _bakery(ctx)
    release = threading.Event()
    warmed: list[str] = []
    real_warm_tenant = Warmer.warm_tenant

    def gated_warm_tenant(self, tenant_id: str) -> None:
        assert release.wait(30), "the test never released the warm-up"
        real_warm_tenant(self, tenant_id)
        warmed.append(tenant_id)

    monkeypatch.setattr(Warmer, "warm_tenant", gated_warm_tenant)
    with TestClient(app=create_app(ctx.settings, ctx=ctx)) as client:
        assert client.get("/healthz").status_code == 200
        waiting = client.get("/readyz")
        assert waiting.status_code == 503
        assert waiting.json()["problems"] == {"warm": "warming the tenants for their first question"}

        release.set()
        deadline = time.monotonic() + 30
        while (ready := client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        assert warmed == ["bakery"]

        response = client.post("/v1/chat", json={"key": key, "question": "When do you open on Saturday?"},
                               headers={"Origin": SITE})
        assert response.status_code == 200
        names = _sse_names(response.text)
        assert names[0] == "meta" and "token" in names and names[-1] == "done"
        assert "7am" in response.text


def test_warming_counts_no_answer_and_persists_nothing(ctx):
    _bakery(ctx)
    with TestClient(app=create_app(ctx.settings, ctx=ctx)) as client:
        deadline = time.monotonic() + 30
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        metrics = client.get("/metrics").text
    answers = [line for line in metrics.splitlines()
               if line.startswith("frontdesk_answers_total") and not line.rstrip().endswith(" 0.0")]
    assert answers == []
    conversations = ctx.tenant("bakery").reader().execute("SELECT count(*) FROM messages").fetchone()[0]
    assert conversations == 0
