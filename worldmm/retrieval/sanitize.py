"""Memory text is data (spec 002 ARCH-8): sanitised and wrapped before it enters any prompt.

What a camera or microphone picked up — a poster, a video playing nearby, someone speaking — can
carry text that reads like an instruction to the model. Before memory text reaches a prompt it is
stripped of control characters, of anything that could close or open our delimiters, and of
instruction-like phrases (tool calls included), then capped in length and wrapped in `<memory>` tags that the prompts
declare to be data.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime

from worldmm.retrieval.models import RetrievedMemory

# Tags a memory could use to break out of its wrapper, impersonate prompt structure or a tool call.
_TAG = re.compile(
    r"</?\s*(memory|memories|system|assistant|user|instructions?|context|question"
    r"|tool_calls?|tool_use|tool_result|function_calls?|function_results?|invoke|parameter|recorded)\b[^>]*>",
    re.I,
)
# Chat-template control tokens (`<|im_start|>`, `<|tool_call|>`, `[INST]`).
_SPECIAL_TOKEN = re.compile(r"<\|[^|<>]{0,40}\|>|\[/?INST\]|\[/?TOOL_CALLS?\]", re.I)
_ROLE_PREFIX = re.compile(r"(?i)\b(system|assistant|user|developer)\s*:")
_FENCE = re.compile(r"```+|~~~+")
_INSTRUCTION = re.compile(
    r"\b("
    r"(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+|your\s+|these\s+|those\s+)?"
    r"(previous|prior|above|earlier|preceding|system|safety)?\s*"
    r"(instructions?|prompts?|rules|directions|messages|context|guidelines)"
    r"|you\s+are\s+now\b|new\s+instructions?\b|act\s+as\s+(an?\s+)?(different|new)\b"
    r"|(reveal|print|show|repeat)\s+(your|the)\s+(system\s+)?prompt"
    r")",
    re.I,
)
MCP_TOOLS = ("search_memories", "timeline", "ask", "forget_me", "forget_span")
"""Every tool the MCP endpoint offers (worldmm.gateway.mcp): a memory naming one as a call is redacted."""
_UNAMBIGUOUS_TOOLS = "|".join(t for t in MCP_TOOLS if "_" in t)
_WORD_TOOLS = "|".join(t for t in MCP_TOOLS if "_" not in t)  # plain words: only their call syntax goes
# A request to run a tool: our snake_case tools by name anywhere; any tool in call syntax (`ask(`,
# `send_email(to=`); "call/invoke/execute/trigger the … tool/function"; a JSON tool call's keys.
_TOOL_CALL = re.compile(
    rf"\b({_UNAMBIGUOUS_TOOLS})\b"
    rf"|\b({_WORD_TOOLS})\s*\("
    r"|\b[A-Za-z_][\w.]*_[\w.]*\s*\("
    r"|\b[A-Za-z_][\w.]*\s*\(\s*[A-Za-z_]\w*\s*="
    r"|\b(call|invoke|execute|trigger)\s+(the\s+|a\s+|your\s+)?[\w`'\".-]*\s*(tool|function)s?\b"
    r"|[\"'](name|tool|tool_name|function|arguments|parameters|tool_calls?|function_call|recipient_name)[\"']\s*:",
    re.I,
)
_WHITESPACE = re.compile(r"[ \t\f\v]+")
REDACTED = "[instruction removed]"


def _strip_controls(text: str) -> str:
    """Drop control and format characters (zero-width, bidi overrides); newlines become spaces."""
    out = []
    for ch in text:
        if ch in "\n\r\t":
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            continue
        else:
            out.append(ch)
    return "".join(out)


def sanitize_memory_text(text: str, max_chars: int) -> str:
    """Memory text made safe to quote inside a prompt, at most `max_chars` characters."""
    cleaned = unicodedata.normalize("NFKC", text)
    cleaned = _strip_controls(cleaned)
    cleaned = _SPECIAL_TOKEN.sub(" ", cleaned)
    cleaned = _TAG.sub(" ", cleaned)
    cleaned = _FENCE.sub(" ", cleaned)
    cleaned = _ROLE_PREFIX.sub(" ", cleaned)
    cleaned = _INSTRUCTION.sub(REDACTED, cleaned)
    cleaned = _TOOL_CALL.sub(REDACTED, cleaned)
    cleaned = cleaned.replace("<", "‹").replace(">", "›")  # no markup survives inside a memory
    cleaned = _WHITESPACE.sub(" ", cleaned).strip()
    if len(cleaned) > max_chars:
        cleaned = cleaned[: max(0, max_chars - 1)].rstrip() + "…"
    return cleaned


_EMAIL = re.compile(r"\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b")
_URL = re.compile(r"\b(?:https?|ftp|file|mailto|javascript|data)\s*:\s*/*([^\s\"'‹›<>]*[^\s\"'‹›<>.,;:!?)])?", re.I)
_HOST = re.compile(r"\b(www)\.([\w-]+)\.([a-z]{2,})\b", re.I)


def _defang(text: str) -> str:
    """Addresses kept readable but not actionable: `eve [at] evil[.]example`, `hxxp://site[.]example/x`."""
    text = _URL.sub(lambda m: "hxxp://" + (m.group(1) or "").replace(".", "[.]"), text)
    text = _EMAIL.sub(lambda m: f"{m.group(1)} [at] {m.group(2).replace('.', '[.]')}", text)
    return _HOST.sub(r"\1[.]\2[.]\3", text)


RECORDED_OPEN = "«recorded: "
RECORDED_CLOSE = "»"


def recorded_for_client(text: str, max_chars: int) -> str:
    """Recorded text (a memory, a transcript quote, an answer quoting one) as an MCP client receives it: the
    prompt filter applied (no instruction, no tool-call syntax, no markup), e-mail addresses and links
    defanged, cut to `max_chars` and marked as a recording (`«recorded: …»`), so a client model with mail or
    web tools reads data to report, not a request to act on."""
    body = _defang(sanitize_memory_text(text, max_chars))
    body = body.replace("«", '"').replace("»", '"')  # it cannot close its own frame
    if len(body) > max_chars:
        body = body[: max(0, max_chars - 1)].rstrip() + "…"
    return f"{RECORDED_OPEN}{body}{RECORDED_CLOSE}"


def _attr(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_:.+\- ]", "", value)[:64]


def _when(memory: RetrievedMemory) -> str:
    def fmt(t: datetime | None) -> str:
        return t.isoformat(timespec="minutes") if t else ""

    if memory.start_time and memory.end_time:
        return f"{fmt(memory.start_time)} to {fmt(memory.end_time)}"
    return fmt(memory.start_time or memory.end_time)


def format_memory(memory: RetrievedMemory, max_chars: int) -> str:
    """One memory as a delimited, sanitised block with its id, type and time."""
    attrs = [f'id="{_attr(memory.id)}"', f'type="{memory.memory_type.value}"']
    when = _when(memory)
    if when:
        attrs.append(f'time="{_attr(when)}"')
    if memory.frame_keys:
        attrs.append(f'frames="{len(memory.frame_keys)}"')
    return f"<memory {' '.join(attrs)}>{sanitize_memory_text(memory.text, max_chars)}</memory>"


def format_memories(memories: Iterable[RetrievedMemory], max_chars: int) -> str:
    """A list of memories for a prompt, or a note that there are none."""
    blocks = [format_memory(m, max_chars) for m in memories]
    return "\n".join(blocks) if blocks else "(no memories)"


def numbered_memories(memories: Sequence[RetrievedMemory], max_chars: int) -> str:
    """The memories each after its number (what an answer cites, a choice refers to), or a note that there are none."""
    blocks = [f"[{n}] {format_memory(m, max_chars)}" for n, m in enumerate(memories, start=1)]
    return "\n".join(blocks) if blocks else "(no memories)"


def sanitize_question(text: str, max_chars: int = 2000) -> str:
    """The user's own question: control characters and delimiter tags removed, length capped."""
    cleaned = _TAG.sub(" ", _strip_controls(unicodedata.normalize("NFKC", text)))
    return _WHITESPACE.sub(" ", cleaned).strip()[:max_chars]
