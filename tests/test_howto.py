"""What a how-do-I answer shows on documentation beside its lead (app/howto.py): the API the page is
about and a code example. The end-to-end cases are in tests/test_extractive.py (through `select`)."""

from __future__ import annotations

from app.howto import _identifiers, _page_identifiers, bare_imports
from app.prompt import Source
from app.units import Unit, units_of


def test_api_names_are_camel_or_snake_case_not_file_names_or_dunders():
    text = "router = APIRouter(); app.dependency_overrides[x] = y; see main.py and __init__.py; FastAPI; Foo"
    assert _identifiers(text) == {"APIRouter", "dependency_overrides", "FastAPI"}


def test_a_page_s_api_is_what_its_code_uses_and_defines_that_no_other_top_source_names():
    page = Source(n=1, title="Lifespan Events - FastAPI", url="https://docs.test/events", text=(
        "Use a lifespan function.\n\napp = FastAPI(lifespan=lifespan)\n"
        "async def lifespan(app: FastAPI):\n    ml_models = load()"))
    other = Source(n=2, title="Testing - FastAPI", url="https://docs.test/testing", text=(
        "Write tests.\n\nclient = TestClient(app)\nresponse = client.get('/')"))
    units = [u for i, s in enumerate([page, other]) for u in units_of(s, i)]
    assert _page_identifiers(units, 0, [page, other]) == {"lifespan", "ml_models"}
    assert _page_identifiers(units, 1, [page, other]) == {"TestClient"}


def test_a_listing_of_imports_alone_is_bare():
    imports = Unit(source=0, position=0, text="from fastapi import FastAPI\nimport httpx", kind="code")
    used = Unit(source=0, position=1, text="from fastapi import FastAPI\napp = FastAPI()", kind="code")
    assert bare_imports(imports) and not bare_imports(used)
