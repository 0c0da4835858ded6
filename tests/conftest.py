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

    def factory(
        upstream_url: str | None = None,
        *,
        options: dict[str, str] | None = None,
        save: bool = True,
        script: str | os.PathLike | None = procs.DEFAULT_SCRIPT,
        **kwargs,
    ) -> procs.MitmdumpHandle:
        if upstream_url is None:
            upstream_url = request.getfixturevalue("fake_upstream").url
        save_path = str(tmp_path / f"flows-{next(counter)}.mitm") if save else None
        handle = procs.start_mitmdump(upstream_url, options=options, save_path=save_path, script=script, **kwargs)
        started.append(handle)
        return handle

    yield factory
    for handle in started:
        handle.stop()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for handle in started:
            print(f"\n=== mitmdump on port {handle.port} ===\n{handle.output()}")


def pytest_sessionfinish(session, exitstatus):
    """Stop every helper process a test left running (``procs.stop_all``), and say which."""
    left = procs.stop_all()
    if left:
        print(f"\ntests left {len(left)} process(es) running, stopped now: {', '.join(left)}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report as ``item.rep_<phase>`` (for teardown diagnostics)."""
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


#: The integration tests the README's test command runs (the quick profile), one parametrization
#: each: a repair through a real mitmdump for every SDK and wire, the stream bounds, the request
#: layout, the first-minute commands, what mitmweb shows and what a save writes. Each starts
#: mitmdump (~2 s of imports and startup on 2 cores), so the rest run as their own ``.ci/run`` step (``TOOLVOCAB_INTEGRATION=rest``).
SMOKE = frozenset({
    "tests/fuzz/test_redaction_states.py::test_mitmdump_saves_a_client_gone_mid_body_without_its_credentials",
    "tests/integration/test_anthropic_sdk.py::test_foreign_bash_is_renamed_to_declared_Bash",
    "tests/integration/test_anthropic_sdk.py::test_shell_with_argv_becomes_Bash_command_string",
    "tests/integration/test_argjson_mitmdump.py::test_chat",
    "tests/integration/test_demo.py::test_demo_shows_a_repair_with_no_agent_and_no_key",
    "tests/integration/test_empty_arguments_sdk.py::test_chat_empty_arguments_reach_the_sdk_as_an_empty_object_with_finish_reason_tool_calls",
    "tests/integration/test_genai_sdk.py::test_foreign_names_become_declared_names",
    "tests/integration/test_leaked_calls_sdk.py::test_markup_alone_reaches_the_sdk_as_a_call",
    "tests/integration/test_meaning_mitmdump.py::test_the_client_runs_what_the_model_meant",
    "tests/integration/test_mitmweb_debugging.py::test_mitmweb_shows_each_state_its_reason_readable_commands_and_a_truthful_replay",
    "tests/integration/test_openai_sdk.py::test_chat_foreign_Bash_becomes_run_shell_command",
    "tests/integration/test_openai_sdk.py::test_responses_shell_argv_becomes_exec_command",
    "tests/integration/test_openai_sdk.py::test_websocket_frames_are_repaired_in_order",
    "tests/integration/test_peek_mitmdump.py::test_a_key_repeated_deep_in_the_transcript_leaves_the_answer_as_sent",
    "tests/integration/test_rename_upstream.py::test_chat_long_name_succeeds_and_the_sdk_sees_the_original",
    "tests/integration/test_request_cost_mitmdump.py::test_large_changed_request_through_the_sdk_is_a_whole_write",
    "tests/integration/test_safe_defaults.py::test_the_console_script_listens_on_127_0_0_1_unless_told",
    "tests/integration/test_signed_requests.py::test_a_sigv4_signed_bedrock_request_reaches_the_upstream_as_signed_and_its_answer_is_repaired",
    "tests/integration/test_stream_faults.py::test_every_received_byte_reaches_the_client_when_the_upstream_dies",
    "tests/integration/test_stream_stall.py::test_a_held_block_reaches_the_client_while_the_upstream_stalls",
    "tests/integration/test_text_calls_sdk.py::test_chat_text_that_is_only_markup_becomes_a_call",
})  # fmt: skip


def pytest_collection_modifyitems(config, items):
    """Integration profiles: by default (``quick``, the README's test command) only the first
    parametrization of each :data:`SMOKE` test; ``TOOLVOCAB_INTEGRATION=full`` runs every
    integration test; ``rest`` the ones the quick profile leaves out (``.ci/run`` runs those as
    its own step, after the README command)."""
    profile = os.environ.get("TOOLVOCAB_INTEGRATION", "quick").strip().lower()
    if profile == "full":
        return
    seen: set[str] = set()
    keep, drop = [], []
    for item in items:
        if item.get_closest_marker("integration") is not None:
            function = item.nodeid.split("[", 1)[0]
            if function not in SMOKE or function in seen:
                drop.append(item)
                continue
            seen.add(function)
        keep.append(item)
    if profile == "rest":
        keep, drop = drop, [i for i in items if i not in drop]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
