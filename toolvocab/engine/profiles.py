"""Rename profiles: present the caller's tools to an upstream under the names it wants.

A profile file is TOML. Each ``[[profile]]`` selects requests by regexes on the upstream host,
the request path and the model, and maps capabilities to the names that upstream or model wants
(for example ``shell = "shell"`` to present Claude Code's ``Bash`` to a model trained on Codex's
vocabulary). Only the caller's own tools are renamed, with their schema and description
untouched, and every answer is renamed back. A profile adds no tool and changes no header: it
cannot make a request look like another client's to an access gate.

    [[profile]]
    name = "codex-vocabulary"
    model = "^gpt-5"
    [profile.names]
    shell = "shell"
    read = "read_file"
"""

from __future__ import annotations

import difflib
import re
import tomllib
from typing import Any

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic import field_validator
from pydantic import model_validator

from toolvocab.engine.grammar import GRAMMARS
from toolvocab.engine.vocabulary import CAPABILITIES

#: Hosts that admit requests by the client's tool names (an access gate): OpenCode Zen's free
#: tier answers 403 FreeTierError unless OpenCode's core tool names are present (BR-28;
#: anomalyco/opencode#49621). No profile applies there: renaming a client's tools to another
#: client's names to pass such a gate would circumvent the provider's terms.
ACCESS_GATES: tuple[str, ...] = (r"(^|\.)opencode\.ai$",)


def is_access_gate(host: str) -> bool:
    """True when ``host`` is a known access gate (see :data:`ACCESS_GATES`)."""
    return any(re.search(p, host or "") for p in ACCESS_GATES)


class ProfileError(ValueError):
    """A profile file that cannot be used; the message names the file, line and problem."""


class Profile(BaseModel):
    """One ``[[profile]]`` table.

    ``host`` / ``path`` / ``model``: regexes (``re.search``) on the upstream host, the request
    path (query included) and the request's model; an absent one matches everything.
    ``names``: capability → the upstream name for the one declared tool with that capability.
    ``grammar``: one of the known grammars, replacing the dialect's (optional).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    host: str | None = None
    path: str | None = None
    model: str | None = None
    grammar: str | None = None
    names: dict[str, str] = Field(default_factory=dict)

    @field_validator("host", "path", "model")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regex {value!r}: {exc}") from exc
        return value

    @field_validator("grammar")
    @classmethod
    def _grammar(cls, value: str | None) -> str | None:
        if value is not None and value not in GRAMMARS:
            raise ValueError(f"unknown grammar {value!r}; known: {', '.join(sorted(GRAMMARS))}")
        return value

    @field_validator("names")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for capability, target in value.items():
            if capability not in CAPABILITIES:
                raise ValueError(f"unknown capability {capability!r}")
            if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", target):
                raise ValueError(f"{capability} = {target!r} is not a usable tool name")
        return value

    @model_validator(mode="after")
    def _distinct(self) -> Profile:
        targets = list(self.names.values())
        dupes = {t for t in targets if targets.count(t) > 1}
        if dupes:
            raise ValueError(f"two capabilities map to the same name: {', '.join(sorted(dupes))}")
        return self

    def matches(self, host: str, path: str, model: str | None) -> bool:
        """True when this profile applies to a request to ``host`` + ``path`` for ``model``."""
        if self.host is not None and not re.search(self.host, host or ""):
            return False
        if self.path is not None and not re.search(self.path, path or ""):
            return False
        if self.model is not None and not re.search(self.model, model or ""):
            return False
        return True


class ProfileSet(BaseModel):
    """All profiles of one file, in file order; :meth:`select` returns the first match."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: list[Profile] = Field(default_factory=list)

    def select(self, host: str, path: str, model: str | None) -> Profile | None:
        """The first profile matching the request, or ``None`` — always ``None`` at a known
        access gate (:func:`is_access_gate`)."""
        if is_access_gate(host):
            return None
        for profile in self.profile:
            if profile.matches(host, path, model):
                return profile
        return None


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line number (1-based) of the value at ``loc`` (pydantic error location)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"\s*\[\[\s*profile\s*\]\]", line)]
    if len(loc) >= 2 and loc[0] == "profile" and isinstance(loc[1], int) and loc[1] < len(starts):
        begin = starts[loc[1]]
        end = starts[loc[1] + 1] if loc[1] + 1 < len(starts) else len(lines)
        for key in reversed([k for k in loc[2:] if isinstance(k, str)]):
            for i in range(begin, end):
                if re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", lines[i]) or re.match(
                    rf"\s*\[\s*profile\.{re.escape(key)}\s*\]", lines[i]
                ):
                    return i + 1
        return begin + 1
    if loc and isinstance(loc[0], str):
        # A top-level key: a misspelt table (`[[profiles]]`), `[profile]` as one table, `profile = "x"`.
        key = re.escape(loc[0])
        for i, line in enumerate(lines):
            if re.match(rf"\s*(\[\[?\s*{key}\s*\]\]?|\"?{key}\"?\s*=)", line):
                return i + 1
    return None


_TARGET = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def _entry_line(text: str, index: int, key: str) -> int | None:
    """The line (1-based) of the ``key = …`` entry of profile ``index``'s names: a
    ``names.key = …`` dotted key, an entry under ``[profile.names]``, or the inline
    ``names = {…}`` line; None when not found."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"\s*\[\[\s*profile\s*\]\]", line)]
    if index >= len(starts):
        return None
    begin = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else len(lines)
    k = rf"(?:\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})"
    in_names = False
    for i in range(begin, end):
        line = lines[i]
        if re.match(r"\s*\[", line):
            in_names = re.match(r"\s*\[\s*profile\s*\.\s*names\s*\]", line) is not None
            continue
        if re.match(rf"\s*names\s*\.\s*{k}\s*=", line) or (in_names and re.match(rf"\s*{k}\s*=", line)):
            return i + 1
    for i in range(begin, end):
        if re.match(r"\s*names\s*=\s*\{", lines[i]) and re.search(rf"[{{,]\s*{k}\s*=", lines[i]):
            return i + 1
    return None


def _names_problems(data: Any, text: str, source: str) -> tuple[list[tuple[int, str]], set[int]]:
    """Problems of each profile's ``names`` entries, each at its own line: an unknown capability
    (with the closest known one, and every valid name), a target no upstream accepts, a target
    two capabilities share. Returns ((line or 0, message) pairs, indexes of profiles with problems)."""
    problems: list[tuple[int, str]] = []
    bad: set[int] = set()
    profiles = data.get("profile") if isinstance(data, dict) else None
    if not isinstance(profiles, list):
        return problems, bad
    valid = ", ".join(sorted(CAPABILITIES))
    for i, profile in enumerate(profiles):
        names = profile.get("names") if isinstance(profile, dict) else None
        if not isinstance(names, dict):
            continue
        seen: dict[str, str] = {}
        for key, target in names.items():
            message = None
            if key not in CAPABILITIES:
                close = difflib.get_close_matches(key, sorted(CAPABILITIES), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else "."
                message = f"unknown capability {key!r}{hint} Valid capabilities: {valid}"
            elif isinstance(target, str) and not _TARGET.fullmatch(target):
                message = (
                    f"{key} = {target!r} is not a usable tool name (1 to 128 of the characters A-Z a-z 0-9 _ . : -)"
                )
            elif isinstance(target, str) and target in seen:
                message = f"{key} = {target!r}: {seen[target]} already maps to {target!r} (one name per capability)"
            if isinstance(target, str):
                seen.setdefault(target, key)
            if message:
                line = _entry_line(text, i, key)
                where = f"{source}:{line}" if line else source
                problems.append((line or 0, f"{where}: profile.{i}.names.{key}: {message}"))
                bad.add(i)
    return problems, bad


def parse_profiles(text: str, source: str = "<profiles>") -> ProfileSet:
    """Parse and validate a profile file's text.

    Raises :class:`ProfileError` with ``source:line: message`` for TOML syntax errors
    (tomllib reports ``at line L, column C``) and for every validation error, joined by ``; ``
    (the line of the offending key, found by scanning the ``[[profile]]`` tables).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        if m:
            where = f"{source}:{m.group(1)}"
        elif "end of document" in str(exc):
            where = f"{source}:{max(1, len(text.splitlines()))}"  # the last line
        else:
            where = source
        raise ProfileError(f"{where}: TOML syntax error: {exc}") from None
    # names entries are checked here, each at its own line (pydantic's validator below only
    # knows the `names` table as a whole)
    problems, bad = _names_problems(data, text, source)
    try:
        result = ProfileSet.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            if len(loc) >= 2 and loc[0] == "profile" and loc[1] in bad and (len(loc) == 2 or loc[2:] == ("names",)):
                continue  # already told entry by entry
            line = _line_of(text, loc)
            where = f"{source}:{line}" if line else source
            path = ".".join(str(p) for p in loc)
            problems.append((line or 0, f"{where}: {path}: {error['msg']}"))
    else:
        if not problems:
            return result
    problems.sort(key=lambda p: p[0])
    raise ProfileError("; ".join(message for _, message in problems)) from None


def load_profiles(path: str) -> ProfileSet:
    """Read and validate the profile file at ``path``; :class:`ProfileError` on any problem."""
    try:
        with open(path, "rb") as fp:
            raw = fp.read()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ProfileError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
    return parse_profiles(text, path)
