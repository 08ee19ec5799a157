"""Where :data:`MODEL_INIT_LOCK` was: it lives in :mod:`bertdemo.locks`, the home of every lock that works around
an upstream library (imported here for the modules that name this one)."""

from bertdemo.locks import MODEL_INIT_LOCK  # noqa: F401
