"""The ``forktool`` command (and ``python -m forktool``).

Loading the CLI takes a noticeable moment: a plain ``verify`` or ``status`` starts
git before it (:mod:`forktool.head_start`). A Ctrl-C in it exits 130 quietly, as one
anywhere else does, never with a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from forktool.head_start import begin

        begin(sys.argv[1:])
        from forktool.cli import main as cli_main
    except KeyboardInterrupt:
        sys.exit(130)
    cli_main()


if __name__ == "__main__":
    main()
