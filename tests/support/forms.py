"""A form with a nested part, as a pydantic model: what elicitation tests ask the user to fill in."""

from __future__ import annotations

from pydantic import BaseModel


class Address(BaseModel):
    street: str
    city: str = "Paris"


class Person(BaseModel):
    name: str
    age: int
    home: Address
