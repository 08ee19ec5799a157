"""Who may use a run of this server: one rule for every name and run id a visitor sends (:func:`may_use`) and for
every list of runs shown to one (:func:`listed`).

A run is **public** or **private**, decided when it starts and recorded in its folder (:data:`ACCESS_FILE`, with the
key of who started it): a run on a visitor's data — fine-tuning on their own sentences, pretraining on a text they
uploaded, anything that started from a private run — is private; a run on the app's own data (the embedded
Wikipedia summaries, TinyStories, the topic and names tasks, the Table 5 cells) is public: anyone may load it,
read its curves and CSV. A run from before the record: private when its id carries the own-data mark
(:data:`OWN_DATA_MARK`) or its saved settings name a corpus file rather than one of the app's corpora.

A private run is used only by its holders: the browser or API caller holding the owner token that started it, or
the visitor who started it — their address, or, for a class member, the member (another member behind the same
address is someone else). Everyone else gets the answer a run that does not exist gets: no message confirms that
another visitor's run exists.

Who asks comes from one place per request: :func:`acting_as`, which the page's event runner
(:mod:`bertdemo.ui.callers`) enters for every event on a public server with the visitor the HTTP door worked out
(:mod:`bertdemo.traffic`). Outside a request — a local server, the server's own code, a script, a test in-process
— there is no caller: a name or run id is the operator's (:func:`may_use` allows it), while a list on a public
server shows only public runs and those the given owner token started (:func:`listed`), so nothing private
is listed in a page built before any visitor came. Standard library only (with the app's atomic writes).
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bertdemo import storage
from bertdemo.models.checkpoint_layout import CONFIG_FILE, latest_checkpoint
from bertdemo.traffic import address_of, member_of

OWNER_FILE = "owner.sha256"  # a digest of the token that started the run; the token itself is never stored
VISITOR_FILE = "visitor.sha256"  # a digest of the share the run counts in (its address, or a class's places)
ACCESS_FILE = "access.json"  # {"private": bool, "starter": digest of who started it ("" when not known)}
OWN_DATA_MARK = "-ft-own-"  # in the id of every fine-tuning run on a learner's own data


def digest(value: str) -> str:
    """The SHA-256 of ``value`` as hex: what a run folder keeps of a token or a visitor."""
    return hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()


def _read_digest(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def recorded(path: str | Path, value: str) -> bool:
    """Whether the digest file ``path`` was made from ``value`` (False when either is missing or empty)."""
    return _same(_read_digest(Path(path)), value)


def _same(stored: str, value: str) -> bool:
    """Whether ``value`` is what the digest ``stored`` was made from (False for an empty one of either)."""
    return bool(stored) and bool(value) and hmac.compare_digest(stored, digest(value))


# --- who asks ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """The visitor a request comes from, as the HTTP door worked it out: an address, or ``member:<id>@<address>``
    for a class member ("" when the door did not say)."""

    visitor: str

    def keys(self) -> tuple[str, ...]:
        """What a run's starter record may name for this caller: their member id, and their address."""
        return tuple(key for key in (member_of(self.visitor), address_of(self.visitor)) if key)


_CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("bertdemo_run_caller", default=None)


def current_caller() -> Caller | None:
    """The visitor of the request being served (None outside a request, and on a local server)."""
    return _CALLER.get()


@contextmanager
def acting_as(caller: Caller | None) -> Iterator[None]:
    """Within it, :func:`current_caller` is ``caller`` (None: the server itself, e.g. a teacher's verified view
    reading their class's runs)."""
    reset = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(reset)


def starter_key(visitor: str) -> str:
    """Who a run records as its starter: a class member by their member id (wherever they are), else the address."""
    return member_of(visitor) or address_of(visitor)


# --- what a run's folder records -------------------------------------------------------------------------


@dataclass(frozen=True)
class Holders:
    """What decides who may use one run: whether it is private, and digests of its owner token, of its starter
    and (runs from before the starter record) of the share it counted in."""

    private: bool
    owner: str = ""
    starter: str = ""
    share: str = ""

    def permit(self, caller: Caller | None, token: str = "") -> bool:
        """Whether ``caller`` (None: nobody known) holding ``token`` may use the run: anyone when it is public."""
        if not self.private or _same(self.owner, token):
            return True
        keys = caller.keys() if caller is not None else ()
        return any(_same(self.starter, key) for key in keys) or (
            not self.starter and caller is not None and _same(self.share, address_of(caller.visitor)))


def record_access(folder: str | Path, private: bool, visitor: str = "") -> None:
    """Record whether the run in ``folder`` is private and who started it (its first record stays: a resumed
    run keeps the data it began on)."""
    path = Path(folder) / ACCESS_FILE
    if path.exists():
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    starter = starter_key(visitor) if visitor else ""
    storage.write_text(path, json.dumps({"private": bool(private), "starter": digest(starter) if starter else ""}))


def holders(folder: str | Path) -> Holders:
    """What the run in ``folder`` records of its holders (:class:`Holders`); a run without the record is
    private as :func:`legacy_private` says."""
    folder = Path(folder)
    owner, share = _read_digest(folder / OWNER_FILE), _read_digest(folder / VISITOR_FILE)
    try:
        record = json.loads((folder / ACCESS_FILE).read_text(encoding="utf-8"))
        private, starter = bool(record["private"]), str(record.get("starter") or "")
    except (OSError, ValueError, KeyError, TypeError):
        private, starter = legacy_private(folder), ""
    return Holders(private, owner, starter, share)


def legacy_private(folder: Path) -> bool:
    """Whether a run recorded before :data:`ACCESS_FILE` is private: a fine-tuning run on own data (its id says
    so), or a pretraining run whose latest saved settings name a corpus file (an upload) rather than an app corpus."""
    if OWN_DATA_MARK in f"-{folder.name}":
        return True
    checkpoint = latest_checkpoint(folder)
    if checkpoint is None:
        return False
    try:
        saved = json.loads((checkpoint / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # unreadable: kept to the operator rather than shown to everyone
    section = saved.get("data") if isinstance(saved, dict) else None
    corpus = (section or saved).get("corpus", "") if isinstance(section or saved, dict) else ""
    return isinstance(corpus, str) and any(mark in corpus for mark in ("/", "\\", "."))


def is_private(folder: str | Path) -> bool:
    """Whether the run in ``folder`` is private (see the module)."""
    return holders(folder).private


# --- the rule --------------------------------------------------------------------------------------------


def may_use(folder: str | Path, token: str = "") -> bool:
    """Whether the request being served may use the run in ``folder`` by its name or id (load it, read its
    history, probe it): always outside a request; in one, a public run, or a private run its caller — or
    ``token``'s holder — started."""
    caller = current_caller()
    return caller is None or holders(folder).permit(caller, token)


def listed(folder: str | Path, public: bool, token: str = "") -> bool:
    """Whether a list shown to the request being served offers the run in ``folder``: on a local server outside a
    request, every run; else public runs and the private ones the caller or ``token``'s holder started."""
    caller = current_caller()
    return (caller is None and not public) or holders(folder).permit(caller, token)
