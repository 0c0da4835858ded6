"""Control tokens of model families that a server's parser leaves glued to a tool call's edges.

A tool-call parser that splits a model's markup at the wrong place leaves one of the family's own
special tokens on a field: GLM's ``"name": "tool_12</arg_value>"`` (fw-ai-external/python-sdk#119),
an argument key ``"path</arg_key>"`` (vllm-project/vllm PR #54971), gpt-oss's ``<|call|>`` after
complete argument JSON (mastra-ai/mastra PR #12823). Such a token is no part of what the model
meant: removing it is a change of spelling. Only these tokens, only at the end of a name, a key or
the argument text, never inside a value; whether the cleaned name or key is one the client declared
(and collides with nothing) is for the caller to check.

Sources of the token lists:

- GLM-4.5 / 4.6 (the ``chat_template.jinja`` of zai-org/GLM-4.5; vLLM's ``glm4_moe`` tool parser):
  ``<tool_call>NAME\\n<arg_key>KEY</arg_key>\\n<arg_value>VALUE</arg_value>\\n</tool_call>``;
- gpt-oss "harmony" (openai/harmony, the format's special tokens): ``<|start|>``, ``<|channel|>``,
  ``<|constrain|>``, ``<|message|>``, ``<|call|>``, ``<|end|>``, ``<|return|>``.
"""

from __future__ import annotations

GLM_TOKENS: tuple[str, ...] = ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
HARMONY_TOKENS: tuple[str, ...] = (
    "<|start|>",
    "<|channel|>",
    "<|constrain|>",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    "<|return|>",
)
CONTROL_TOKENS: tuple[str, ...] = GLM_TOKENS + HARMONY_TOKENS


def strip_glued(text: str) -> str | None:
    """``text`` without the control tokens (:data:`CONTROL_TOKENS`) glued to its end, or ``None``
    when none is there or nothing would remain. Only tokens written directly after the text (no
    whitespace between) count: ``"tool_12</arg_value>"`` → ``"tool_12"``; ``"path</arg_key>"`` →
    ``"path"``; ``"a b"`` and ``"<arg_key>"`` alone → ``None``."""
    out = text
    while True:
        token = next((t for t in CONTROL_TOKENS if out.endswith(t)), None)
        if token is None:
            break
        out = out[: -len(token)]
    if out == text or not out or out != out.rstrip():
        return None
    return out


def strip_after_json(text: str) -> str | None:
    """Argument ``text`` without the control tokens (and whitespace) after its last ``}``, or
    ``None`` when there are none: ``'{"command":"ls"}<|call|>'`` → ``'{"command":"ls"}'``. Whether
    what remains is complete JSON is the caller's check (a cut-off text is never completed)."""
    out = text.rstrip()
    found = False
    while True:
        token = next((t for t in CONTROL_TOKENS if out.endswith(t)), None)
        if token is None:
            break
        out = out[: -len(token)].rstrip()
        found = True
    if not found or not out.endswith("}"):
        return None
    return out
