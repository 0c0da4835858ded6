#!/usr/bin/env bash
# Install the coding-agent CLIs used by the e2e tests into a project-local,
# git-ignored directory (default: <repo>/.e2e-clients, override with $TOOLVOCAB_CLIENTS).
#
#   tests/e2e/install_clients.sh                 # all known clients
#   tests/e2e/install_clients.sh claude codex    # only these
#
# Known clients (binary = <dest>/<client>/node_modules/.bin/<client>):
#   claude    @anthropic-ai/claude-code   Claude Code   (Anthropic Messages)
#   qwen      @qwen-code/qwen-code        Qwen Code     (OpenAI Chat Completions)
#   opencode  opencode-ai                 OpenCode      (OpenAI Chat Completions, openai-compatible)
#   codex     @openai/codex               Codex CLI     (OpenAI Responses)
#   gemini    @google/gemini-cli          Gemini CLI    (Gemini streamGenerateContent)
#
# Idempotent: a client whose binary already exists is skipped.  Every npm call is
# bounded by `timeout` ($TOOLVOCAB_INSTALL_TIMEOUT seconds, default 300).
# Exit status: 0 when every requested client is present afterwards, 1 otherwise,
# 2 on usage errors, 3 when node/npm are missing.
set -u

REPO=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${TOOLVOCAB_CLIENTS:-$REPO/.e2e-clients}
LIMIT=${TOOLVOCAB_INSTALL_TIMEOUT:-300}

pkg_of() {
  case $1 in
    # Pinned to the versions the e2e expectations were checked against; override with
    # TOOLVOCAB_<CLIENT>_VERSION (e.g. TOOLVOCAB_CLAUDE_VERSION=latest).
    claude)   echo "@anthropic-ai/claude-code@${TOOLVOCAB_CLAUDE_VERSION:-2.1.197}" ;;
    qwen)     echo "@qwen-code/qwen-code@${TOOLVOCAB_QWEN_VERSION:-0.15.10}" ;;
    opencode) echo "opencode-ai@${TOOLVOCAB_OPENCODE_VERSION:-1.18.33}" ;;
    codex)    echo "@openai/codex@${TOOLVOCAB_CODEX_VERSION:-0.171.0}" ;;
    gemini)   echo "@google/gemini-cli@${TOOLVOCAB_GEMINI_VERSION:-0.61.0}" ;;
    *) return 1 ;;
  esac
}

for tool in node npm timeout; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install_clients.sh: '$tool' not found on PATH" >&2
    exit 3
  fi
done

KNOWN="claude qwen opencode codex gemini"
[ $# -gt 0 ] || set -- $KNOWN

status=0
for client in "$@"; do
  if ! pkg=$(pkg_of "$client"); then
    echo "install_clients.sh: unknown client '$client' (known: $KNOWN)" >&2
    exit 2
  fi
  bin="$DEST/$client/node_modules/.bin/$client"
  if [ -x "$bin" ]; then
    echo "$client: already installed at $bin ($(timeout 30 "$bin" --version 2>/dev/null | head -n1))"
    continue
  fi
  echo "$client: npm install $pkg into $DEST/$client (timeout ${LIMIT}s)"
  if ! mkdir -p "$DEST/$client"; then
    echo "$client: cannot create $DEST/$client" >&2
    status=1
    continue
  fi
  if ! timeout --kill-after=10 "$LIMIT" \
      npm install --prefix "$DEST/$client" --no-fund --no-audit --no-update-notifier "$pkg"; then
    echo "$client: npm install failed or timed out" >&2
    status=1
    continue
  fi
  if [ -x "$bin" ]; then
    echo "$client: installed $bin ($(timeout 30 "$bin" --version 2>/dev/null | head -n1))"
  else
    echo "$client: npm finished but $bin is missing" >&2
    status=1
  fi
done
exit $status
