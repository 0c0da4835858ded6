"""What every toolvocab addon with options shares: ``configure`` that logs a bad value first,
and a check of the values given before the options existed (:func:`check_deferred`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from mitmproxy import exceptions
from mitmproxy import optmanager

logger = logging.getLogger(__name__)


class Configurable:
    """Base of the addons that declare ``toolvocab_*`` options: a subclass validates and caches its
    own options in ``_configure(updated)`` and raises ``OptionsError`` naming the bad one."""

    def configure(self, updated: set[str]) -> None:
        """Call ``_configure``; an ``OptionsError`` is logged as an error, then raised again:
        mitmproxy prints a script's exception under a traceback, and the user should read what
        is wrong before it."""
        try:
            self._configure(updated)
        except exceptions.OptionsError as exc:
            logger.error("%s", exc)
            raise

    def _configure(self, updated: set[str]) -> None:
        raise NotImplementedError


def check_deferred(
    loader: Any,
    names: Iterable[str],
    *,
    optional: Iterable[str] = (),
    omitted: Mapping[str, str] | None = None,
) -> None:
    """Take out of mitmproxy's deferred options each value it could not read that would drop this
    script, and log why as an error (mitmdump and mitmweb then exit at start: their
    ``errorcheck`` addon).

    ``--set`` and ``config.yaml`` values for options a script declares wait in
    ``OptManager.deferred`` until the script's ``load`` has run; mitmproxy then reads every
    deferred value whose option is known by then (``AddonManager.register`` →
    ``OptManager.process_deferred``, after each script's load), and one it cannot read raises
    there: ``Option is required`` for a plain string option named without a value
    (``--set toolvocab_mode``; an optional one, ``str | None``, reads as ``None``), ``Received
    multiple values`` for one named twice, a type error for a ``config.yaml`` boolean or number
    (``toolvocab_redact: false``: read here as its text). That exception ends the script's
    registration: every addon of the script is dropped, for the first two without a word
    (mitmproxy 11.0 and 12.x). A value that raised for an earlier script stays deferred and
    raises again at each later registration: another script's value that mitmproxy refuses
    (:func:`_refused`) is taken out too.

    ``names``: this addon's options (call this at the end of ``load(loader)``, after
    ``add_option``); ``optional``: those of them that read a missing value as ``None``;
    ``omitted``: the value an option named without one reads as (mitmproxy's own rule for a
    boolean: an omitted value is true), instead of an error."""
    options = getattr(getattr(loader, "master", None), "options", None)
    deferred = getattr(options, "deferred", None)
    if not isinstance(deferred, dict):
        return
    names, optional = list(names), set(optional)
    # another script's (toolvocab's own are each checked by the addon declaring it, in this
    # registration, before mitmproxy reads any of them)
    for name in [n for n in deferred if not n.startswith("toolvocab_")]:
        given = getattr(deferred[name], "val", None)
        try:
            known = name in options  # type: ignore[operator]
            kind = optmanager.dump_dicts(options, [name])[name]["type"] if known else None
        except Exception:
            kind = None  # a type --set cannot give (mitmproxy raises NotImplementedError): left to it
        if isinstance(given, list) and kind is not None and _refused(given, kind):
            # a sibling addon's value is read at this registration, an earlier script's was read
            # (and refused) at its own: only a value mitmproxy refuses is taken out
            del deferred[name]
            logger.error(
                "%s: mitmproxy could not read the value given for it, and dropped the script that declares it", name
            )
    for name in names:
        value = deferred.get(name)
        if isinstance(value, (bool, int, float)):
            # config.yaml's true, false or a number, for an option read as a string: mitmproxy's
            # type check would raise the same way
            deferred[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
            continue
        given = getattr(value, "val", None)  # the strings of --set, unread
        if not isinstance(given, list) or len(given) == 1 or (not given and name in optional):
            continue
        if not given and omitted is not None and name in omitted:
            deferred[name] = omitted[name]  # read as is: process_deferred converts only the unread
            continue
        del deferred[name]
        if given:
            logger.error("%s: given %d values (%s); give one", name, len(given), ", ".join(repr(v) for v in given))
        else:
            logger.error("%s: given without a value; write --set %s=VALUE", name, name)


def _refused(given: list[str], kind: str) -> bool:
    """Whether mitmproxy refuses these ``--set`` strings for an option of type ``kind`` (as
    ``optmanager.dump_dicts`` names it), as ``OptManager._parse_setval`` reads them (mitmproxy 11.0,
    12.x): several values for anything but a sequence, none for a plain ``str`` or ``int``, an
    ``int`` that is no integer, a ``bool`` other than true, false, toggle or none."""
    if kind == "sequence of str":
        return False
    if len(given) > 1:
        return True
    text = given[0] if given else None
    if kind == "str":
        return text is None
    if kind in ("int", "optional int"):
        if not text:
            return kind == "int"
        try:
            int(text)
        except ValueError:
            return True
        return False
    if kind == "bool":
        return text not in (None, "", "true", "false", "toggle")
    return False
