"""Files the web framework serves, at fixed short addresses (:class:`FileAliases`, ASGI): the framework serves a
file of its static paths at ``/gradio_api/file=<its absolute path on the server>``, so a page that loads plotly.js
that way wrote the server's install folder (``/home/<user>/…/site-packages/plotly/…``) into every page, 33 times.
A request for an alias (``/bertdemo/plotly.min.js``) is passed on as the framework's request for the file it names,
whose answer it is (the framework's checks and headers, and :class:`bertdemo.asset_cache.AssetCache` keeping it);
the page names only the alias. Standard library only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from bertdemo.asset_cache import FILE_ROUTE

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]


class FileAliases:
    """ASGI middleware (see the module docstring); ``aliases``: address (``/bertdemo/plotly.min.js``, under the
    app's root path) -> the absolute path of the file the framework serves there."""

    def __init__(self, app: ASGIApp, aliases: Mapping[str, str]) -> None:
        self.app = app
        self.aliases = dict(aliases)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope.get("type") == "http":
            path, root = scope.get("path", ""), scope.get("root_path", "")
            prefix = root if root and path.startswith(root) else ""
            target = self.aliases.get(path[len(prefix):])
            if target is not None:
                real = prefix + FILE_ROUTE + target
                scope = {**scope, "path": real, "raw_path": real.encode()}
        await self.app(scope, receive, send)
