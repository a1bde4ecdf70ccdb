"""What every dpnoise figure shares (``dpnoise bench --plot``, ``dpnoise audit --plot``): the
format by the file's extension, vector text kept as text, and the caption in the file's metadata.
matplotlib is imported only here and only when a figure is drawn (the ``plot`` extra)."""
from __future__ import annotations

import os
from typing import Any

#: The file formats a figure can be written in, by extension.
FIGURE_FORMATS = (".png", ".pdf", ".svg")


def figure_format(path: str) -> str:
    """The extension of ``path`` (lower case), checked against :data:`FIGURE_FORMATS`.

    Parameters
    ----------
    path : str
        The file to write.

    Returns
    -------
    str
        ".png", ".pdf" or ".svg".

    Raises
    ------
    ValueError
        Another extension (the message names the file, not its directory).
    """
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FIGURE_FORMATS:
        raise ValueError(f"path must end in .png, .pdf or .svg (the format), got {os.path.basename(str(path))!r}")
    return ext


def new_figure(**kwargs: Any) -> Any:
    """A matplotlib ``Figure`` (no pyplot: no global state, no GUI backend).

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says how to install it).
    """
    try:
        import matplotlib  # noqa: F401  (first: a package blocked or missing fails here)
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from exc
    return Figure(**kwargs)


def save_figure(fig: Any, path: str, title: str, caption: str) -> None:
    """Write ``fig`` to ``path`` in the format of its extension, with ``title`` and ``caption`` in
    the file's metadata (PDF Title/Subject, SVG/PNG Title/Description); vector files keep text as
    text (SVG ``<text>``, TrueType fonts in PDF).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str
    title, caption : str
    """
    import matplotlib

    ext = figure_format(path)
    meta = {"Title": title, ("Subject" if ext == ".pdf" else "Description"): caption}
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        fig.savefig(path, dpi=150, metadata=meta)
