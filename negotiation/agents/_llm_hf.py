"""``hf:<model dir>``: a local transformers checkpoint, for small runs on a GPU without vLLM.

transformers and torch are imported on the first reply, so building the agent (and running the
tests) needs neither. The model's own chat template renders the prompt with thinking off as the
protocol says; sampling uses the protocol's temperature, top-p, top-k and token cap; each turn's
randomness comes from the per-turn seed, inside ``torch.random.fork_rng`` so the global torch
generator is left as it was.
"""

from __future__ import annotations

import time
from typing import Any

from negotiation.agents._llm import LLMSettings, spec_sampling_overrides, turn_seed
from negotiation.agents._spec import AgentSpec
from negotiation.env import PROMPT_TEMPLATES, Reply, Role, View, render_messages
from negotiation.errors import ConfigError


class HfAgent:
    """A transformers causal LM answering in a worker thread (``blocking``)."""

    blocking = True

    def __init__(self, spec: AgentSpec, role: Role, settings: LLMSettings):
        self.spec = spec.text
        self.role = role
        self.model_dir = spec.target
        self.settings = settings
        self.template = PROMPT_TEMPLATES[settings.prompt]
        self.sampling = settings.sampling.with_overrides(spec_sampling_overrides(spec))
        self.device = spec.option("device", "auto")
        self._loaded: tuple[Any, Any, Any] | None = None

    @property
    def prompt_hash(self) -> str:
        return self.template.hash

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            try:
                import torch
                import transformers
            except ImportError as exc:
                raise ConfigError(f"agent spec {self.spec!r}:kind: hf needs transformers and torch "
                                  f"(`pip install -e .[llm]`): {exc}") from exc
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_dir)
            model = transformers.AutoModelForCausalLM.from_pretrained(self.model_dir, device_map=self.device)
            self._loaded = (torch, tokenizer, model)
        return self._loaded

    def _generate_kwargs(self) -> dict[str, Any]:
        s = self.sampling
        sample = s.temperature is None or s.temperature > 0
        kwargs: dict[str, Any] = {"do_sample": sample}
        if s.max_tokens is not None:
            kwargs["max_new_tokens"] = s.max_tokens
        if sample:
            kwargs.update({k: v for k, v in (("temperature", s.temperature), ("top_p", s.top_p), ("top_k", s.top_k))
                           if v is not None})
        return kwargs

    def respond(self, view: View) -> Reply:
        torch, tokenizer, model = self._load()
        messages = render_messages(view, self.template, converge_from_turn=self.settings.converge_from_turn)
        template_kwargs = {} if self.sampling.thinking is None else {"enable_thinking": self.sampling.thinking}
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **template_kwargs)
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        n_in = int(inputs["input_ids"].shape[1])
        start = time.perf_counter()
        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(turn_seed(view.sample_seed, view.turn, view.role))
            output = model.generate(**inputs, **self._generate_kwargs())
        new_tokens = output[0][n_in:]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True)
        return Reply(text, n_in, int(len(new_tokens)), None, time.perf_counter() - start, 0)
