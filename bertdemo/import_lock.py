"""Where :data:`LOGIC_IMPORT_LOCK` and :func:`import_logic` were: they live in :mod:`bertdemo.locks`, the home
of every lock that works around an upstream library (imported here for the modules that name this one)."""

from bertdemo.locks import LOGIC_IMPORT_LOCK, import_logic  # noqa: F401
