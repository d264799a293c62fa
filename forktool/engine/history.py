"""The former name of :mod:`forktool.engine.history_contract`: ``commands/check_history.py``
and ``engine/check.py`` still import :func:`check_history` from here. Remove this module
once they import it from ``history_contract``."""

from forktool.engine.history_contract import check_history

__all__ = ["check_history"]
