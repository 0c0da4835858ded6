"""Shared fixtures: a fake LLM upstream process and a mitmdump factory (see tests/procs.py)."""

from __future__ import annotations

import itertools
import os

import pytest

import procs


@pytest.fixture
def fake_upstream():
    """A running ``tests/fake_upstream.py`` (FakeUpstreamHandle); stopped after the test."""
    handle = procs.start_fake_upstream()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def fake_and_proxy(request):
    """One fake upstream and one ``mitmdump -s addon/toolvocab.py`` (reverse mode, no saved
    flows) for the whole module: ``(FakeUpstreamHandle, MitmdumpHandle)``; both stopped by PID at
    the module's end.  A module's ``FAKE_CONFIG`` (dict) is sent to ``/__fake/config`` first
    (``{"chunk_size": 7}``, say)."""
    fake = procs.start_fake_upstream()
    px = None
    try:
        config = getattr(request.module, "FAKE_CONFIG", None)
        if config:
            fake.config(**config)
        px = procs.start_mitmdump(fake.url, save_path=None)
        yield fake, px
    finally:
        if px is not None:
            px.stop()
        fake.stop()


@pytest.fixture
def proxy(request, tmp_path):
    """Factory: ``proxy(upstream_url=None, *, options=None, save=True, script=ADDON)``.

    Starts mitmdump in reverse mode in front of ``upstream_url`` (default: the test's
    ``fake_upstream``), saving flows to a file under ``tmp_path`` unless ``save=False``.
    Returns a MitmdumpHandle (``.url``, ``.port``, ``.flows()``, ``.stop()``); every proxy
    started is stopped at teardown, and its output is printed if the test failed.
    """
    started: list[procs.MitmdumpHandle] = []
    counter = itertools.count(1)

    def factory(upstream_url: str | None = None, *, options: dict[str, str] | None = None,
                save: bool = True, script: str | os.PathLike | None = procs.DEFAULT_SCRIPT,
                **kwargs) -> procs.MitmdumpHandle:
        if upstream_url is None:
            upstream_url = request.getfixturevalue("fake_upstream").url
        save_path = str(tmp_path / f"flows-{next(counter)}.mitm") if save else None
        handle = procs.start_mitmdump(upstream_url, options=options, save_path=save_path,
                                      script=script, **kwargs)
        started.append(handle)
        return handle

    yield factory
    for handle in started:
        handle.stop()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for handle in started:
            print(f"\n=== mitmdump on port {handle.port} ===\n{handle.output()}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report as ``item.rep_<phase>`` (for teardown diagnostics)."""
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


def pytest_collection_modifyitems(config, items):
    """Quick profile (the README's test command): an integration test function with several
    parametrizations runs its first one only (each starts a real mitmdump: seconds apiece).
    ``TOOLVOCAB_INTEGRATION=full`` runs every parametrization; ``rest`` only the ones the quick
    profile leaves out (``.ci/run`` runs those as its own step, after the README command)."""
    profile = os.environ.get("TOOLVOCAB_INTEGRATION", "quick").strip().lower()
    if profile == "full":
        return
    seen: set[str] = set()
    keep, drop = [], []
    for item in items:
        if item.get_closest_marker("integration") is not None and getattr(item, "callspec", None) is not None:
            function = item.nodeid.split("[", 1)[0]
            if function in seen:
                drop.append(item)
                continue
            seen.add(function)
        keep.append(item)
    if profile == "rest":
        keep, drop = drop, [i for i in items if i not in drop]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
