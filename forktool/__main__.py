"""The ``forktool`` command (and ``python -m forktool``): :func:`forktool.entry.main`.

Loading the CLI takes a noticeable moment: a plain ``verify`` or ``status`` starts
git before it (:mod:`forktool.head_start`) and runs without it
(:mod:`forktool.plain`). A Ctrl-C anywhere exits 130 quietly, never with a
``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

from forktool.entry import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
