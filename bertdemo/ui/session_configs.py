"""A page session's copy of the page's configuration, made only when something reads it.

The web framework makes a session state for every page that sends its first event, and that state builds,
at once, the configuration of every component of the page (``SessionState.config_values``: each component's
``get_config()``, a few hundred of them) — about 40 % of the server's CPU for one open of a shared link, and
most of a session's memory. The framework reads that copy for one thing only, its own "deep link" button
(``/gradio_api/deep_link``, which this app does not use: its links are ``?tab=…&text=…``), and writes single
entries of it as events change components. :func:`make_session_configs_lazy` gives the app's sessions a
copy that fills an entry when it is read or written and every entry when the whole copy is read, so each
entry is what the eager copy held, and a page open pays for none of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bertdemo import compat


class LazyConfigs(dict):
    """``SessionState.config_values`` made entry by entry: ``config`` is the session's BlocksConfig, ``ids``
    the components the eager copy would hold, in its order. An entry absent when read by key is made then; a
    read of the whole (items, values, keys, iteration, length) makes every absent entry first, in that order."""

    def __init__(self, config: Any, ids: list[int]) -> None:
        super().__init__()
        self._config = config
        self._ids = ids
        self._whole = False

    def _make(self, key: int) -> dict:
        return self._config.config_for_block(key, [], self._config.blocks[key])

    def __missing__(self, key: int) -> dict:
        if self._whole or key not in self._config.blocks or key not in set(self._ids):
            raise KeyError(key)
        value = self[key] = self._make(key)
        return value

    def fill(self) -> None:
        """Every entry the eager copy would hold, in its order (entries already made are kept as they are)."""
        if self._whole:
            return
        made = dict(super().items())
        super().clear()
        for key in self._ids:
            if key in made:
                super().__setitem__(key, made.pop(key))
            elif key in self._config.blocks:
                super().__setitem__(key, self._make(key))
        for key, value in made.items():  # entries written for components added since
            super().__setitem__(key, value)
        self._whole = True

    def items(self):  # type: ignore[override]
        self.fill()
        return super().items()

    def values(self):  # type: ignore[override]
        self.fill()
        return super().values()

    def keys(self):  # type: ignore[override]
        self.fill()
        return super().keys()

    def __iter__(self) -> Iterator[int]:
        self.fill()
        return super().__iter__()

    def __len__(self) -> int:
        self.fill()
        return super().__len__()

    def __contains__(self, key: object) -> bool:
        # "not in" is how the framework decides to make an entry itself: an entry not made yet is made by it
        return super().__contains__(key)


def make_session_configs_lazy(demo: Any) -> None:
    """The launched ``demo``'s new page sessions keep a :class:`LazyConfigs` (call after ``launch``)."""
    compat.lazy_session_configs(demo, LazyConfigs)
