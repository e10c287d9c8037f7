"""The dialect modules against their contract (core/dialects/__init__.py: Dialect, EndPins, Joins).

mypy checks the signatures (the TYPE_CHECKING block at the end of core/dialects/__init__.py); this
checks at run time that the pipeline's table holds exactly such modules, with the optional parts
where the writers need them."""

from __future__ import annotations

from native_bridge.core.dialects import Dialect, EndPins, Joins
from native_bridge.core.pipeline import DIALECTS


def test_every_dialect_of_the_pipeline_is_a_dialect() -> None:
    assert list(DIALECTS) == ["chat", "anthropic", "responses", "gemini"]
    for name, module in DIALECTS.items():
        assert isinstance(module, Dialect), name
        assert name == module.NAME and module.ITEMS and module.MARKERS


def test_the_optional_parts_are_where_the_writers_need_them() -> None:
    # Anthropic and Gemini must end on the user's turn; a Responses reasoning item belongs to what follows it.
    assert [n for n, m in DIALECTS.items() if isinstance(m, EndPins)] == ["anthropic", "gemini"]
    assert [n for n, m in DIALECTS.items() if isinstance(m, Joins)] == ["responses"]
