"""A small byte-level BPE tokenizer with Gemma-4-style chat templates, built in the test.

The two templates follow Appendix J: with thinking disabled the E-series generation prompt is
``<|turn>model\\n`` and the conventional one appends an empty thought channel
``<|channel>thought\\n<channel|>``. Transformers is not installed here, so the template is
rendered with jinja2 the way ``apply_chat_template`` does (sandboxed, trim_blocks, lstrip_blocks).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<|turn>", "<turn|>", "<|channel>", "<channel|>"]

_TURNS = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<|turn>' + role + '\\n' + (message['content'] | trim) + '<turn|>\\n' }}"
    "{% endfor %}"
)

E_SERIES_TEMPLATE = _TURNS + (
    "{% if add_generation_prompt %}"
    "{{ '<|turn>model\\n' }}"
    "{% if enable_thinking is defined and enable_thinking %}{{ '<|channel>thought\\n' }}{% endif %}"
    "{% endif %}"
)

CONVENTIONAL_TEMPLATE = _TURNS + (
    "{% if add_generation_prompt %}"
    "{{ '<|turn>model\\n' }}"
    "{% if enable_thinking is defined and enable_thinking %}{{ '<|channel>thought\\n' }}"
    "{% else %}{{ '<|channel>thought\\n<channel|>' }}{% endif %}"
    "{% endif %}"
)

# A template that silently ignores the thinking switch (the check must refuse it).
NO_THINKING_SWITCH_TEMPLATE = _TURNS + "{% if add_generation_prompt %}{{ '<|turn>model\\n' }}{% endif %}"

# A template that re-renders history (drops earlier turns' closers once a turn is added).
REWRITING_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if loop.last %}{{ '<|turn>' + message['role'] + '\\n' + message['content'] + '<turn|>\\n' }}"
    "{% else %}{{ message['content'] + '\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|turn>model\\n' }}{% endif %}{# enable_thinking #}"
)

_CORPUS = [
    "You are the seller. Open the negotiation and name the terms you care about.",
    'Happy to start. {"action": "COUNTER", "terms": [{"name": "price", "value": 42}], "notes": ""}',
    "That price is steep; could you do 35? We also want delivery included.",
    "model user system thought turn channel Probe User Model Alpha Bravo Charlie",
]


@lru_cache(maxsize=1)
def _bpe() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(_CORPUS * 4, trainer)
    return tokenizer


class JinjaChatTokenizer:
    """The slice of a Hugging Face tokenizer the NeMo-RL backend uses."""

    def __init__(self, chat_template: str):
        self.chat_template = chat_template
        self._tokenizer = _bpe()
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self._template = env.from_string(chat_template)
        self.bos_token, self.eos_token = "<bos>", "<eos>"
        self.eos_token_id = self._tokenizer.token_to_id("<eos>")

    def apply_chat_template(self, conversation: Sequence[dict[str, str]], tokenize: bool = False,
                            add_generation_prompt: bool = False, **kwargs: Any) -> Any:
        text = self._template.render(messages=list(conversation), bos_token=self.bos_token,
                                     add_generation_prompt=add_generation_prompt, **kwargs)
        return self.encode(text) if tokenize else text

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self._tokenizer.decode(list(token_ids), skip_special_tokens=skip_special_tokens)

    def __call__(self, text: str, add_special_tokens: bool = False, **_: Any) -> dict[str, list[int]]:
        return {"input_ids": self.encode(text, add_special_tokens)}


def e_series() -> JinjaChatTokenizer:
    return JinjaChatTokenizer(E_SERIES_TEMPLATE)


def conventional() -> JinjaChatTokenizer:
    return JinjaChatTokenizer(CONVENTIONAL_TEMPLATE)
