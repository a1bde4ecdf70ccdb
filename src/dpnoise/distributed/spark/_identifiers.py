"""Column and field names as Spark SQL identifiers: backtick-quoted, a backtick inside doubled,
so that any name (a space, a dot, a backtick) refers to itself and never to a nested field."""
from __future__ import annotations


def quoted(name: str) -> str:
    """``name`` as one quoted identifier: ``a.b`` -> ```a.b```, ``a`b`` -> ```a``b```."""
    return "`" + name.replace("`", "``") + "`"


def field_path(column: str | None, field: str) -> str:
    """``field`` of the struct column ``column`` (or the top-level ``field`` when ``column`` is
    None), quoted."""
    return quoted(field) if column is None else f"{quoted(column)}.{quoted(field)}"
