"""The tool vocabulary: which capability each known tool name stands for, with its source.

A tool name is not checked by any API. A client declares its tools; the model answers with a
name it may have learned from another agent (``bash`` to Qwen Code, which declares
``run_shell_command``; ``str_replace_editor`` to a client that declares ``edit``). The repair
ladder's last rule compares capabilities: the answered name's capability (looked up here) against
the capabilities of the tools the client declared. Exactly one declared tool with that
capability → rename to it; none, or two or more → leave the call unchanged.

That rule is only as safe as this table, so the table follows one rule of its own:

    **Two names share a capability only when a call to one is a faithful call to the other.**

``Edit`` and ``apply_patch`` both change files but take different payloads (an exact
old/new string versus a patch envelope), so they are ``edit`` and ``patch``. ``MultiEdit``
takes a list of edits and Cline's ``replace_in_file`` a SEARCH/REPLACE diff, so each gets its
own capability. A tool that substitutes for nothing else (``view_image``, ``CronCreate``, the
``Task*`` list tools) gets a capability of its own too, which makes it a capability held by one
name only: it can then never be the target of a rename from a different name. Families of
tools (``TaskCreate`` / ``TaskGet`` / ``TaskList`` / ``TaskUpdate``) are split one capability per
tool, because one member is not a substitute for another.

Each row records the name exactly as the agent spells it, the capability, who uses it and
where that is written down (a captured request of a pinned client version, a documentation
page, a source file, or a public bug report). One row per (name, client); a name used by three
agents has three rows. ``ENTRIES`` is sorted by capability, then name, then client.

Lookup (:func:`capability_of`): an exact name first; otherwise the rows whose names share the
name's :func:`~toolvocab.engine.names.name_key` (case and separators ignored) — used only when all of
them agree on one capability. Namespaced MCP names (``mcp__server__Bash``) match no row.

Adding a row:

1. Find a concrete source: a captured request (``declared by <client> <version>``), a doc page,
   a source file path, or a bug report with its issue number. No source, no row; misspellings
   (``applypatch``) are not rows — the ladder's name normalization covers them.
2. Pick the capability by the substitution rule above. If the tool is not a faithful substitute
   for any existing capability, add a new capability to ``_CAPABILITY_NOTES`` with one line
   saying what it does.
3. Add ``_row(name, capability, clients, source)`` in the capability's block below and run
   ``tests/unit/test_vocabulary.py``: it rejects an unknown capability, a duplicate
   (name, client), one exact name with two capabilities, and ``edit``/``patch`` sharing a name key.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolvocab.engine.names import name_key


@dataclass(frozen=True, slots=True)
class VocabEntry:
    """One known tool name: its capability, who uses it, and where that is written down."""

    name: str
    """The exact spelling the client or agent declares."""
    capability: str
    """One of :data:`CAPABILITIES`."""
    clients: str
    """Who uses the name, e.g. ``"Claude Code"``."""
    source: str
    """Where it is written down: client + version + doc/file, or a bug report."""


#: Every capability, with what a tool of that capability does. Two tools share one only when
#: either is a faithful substitute for the other.
_CAPABILITY_NOTES: dict[str, str] = {
    # Core capabilities: the ones models carry across agents.
    "shell": "run a command in a POSIX shell (bash, sh, zsh) and return its output",
    "powershell": "run a command in PowerShell (Windows); its syntax is not a POSIX shell's",
    "read": "read a file's contents",
    "write": "create or overwrite a whole file",
    "edit": "replace an exact string in a file (old/new string)",
    "patch": "apply a multi-file patch envelope (*** Begin Patch ... *** End Patch)",
    "grep": "search file contents by pattern",
    "glob": "find files by name pattern",
    "list": "list a directory",
    "web_fetch": "fetch a URL",
    "web_search": "search the web",
    "todo": "write the agent's own todo list / plan (whole list per call)",
    "subagent": "start a subagent on a prompt",
    "notebook": "edit a Jupyter notebook cell",
    # Not substitutes for any of the above.
    "multi_edit": "several old/new string edits in one call",
    "diff_edit": "edit a file with a SEARCH/REPLACE diff block (Cline)",
    "monitor": "watch a background command's output and report events",
    "stdin": "write to the stdin of a running command session",
    "background_list": "list background processes started by the shell tool",
    "background_output": "read a background process's output by pid",
    "task_output": "read a background task's output by task id",
    "task_stop": "stop a background task by task id",
    "task_create": "create an item in the session task list",
    "task_get": "get one item of the session task list",
    "task_list": "list the session task list",
    "task_update": "update an item of the session task list",
    "skill": "load or run a named skill",
    "plan_mode": "enter plan mode",
    "plan_mode_exit": "present the plan and leave plan mode",
    "ask_user": "ask the user multiple-choice questions",
    "view_image": "attach a local image for the model to see",
    "tool_search": "search the deferred-tool catalog",
    "memory": "save a fact to long-term memory",
    "lsp": "code intelligence through a language server",
    "agent_message": "send a message to a running agent or teammate",
    "cron_create": "schedule a prompt",
    "cron_delete": "cancel a scheduled prompt",
    "cron_list": "list scheduled prompts",
    "worktree_enter": "create or enter a git worktree",
    "worktree_exit": "leave a git worktree",
    "goal_get": "read the session goal",
    "goal_create": "set the session goal",
    "goal_update": "change the session goal's status",
    "report_findings": "report review findings",
    "schedule_wakeup": "schedule the agent to resume later",
    "workflow": "run a workflow script",
    "topic": "update the session's topic / strategic intent",
    "mcp_resource_list": "list resources of connected MCP servers",
    "mcp_resource_read": "read one MCP resource by URI",
}

CAPABILITIES: frozenset[str] = frozenset(_CAPABILITY_NOTES)

# --- who ------------------------------------------------------------------------------------
_CC = "Claude Code"
_CODEX = "Codex CLI"
_CODEX_GUIDE = "OpenAI Codex prompting guide"
_OC = "OpenCode"
_QWEN = "Qwen Code"
_GEM = "Gemini CLI"
_CLINE = "Cline"
_OPENCLAW = "OpenClaw"
_HERMES = "Hermes Agent"
_TRAE = "trae-agent"
_PI = "pi"
_CRUSH = "Crush"
_ROO = "Roo Code"
_ANTHROPIC = "Anthropic text editor tool"
_CONVENTION = "open-agent convention"

# --- where ----------------------------------------------------------------------------------
_CC_DECL = "declared by Claude Code 2.1.197 (captured request)"
_CC_DOCS = "code.claude.com/docs/en/tools-reference.md"
_CODEX_DECL = "declared by Codex CLI 0.171.0 (captured request, model gpt-5.5)"
_CODEX_GUIDE_SRC = "developers.openai.com/cookbook/examples/gpt-5/codex_prompting_guide.md"
_OC_DECL = "declared by OpenCode 1.18.33 (captured request)"
_OC_DOCS = "opencode.ai/docs/tools (packages/web/src/content/docs/tools.mdx)"
_QWEN_DECL = "declared by Qwen Code 0.15.10 (captured request)"
_GEM_DECL = "declared by Gemini CLI 0.61.0 (captured request)"
_CLINE_SRC = "Cline's declared tools in askalf/dario#40 (BR-06)"
_ROO_SRC = "RooCodeInc/Roo-Code v3.52.1 src/core/prompts/tools/native-tools/*.ts (each tool's name)"
_PI_SRC = "pi's declared tools in apmantza/pi-free#544 (BR-28)"
_CRUSH_SRC = "charmbracelet/crush v0.90.0 internal/agent/tools/view.go (ViewToolName, ViewParams)"
_CRUSH_TOOLS = "charmbracelet/crush v0.90.0 internal/agent/tools/*.go (each tool's ToolName constant and Params)"
_CC_OLD = (
    "earlier Claude Code tool list (x1xhlol/system-prompts-and-models-of-ai-tools, Anthropic/Claude Code/Tools.json)"
)


def _row(name: str, capability: str, clients: str, source: str) -> VocabEntry:
    return VocabEntry(name=name, capability=capability, clients=clients, source=source)


_ROWS: tuple[VocabEntry, ...] = (
    # --- shell: run a command ---------------------------------------------------------------
    # POSIX shells only. PowerShell runs another language: it is its own capability
    # below, so a POSIX command (``bash``, ``sh -c``, a ``shell`` argv) never lands on it.
    _row("Bash", "shell", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("shell", "shell", _CODEX, "openai/codex#2072 (BR-01), openai/codex#3913 (BR-25); " + _CODEX_GUIDE_SRC),
    _row("shell_command", "shell", _CODEX, "openai/codex#31771 (BR-18)"),
    _row("exec_command", "shell", _CODEX, _CODEX_DECL),
    _row("cmd", "shell", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("run_terminal_cmd", "shell", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("bash", "shell", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("shell", "shell", _OC, "packages/opencode/src/tool/registry.ts on dev (registers shell)"),
    _row("run_shell_command", "shell", _QWEN, f"{_QWEN_DECL}; QwenLM/qwen-code docs/developers/tools/shell.md"),
    _row("run_shell_command", "shell", _GEM, _GEM_DECL),
    _row("execute_command", "shell", _CLINE, _CLINE_SRC),
    _row("execute_command", "shell", _ROO, _ROO_SRC),
    _row("exec", "shell", _OPENCLAW, "openclaw/openclaw PR #39328 (BR-10), openclaw/openclaw#20229 (BR-27)"),
    _row("terminal", "shell", _HERMES, "NousResearch/hermes-agent#8259 (BR-18)"),
    _row("bash", "shell", _TRAE, "bytedance/trae-agent trae_agent/tools/__init__.py (tools_registry)"),
    _row("bash", "shell", _PI, _PI_SRC),
    _row("bash", "shell", _CRUSH, _CRUSH_TOOLS),
    # --- powershell: run a command in PowerShell ---------------------------------------------
    _row("PowerShell", "powershell", _CC, f"{_CC_DOCS} (Windows, opt-in)"),
    # --- read -------------------------------------------------------------------------------
    _row("Read", "read", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("read", "read", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("read_file", "read", _QWEN, _QWEN_DECL),
    _row("read_file", "read", _GEM, _GEM_DECL),
    _row("read_file", "read", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("read_file", "read", _CLINE, _CLINE_SRC),
    _row("read_file", "read", _ROO, _ROO_SRC),
    _row("read_file", "read", _HERMES, "NousResearch/hermes-agent#8259 (BR-18)"),
    _row("read", "read", _OPENCLAW, "openclaw/openclaw PR #39328 (BR-10)"),
    _row("read", "read", _PI, _PI_SRC),
    _row("view", "read", _CRUSH, _CRUSH_SRC),
    # --- write: whole file ------------------------------------------------------------------
    _row("Write", "write", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("write", "write", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("write_file", "write", _QWEN, _QWEN_DECL),
    _row("write_file", "write", _GEM, _GEM_DECL),
    _row("write_to_file", "write", _CLINE, _CLINE_SRC),
    _row("write_to_file", "write", _ROO, _ROO_SRC),
    _row("write", "write", _CRUSH, _CRUSH_TOOLS),
    _row("write_file", "write", _HERMES, "hermes-agent 0.19.0 tools/file_tools.py (write_file)"),
    _row("write", "write", _OPENCLAW, "openclaw 2026.9.6 (npm), the write agent tool"),
    _row("write", "write", _PI, _PI_SRC),
    # --- edit: exact old/new string ---------------------------------------------------------
    _row("Edit", "edit", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("edit", "edit", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("edit", "edit", _QWEN, _QWEN_DECL),
    _row("replace", "edit", _QWEN, "legacy name of Qwen Code's edit, QwenLM/qwen-code#1307 (BR-04)"),
    _row("replace", "edit", _GEM, _GEM_DECL),
    _row(
        "str_replace_editor",
        "edit",
        _ANTHROPIC,
        "platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool (text_editor_20250124); "
        "answered to Qwen Code in QwenLM/qwen-code#1307 (BR-04)",
    ),
    _row(
        "str_replace_based_edit_tool",
        "edit",
        _ANTHROPIC,
        "platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool (text_editor_20250728)",
    ),
    _row(
        "str_replace_based_edit_tool",
        "edit",
        _TRAE,
        "bytedance/trae-agent trae_agent/tools/__init__.py (TextEditorTool)",
    ),
    _row("edit", "edit", _OPENCLAW, "openclaw/openclaw#20229, PR #50232 (BR-27)"),
    _row("edit", "edit", _PI, _PI_SRC),
    _row("edit", "edit", _CRUSH, _CRUSH_TOOLS),
    # --- multi_edit / diff_edit: change files, but not an Edit call -------------------------
    _row("MultiEdit", "multi_edit", _CC, _CC_OLD),
    _row("replace_in_file", "diff_edit", _CLINE, _CLINE_SRC),
    # --- patch: *** Begin Patch envelope ----------------------------------------------------
    _row("apply_patch", "patch", _CODEX, f"{_CODEX_DECL} (custom tool, Lark grammar)"),
    _row("apply_patch", "patch", _OC, f"{_OC_DOCS}; packages/opencode/src/tool/apply_patch.ts (gpt- models)"),
    # --- grep: search contents --------------------------------------------------------------
    _row("Grep", "grep", _CC, _CC_DOCS),
    _row("grep", "grep", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("grep_search", "grep", _QWEN, _QWEN_DECL),
    _row("grep_search", "grep", _GEM, _GEM_DECL),
    _row("search_file_content", "grep", _GEM, "earlier Gemini CLI, gemini-cli-extensions/conductor#39 (BR-30)"),
    _row("search_files", "grep", _CLINE, f"{_CLINE_SRC} (regex search)"),
    _row("search_files", "grep", _ROO, _ROO_SRC),
    _row("rg", "grep", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("grep", "grep", _PI, _PI_SRC),
    _row("grep", "grep", _CRUSH, _CRUSH_TOOLS),
    # --- glob: find files by name -----------------------------------------------------------
    _row("Glob", "glob", _CC, _CC_DOCS),
    _row("glob", "glob", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("glob", "glob", _QWEN, _QWEN_DECL),
    _row("glob", "glob", _GEM, _GEM_DECL),
    _row("glob", "glob", _CRUSH, _CRUSH_TOOLS),
    _row("glob_file_search", "glob", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("file_search", "glob", _CONVENTION, "llm-switcher 1.4.0 docs/tool-vocabulary.md, 'Other agents'"),
    _row("find", "glob", _PI, _PI_SRC),
    # --- list: a directory ------------------------------------------------------------------
    _row("LS", "list", _CC, f"{_CC_OLD}; docs.anthropic.com/en/docs/claude-code/iam"),
    _row("list_directory", "list", _QWEN, _QWEN_DECL),
    _row("list_directory", "list", _GEM, _GEM_DECL),
    _row("list_dir", "list", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("list_files", "list", _CLINE, _CLINE_SRC),
    _row("list_files", "list", _ROO, _ROO_SRC),
    _row("ls", "list", _PI, _PI_SRC),
    _row("ls", "list", _CRUSH, _CRUSH_TOOLS),
    # --- web --------------------------------------------------------------------------------
    _row("WebFetch", "web_fetch", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("webfetch", "web_fetch", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("fetch", "web_fetch", _CRUSH, _CRUSH_TOOLS),
    _row("web_fetch", "web_fetch", _QWEN, _QWEN_DECL),
    _row("web_fetch", "web_fetch", _GEM, _GEM_DECL),
    _row("WebSearch", "web_search", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("websearch", "web_search", _OC, f"{_OC_DOCS}; packages/opencode/src/tool/websearch.ts"),
    _row("web_search", "web_search", _QWEN, "qwenlm.github.io/qwen-code-docs/en/tools/web-search (before MCP)"),
    _row("google_web_search", "web_search", _GEM, _GEM_DECL),
    # --- todo: the agent's own list ---------------------------------------------------------
    _row("TodoWrite", "todo", _CC, f"{_CC_DOCS} (claude -p / Agent SDK)"),
    _row("todowrite", "todo", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("todo_write", "todo", _QWEN, _QWEN_DECL),
    _row("todo_write", "todo", _CODEX_GUIDE, _CODEX_GUIDE_SRC),
    _row("write_todos", "todo", _GEM, f"{_GEM_DECL} with -m gemini-2.5-pro"),
    _row("update_plan", "todo", _CODEX, "codex-rs/core/src/tools/handlers/plan.rs; openai/codex#2072 (BR-01)"),
    # --- subagent ---------------------------------------------------------------------------
    _row("Agent", "subagent", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("Task", "subagent", _CC, f"{_CC_OLD}; the name before Agent"),
    _row("task", "subagent", _OC, f"{_OC_DECL}; packages/opencode/src/tool/task.ts"),
    _row("agent", "subagent", _QWEN, _QWEN_DECL),
    _row("invoke_agent", "subagent", _GEM, _GEM_DECL),
    # --- notebook ---------------------------------------------------------------------------
    _row("NotebookEdit", "notebook", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    # --- watch / drive running commands (not shells) ----------------------------------------
    _row("Monitor", "monitor", _CC, _CC_DOCS),
    _row("monitor", "monitor", _QWEN, _QWEN_DECL),
    _row("write_stdin", "stdin", _CODEX, _CODEX_DECL),
    _row("list_background_processes", "background_list", _GEM, _GEM_DECL),
    _row("read_background_output", "background_output", _GEM, _GEM_DECL),
    _row("TaskOutput", "task_output", _CC, f"{_CC_DECL}; {_CC_DOCS} (deprecated)"),
    _row("TaskStop", "task_stop", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("task_stop", "task_stop", _QWEN, _QWEN_DECL),
    # --- Claude Code's session task list (not a todo list written whole) --------------------
    _row("TaskCreate", "task_create", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("TaskGet", "task_get", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("TaskList", "task_list", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("TaskUpdate", "task_update", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    # --- skills -----------------------------------------------------------------------------
    _row("Skill", "skill", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("skill", "skill", _OC, f"{_OC_DECL}; {_OC_DOCS}"),
    _row("skill", "skill", _QWEN, _QWEN_DECL),
    _row("activate_skill", "skill", _GEM, _GEM_DECL),
    # --- plan mode --------------------------------------------------------------------------
    _row("EnterPlanMode", "plan_mode", _CC, _CC_DOCS),
    _row("enter_plan_mode", "plan_mode", _GEM, _GEM_DECL),
    _row("ExitPlanMode", "plan_mode_exit", _CC, _CC_DOCS),
    # --- ask the user -----------------------------------------------------------------------
    _row("AskUserQuestion", "ask_user", _CC, _CC_DOCS),
    _row("request_user_input", "ask_user", _CODEX, _CODEX_DECL),
    _row("question", "ask_user", _OC, f"{_OC_DOCS}; packages/opencode/src/tool/registry.ts"),
    # --- one-of-a-kind tools ----------------------------------------------------------------
    _row("view_image", "view_image", _CODEX, _CODEX_DECL),
    _row("ToolSearch", "tool_search", _CC, _CC_DOCS),
    _row("tool_search", "tool_search", _QWEN, _QWEN_DECL),
    _row("save_memory", "memory", _QWEN, "qwenlm.github.io/qwen-code-docs/en/tools/memory; qwen-code#1307 (BR-04)"),
    _row("save_memory", "memory", _GEM, "gemini-cli-extensions/conductor#39 (BR-30)"),
    _row("LSP", "lsp", _CC, _CC_DOCS),
    _row("lsp", "lsp", _OC, f"{_OC_DOCS} (experimental)"),
    _row("SendMessage", "agent_message", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("send_message", "agent_message", _QWEN, _QWEN_DECL),
    _row("CronCreate", "cron_create", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("CronDelete", "cron_delete", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("CronList", "cron_list", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("EnterWorktree", "worktree_enter", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("ExitWorktree", "worktree_exit", _CC, f"{_CC_DECL}; {_CC_DOCS}"),
    _row("get_goal", "goal_get", _CODEX, _CODEX_DECL),
    _row("create_goal", "goal_create", _CODEX, _CODEX_DECL),
    _row("update_goal", "goal_update", _CODEX, _CODEX_DECL),
    _row("ReportFindings", "report_findings", _CC, _CC_DECL),
    _row("ScheduleWakeup", "schedule_wakeup", _CC, _CC_DECL),
    _row("Workflow", "workflow", _CC, _CC_DECL),
    _row("update_topic", "topic", _GEM, _GEM_DECL),
    _row("ListMcpResourcesTool", "mcp_resource_list", _CC, _CC_DOCS),
    _row("ReadMcpResourceTool", "mcp_resource_read", _CC, _CC_DOCS),
)

ENTRIES: tuple[VocabEntry, ...] = tuple(sorted(_ROWS, key=lambda e: (e.capability, e.name, e.clients)))


class _Index:
    """Lookups over a table of rows, built once: by exact name and by :func:`name_key`."""

    __slots__ = ("_by_key", "_by_name")

    def __init__(self, entries: tuple[VocabEntry, ...]) -> None:
        by_name: dict[str, list[VocabEntry]] = {}
        by_key: dict[str, list[VocabEntry]] = {}
        for entry in entries:
            by_name.setdefault(entry.name, []).append(entry)
            by_key.setdefault(name_key(entry.name), []).append(entry)
        self._by_name = {k: tuple(v) for k, v in by_name.items()}
        self._by_key = {k: tuple(v) for k, v in by_key.items()}

    def entries_named(self, name: str) -> tuple[VocabEntry, ...]:
        return self._by_name.get(name, ())

    def entries_for(self, name: str) -> tuple[VocabEntry, ...]:
        rows = self._by_name.get(name)
        if rows:
            return rows
        return self._by_key.get(name_key(name), ())

    def capability_of(self, name: str) -> str | None:
        capabilities = {entry.capability for entry in self.entries_for(name)}
        return capabilities.pop() if len(capabilities) == 1 else None


_INDEX = _Index(ENTRIES)


def entries_named(name: str) -> tuple[VocabEntry, ...]:
    """The rows spelled exactly ``name`` (empty for a name no row spells so)."""
    return _INDEX.entries_named(name)


#: Shell tools named after a POSIX shell: a call to one never means PowerShell. Every other
#: ``shell`` name (``shell``, ``run_shell_command``, ``execute_command``, ``exec``, ``terminal``…)
#: is generic, and with both a POSIX shell and PowerShell declared it names two tools.
_POSIX_SHELL_NAMES = frozenset({name_key("bash"), name_key("sh"), name_key("zsh")})


def names_a_posix_shell(name: str) -> bool:
    """True when ``name`` (read as :func:`~toolvocab.engine.names.name_key`) is a POSIX shell's."""
    return name_key(name) in _POSIX_SHELL_NAMES


def entries_for(name: str) -> tuple[VocabEntry, ...]:
    """The rows :func:`capability_of` decides ``name`` by.

    The rows spelled exactly ``name`` when there are any; otherwise every row whose name has the
    same :func:`~toolvocab.engine.names.name_key` (``BASH`` → ``Bash`` and the ``bash`` rows). Empty for an
    unknown name.
    """
    return _INDEX.entries_for(name)


def capability_of(name: str) -> str | None:
    """The capability of ``name``, or ``None`` when the table gives it none.

    Exact spelling first. Otherwise the rows sharing the name's key, only when they all agree:
    a key whose rows disagree is ambiguous and gives ``None``, as does an unknown name.
    """
    return _INDEX.capability_of(name)
