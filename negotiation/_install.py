"""Which install profile (pyproject extra) brings a package the lean core leaves out.

``pip install .`` installs the core: environment, protocol, registry and CLI. A command or an
agent kind that needs more names the extra to install instead of a bare ``ImportError``
(``docs/install.md``; ``tests/test_install.py`` checks this table against ``pyproject.toml``).
"""

from __future__ import annotations

EXTRA_OF = {
    "torch": "pipeline", "dvc": "pipeline", "mlflow": "pipeline", "great_expectations": "pipeline",
    "scipy": "pipeline", "matplotlib": "pipeline", "jinja2": "pipeline", "numba": "fast",
    "litellm": "llm", "transformers": "llm", "tokenizers": "llm", "accelerate": "llm", "safetensors": "llm",
    "vllm": "serve", "negmas": "anac", "negmas_genius_agents": "anac",
}
"""Top-level module -> the first extra (in ``pyproject.toml`` order) that installs it."""


def install_hint(exc: ImportError) -> str | None:
    """``"<module> is not installed: pip install '.[<extra>]' ..."`` for a module of an extra, else None."""
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(module)
    if extra is None:
        return None
    return (f"{module} is not installed (the core install leaves it out): "
            f"pip install -e '.[{extra}]' (docs/install.md)")
