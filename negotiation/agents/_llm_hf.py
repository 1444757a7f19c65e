"""``hf:<model dir>``: a local transformers checkpoint, batched across the episodes of a cell.

The agent loads the tokenizer and model once (``astart``, or on the first reply), renders each
turn's prompt with the model's own chat template (thinking as the protocol says), and hands the
token ids to a ``negotiation.lm.GenerationQueue``: the seller turns of all episodes in flight
are generated together, one forward pass per decode step with a KV cache, on CPU or CUDA (there
with a static cache and the decode step replayed as a CUDA graph: ``StaticBatchGenerator``). Each
turn is sampled with the protocol's temperature, top-p, top-k and token cap and its own seed
(``turn_seed`` of episode, turn and role), and the draws do not depend on which other turns
share the batch (``docs/lm.md``). transformers and torch are imported on load only.

Spec options: ``device`` (transformers ``device_map``: ``auto``, ``cpu``, ``cuda``, ...),
``dtype`` (``auto``: the checkpoint's; ``float32``, ``bfloat16``, ``float16``), ``max_batch``
(turns per batch, 64) and ``batch_wait_ms`` (how long a batch waits for more turns, 5).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from negotiation.agents._llm_settings import HF_OPTIONS, LLMSettings, resolve_settings, spec_sampling_overrides, turn_seed
from negotiation.agents._llm_retry import AgentCallError
from negotiation.agents._llm_sampling import SamplingLog, warn_drift
from negotiation.agents._llm_transport import CallFailure
from negotiation.agents._spec import AgentSpec
from negotiation.env import PROMPT_TEMPLATES, Reply, Role, View, render_messages
from negotiation.errors import ConfigError

_DTYPES = ("auto", "float32", "bfloat16", "float16")


class HfAgent:
    """A transformers causal LM; one instance serves every episode of a cell."""

    def __init__(self, spec: AgentSpec, role: Role, settings: LLMSettings):
        self.spec = spec.text
        self.role = role
        self.model_dir = spec.target
        self.settings = settings
        self.template = PROMPT_TEMPLATES[settings.prompt]
        self.sampling = settings.sampling.with_overrides(spec_sampling_overrides(spec))
        if self.sampling.max_tokens is None:
            raise ConfigError(f"agent spec {self.spec!r}:max_tokens: no token cap in the protocol's sampling; "
                              "give max_tokens=<n>")
        self.device = spec.option("device", "auto")
        self.dtype = spec.option("dtype", "auto")
        if self.dtype not in _DTYPES:
            raise ConfigError(f"agent spec {self.spec!r}:dtype: {self.dtype!r} is not one of {', '.join(_DTYPES)}")
        self.max_batch = spec.option("max_batch", 64, int, lo=1)
        self.batch_wait_s = spec.option("batch_wait_ms", 5.0, float, lo=0, hi=60_000) / 1000.0
        sent: dict[str, Any] = {k: v for k, v in self.sampling.sent_values().items()}
        sent["seed"] = "per-turn"
        self.record = SamplingLog(agent=self.spec, role=role, sampling_role=settings.sampling_role,
                                     provider="transformers", transport="in-process",
                                     requested=settings.sampling.sent_values(), sent=sent)
        self.drift = warn_drift(self.record)
        self.calls_ok = 0
        self.batch_sizes: list[int] = []
        """Turns per generated batch, over the agent's life (benchmarks, tests)."""
        self._loaded: tuple[Any, Any, Any] | None = None  # (tokenizer, generator, queue)

    @property
    def prompt_hash(self) -> str:
        return self.template.hash

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            try:
                import transformers

                from negotiation.lm import BatchGenerator, GenerationQueue, StaticBatchGenerator
            except ImportError as exc:
                raise ConfigError(f"agent spec {self.spec!r}:kind: hf needs transformers and torch "
                                  f"(`pip install -e .[llm]`): {exc}") from exc
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_dir)
            model = transformers.AutoModelForCausalLM.from_pretrained(self.model_dir, device_map=self.device,
                                                                      dtype=self.dtype).eval()
            stops = _stop_ids(model, tokenizer)
            if not stops:
                raise ConfigError(f"hf checkpoint {self.model_dir}: no eos_token_id in generation_config.json, "
                                  "config.json or the tokenizer; generation could not stop")
            pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
            if self.sampling.thinking is not None and "enable_thinking" not in (tokenizer.chat_template or ""):
                self.record.not_sent["thinking"] = "the checkpoint's chat template has no enable_thinking switch"
            if model.device.type == "cuda":  # fixed-shape decode step replayed as a CUDA graph
                generator = StaticBatchGenerator(model, pad_token_id=pad, stop_token_ids=stops, max_batch=self.max_batch)
            else:
                generator = BatchGenerator(model, pad_token_id=pad, stop_token_ids=stops)
            queue = GenerationQueue(generator, max_batch=self.max_batch, gather_s=self.batch_wait_s)
            queue.batch_sizes = self.batch_sizes
            self._loaded = (tokenizer, generator, queue)
        return self._loaded

    async def astart(self) -> None:
        """Load the checkpoint (in a worker thread) before the cell starts."""
        await asyncio.to_thread(self._load)

    async def aclose(self) -> None:
        """Release the model."""
        self._loaded = None

    def request(self, view: View) -> Any:
        """The ``GenerationRequest`` of this turn (prompt ids from the chat template, the turn's seed)."""
        from negotiation.lm import GenerationRequest

        tokenizer = self._load()[0]
        messages = render_messages(view, self.template, converge_from_turn=self.settings.converge_from_turn)
        kwargs = {} if self.sampling.thinking is None else {"enable_thinking": self.sampling.thinking}
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        s = self.sampling
        return GenerationRequest(prompt_ids=tuple(ids), seed=turn_seed(view.sample_seed, view.turn, view.role),
                                 max_new_tokens=s.max_tokens, temperature=1.0 if s.temperature is None else s.temperature,
                                 top_p=s.top_p, top_k=s.top_k)

    async def arespond(self, view: View) -> Reply:
        from negotiation.lm import ContextTooLongError

        tokenizer, generator, queue = await asyncio.to_thread(self._load)
        request = self.request(view)
        try:
            generator.check([request])
        except ContextTooLongError as exc:  # permanent, like a server's context-length 400: one error row
            failure = CallFailure("ContextWindowExceededError", f"{self.model_dir}: {exc}", transient=False)
            raise AgentCallError(failure, retries=0, spec=self.spec, role=self.role) from exc
        start = time.perf_counter()
        result = await queue.submit(request)
        self.calls_ok += 1
        text = tokenizer.decode(list(result.token_ids), skip_special_tokens=True)
        return Reply(text, result.prompt_tokens, len(result.token_ids), None, time.perf_counter() - start, 0)

    def respond(self, view: View) -> Reply:
        """Synchronous use (``run_episode``): one turn, batch of one."""
        return asyncio.run(self.arespond(view))


def _stop_ids(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """End-of-generation ids: the generation config's, the model config's and the tokenizer's eos."""
    found: list[int] = []
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        value = getattr(source, "eos_token_id", None)
        for token in (value if isinstance(value, (list, tuple)) else [value]):
            if token is not None and int(token) not in found:
                found.append(int(token))
    return tuple(found)


def make_hf_agent(spec: AgentSpec, role: Role, settings: LLMSettings | None = None) -> Any:
    """Factory for ``hf:<model dir>``: a local transformers model (imported on first use)."""
    spec.check_known(HF_OPTIONS)
    return HfAgent(spec, role, resolve_settings(spec, role, settings))
