"""Prompt templates are files under `prompts/`; this loads and fills them (`$name` placeholders)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from string import Template

PROMPTS_DIR = Path(__file__).parent / "prompts"


@lru_cache(maxsize=64)
def load_prompt(name: str) -> Template:
    """The template `prompts/<name>.txt`."""
    path = PROMPTS_DIR / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template named {name!r}")
    return Template(path.read_text(encoding="utf-8"))


def render_prompt(name: str, **values: object) -> str:
    """Fill template `name`; every placeholder must be given."""
    return load_prompt(name).substitute({k: str(v) for k, v in values.items()})
