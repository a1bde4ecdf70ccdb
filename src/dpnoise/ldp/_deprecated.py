"""Names kept one release after their replacement: reading one warns (DeprecationWarning) and
gives the object; they are not in ``__all__``."""
from __future__ import annotations

import warnings
from typing import Any, Callable


def deprecated_attributes(module: str, names: dict[str, tuple[Callable[[], Any], str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``names``: name -> (a function giving the object,
    what to use instead). Other names raise AttributeError as usual."""
    def __getattr__(name: str) -> Any:
        try:
            get, instead = names[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release; {instead}",
                      DeprecationWarning, stacklevel=2)
        return get()
    return __getattr__
