"""What every toolvocab addon with options shares: ``configure`` that logs a bad value first."""

from __future__ import annotations

import logging

from mitmproxy import exceptions

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
