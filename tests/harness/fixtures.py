"""The pytest fixtures over ``harness``: a test module that drives the hooks imports them
(``from harness.fixtures import env, loaded``) and gets the script loaded once for the module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mitmproxy.test import taddons

from harness import Env
from harness import configured
from harness import script_context


@pytest.fixture(scope="module")
def loaded() -> Iterator[tuple[taddons.context, Any]]:
    """Fixture: ``(tctx, module)``, the script loaded once for the test module that imports it."""
    with script_context() as pair:
        yield pair


@pytest.fixture
def env(loaded: tuple[taddons.context, Any]) -> Iterator[Env]:
    """Fixture: an ``Env`` over ``loaded`` with ``DEFAULTS`` set before and after."""
    with configured(loaded) as e:
        yield e
