"""A real HTTP API for the OpenAPI tests: a FastAPI app (its OpenAPI document is FastAPI's own, at
``/openapi.json``) with path and query parameters, a JSON body of a ``$ref``'d model, a 404 with a ``detail``, a
422 of FastAPI's validation, an endpoint that takes a bearer token, and one that answers slowly.

``python -m uvicorn tests.support.petstore:app`` serves it (``run_uvicorn("", app=APP)``); ``serve_in_process(app)``
in the test's own loop."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

APP = "tests.support.petstore:app"
TOKENS = {"alice-token": "alice", "bob-token": "bob"}
"""The bearer tokens ``/me`` accepts, and whose they are."""

app = FastAPI(title="Petstore", version="1.0.0")
bearer = HTTPBearer(auto_error=False)


class Owner(BaseModel):
    name: str
    email: str | None = None


class NewPet(BaseModel):
    """A pet to add."""

    name: str
    tag: str | None = None
    owner: Owner | None = None


class Pet(NewPet):
    id: int


PETS: dict[int, Pet] = {1: Pet(id=1, name="Rex", tag="dog"), 2: Pet(id=2, name="Tom", tag="cat")}


@app.get("/pets", tags=["pets"], summary="List the pets")
async def list_pets(limit: int = 10, tag: str | None = None) -> list[Pet]:
    """The pets, the first ``limit``, of one tag if given."""
    return [p for p in PETS.values() if tag is None or p.tag == tag][:limit]


@app.get("/pets/{pet_id}", tags=["pets"], summary="One pet")
async def get_pet(pet_id: int) -> Pet:
    if pet_id not in PETS:
        raise HTTPException(404, detail=f"no pet {pet_id}")
    return PETS[pet_id]


@app.post("/pets", tags=["pets"], status_code=201, summary="Add a pet")
async def create_pet(pet: NewPet, x_request_id: Annotated[str | None, Header()] = None) -> Pet:
    made = Pet(id=max(PETS) + 1, **pet.model_dump())
    PETS[made.id] = made
    return made


@app.delete("/pets/{pet_id}", tags=["admin"])
async def delete_pet(pet_id: int) -> None:
    PETS.pop(pet_id, None)


@app.get("/me", tags=["account"], summary="Who the token is")
async def me(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> dict[str, str]:
    if credentials is None or credentials.credentials not in TOKENS:
        raise HTTPException(401, detail="a valid bearer token is needed", headers={"WWW-Authenticate": "Bearer"})
    return {"user": TOKENS[credentials.credentials]}


@app.get("/slow", tags=["misc"])
async def slow(seconds: float = 5.0) -> dict[str, float]:
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@app.get("/text", tags=["misc"], include_in_schema=False)
async def text() -> PlainTextResponse:
    """Text where ``MISDESCRIBED`` says JSON."""
    return PlainTextResponse("plain words")


@app.get("/query", include_in_schema=False)
async def query(request: Request) -> dict[str, str]:
    """The query string as it came (what a hand-written document's parameters made of the arguments)."""
    return {"query": request.url.query}


@app.get("/boom", tags=["misc"])
async def boom() -> dict[str, str]:
    raise HTTPException(500, detail="x" * 5000)


TREE: dict[str, object] = {"name": "root", "note": None, "children": [{"name": "leaf", "note": "green", "children": []}]}


@app.get("/tree", tags=["misc"], include_in_schema=False)
async def tree(depth: int = 2) -> dict[str, object]:
    """Described by a hand-written OpenAPI 3.0 document (``TREE_DOCUMENT``), not FastAPI's."""
    return TREE if depth > 1 else {**TREE, "children": []}


TREE_DOCUMENT: dict[str, object] = {
    "openapi": "3.0.3",
    "info": {"title": "Trees", "version": "1"},
    "paths": {"/tree": {"get": {
        "operationId": "getTree", "summary": "The tree",
        "parameters": [{"name": "depth", "in": "query", "schema": {"type": "integer", "nullable": True}}],
        "responses": {"200": {"description": "the tree", "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}}}}},
    "components": {"schemas": {"Node": {
        "type": "object", "required": ["name", "children"],
        "properties": {"name": {"type": "string"}, "note": {"type": "string", "nullable": True},
                       "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}},
}
"""A hand-written OpenAPI 3.0 document of ``/tree``: ``nullable``, and a schema that refers to itself."""


MISDESCRIBED: dict[str, object] = {
    "openapi": "3.1.0",
    "info": {"title": "Misdescribed", "version": "1"},
    "paths": {
        "/tree": {"get": {"operationId": "tree", "responses": {"200": {"description": "", "content": {
            "application/json": {"schema": {"type": "object", "required": ["size"]}}}}}}},
        "/text": {"get": {"operationId": "text", "responses": {"200": {"description": "", "content": {
            "application/json": {"schema": {"type": "object"}}}}}}}},
}
"""A document whose ``/tree`` answer lacks what it says, and whose ``/text`` is not the JSON it says."""
