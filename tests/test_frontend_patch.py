"""The framework's page script served with the status-pass fix: every edit applies once to the installed file,
the patched file is what a page gets (whole, plain, through the asset cache too), other files pass untouched,
and a framework version the edits do not fit is served as it is, with a warning."""

from __future__ import annotations

import logging

import pytest

from bertdemo import compat
from bertdemo.asset_cache import AssetCache
from bertdemo.frontend_patch import (
    ATTACHED_EVENTS,
    DONE_ANNOUNCED,
    LATEST_ANSWER,
    NODE_LOOKUP,
    PATCHES,
    PRESS_KEPT,
    STATUS_PASS,
    TOAST_TEXT,
    FrontendPatch,
    PatchMissing,
    ScriptPatch,
    apply_patch,
    patched_scripts,
)
from tests.helpers import asgi_get

DISK = b"class B{reload(e,t,n,r,i){x()}}\n" * 100


class Framework:
    """Serves ``DISK`` for any path, with the headers of a file on disk; records the request headers it saw."""

    def __init__(self) -> None:
        self.seen: list[dict] = []

    async def __call__(self, scope, receive, send):
        self.seen.append(dict(scope["headers"]))
        headers = [(b"content-type", b"text/javascript; charset=utf-8"), (b"content-length", str(len(DISK)).encode()),
                   (b"etag", b'"disk"'), (b"last-modified", b"Thu, 01 Jan 2026 00:00:00 GMT")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": DISK})


def _get(app, path: str, extra: list | None = None):
    scope = {"type": "http", "method": "GET", "path": path, "query_string": b"", "scheme": "http", "root_path": "",
             "headers": [(b"host", b"school.example"), (b"accept-encoding", b"gzip, br")] + (extra or [])}
    return asgi_get(app, scope)


@pytest.mark.parametrize("patch, prefix", [(STATUS_PASS, "Blocks-"), (NODE_LOOKUP, "core-"), (ATTACHED_EVENTS, "core-"),
                                           (LATEST_ANSWER, "Blocks-"), (TOAST_TEXT, "statustracker-"),
                                           (DONE_ANNOUNCED, "statustracker-"), (PRESS_KEPT, "Blocks-")])
def test_every_edit_applies_once_to_the_installed_framework_file(patch, prefix):
    scripts = patched_scripts(compat.frontend_assets(), (patch,))
    assert len(scripts) == 1
    (name, body), = scripts.items()
    text = body.decode()
    assert name.startswith(prefix) and name.endswith(".js")
    for old, new in patch.edits:
        assert old not in text.replace(new, "") and text.count(new) == 1
    disk = (compat.frontend_assets() / name).read_text(encoding="utf-8")
    assert len(text) - len(disk) == sum(len(new) - len(old) for old, new in patch.edits)


def test_the_fixes_are_served_in_their_three_files_and_each_file_s_edits_all_apply():
    scripts = patched_scripts(compat.frontend_assets())
    assert sorted(name.split("-")[0] for name in scripts) == ["Blocks", "core", "statustracker"]
    for prefix, patches in (("core-", (NODE_LOOKUP, ATTACHED_EVENTS)), ("Blocks-", (STATUS_PASS, LATEST_ANSWER, PRESS_KEPT)),
                            ("statustracker-", (TOAST_TEXT,))):
        (text,) = (body.decode() for name, body in scripts.items() if name.startswith(prefix))
        for patch in patches:
            assert all(new in text and old not in text.replace(new, "") for old, new in patch.edits)


def test_a_page_gets_the_patched_script_whole_and_every_other_file_as_it_is():
    framework = Framework()
    patched = b"class B{reload(e,t,n,r,i){this.fixed=1;x()}}\n"
    app = FrontendPatch(framework, {"Blocks-abc.js": patched})
    status, headers, body = _get(app, "/assets/Blocks-abc.js", [(b"if-none-match", b'"disk"'), (b"range", b"bytes=0-9")])
    assert (status, body) == (200, patched)
    assert headers[b"content-length"] == str(len(patched)).encode()
    assert headers[b"content-type"] == b"text/javascript; charset=utf-8"
    assert b"etag" not in headers and b"last-modified" not in headers  # they describe the file on disk
    asked = framework.seen[-1]  # the framework was asked for the whole file, plain
    assert b"if-none-match" not in asked and b"range" not in asked and b"accept-encoding" not in asked
    assert _get(app, "/assets/index-abc.js")[2] == DISK
    assert _get(app, "/Blocks-abc.js")[2] == DISK


def test_through_the_asset_cache_the_patched_script_is_kept_compressed():
    framework = Framework()
    patched = b"export const fixed = true;\n" * 100
    app = AssetCache(FrontendPatch(framework, {"Blocks-abc.js": patched}))
    answers = [_get(app, "/assets/Blocks-abc.js") for _ in range(3)]
    assert all(body == patched for _, _, body in answers)
    assert answers[0][1][b"content-encoding"] == b"br" and len(framework.seen) == 1


def test_another_framework_version_is_served_as_it_is_with_a_warning(tmp_path, caplog):
    (tmp_path / "Blocks-old.js").write_text("class B{async update_loading_stati_state(){}}", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="bertdemo"):
        assert patched_scripts(tmp_path) == {}
    assert "push a loading status only when it changed" in caplog.text and "found 0 times" in caplog.text
    assert patched_scripts(tmp_path / "missing") == {}


def test_an_edit_whose_text_appears_twice_is_refused():
    twice = ScriptPatch("twice", "*.js", (("a", "b"),))
    assert apply_patch("xay", twice) == "xby"
    with pytest.raises(PatchMissing, match="found 2 times"):
        apply_patch("aa", twice)
    assert PATCHES == (STATUS_PASS, NODE_LOOKUP, ATTACHED_EVENTS, LATEST_ANSWER, TOAST_TEXT, DONE_ANNOUNCED,
                       PRESS_KEPT)
