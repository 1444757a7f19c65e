"""The ladder's tokenizer: byte-level BPE trained on the project's own seller dialogues.

No pretrained tokenizer can be downloaded here, so the ladder trains its own with the
``tokenizers`` library on the corpus of ``negotiation.ladder`` (training domains and seeds
only) and stores it as a ``PreTrainedTokenizerFast`` with a Gemma-style Jinja chat template, so
``AutoTokenizer.from_pretrained(dir).apply_chat_template(messages, add_generation_prompt=True)``
renders exactly the system / user / assistant messages ``negotiation.env`` builds, offline.

The template renders every message verbatim (no trimming: the seller's raw JSON line must come
back byte for byte) between ``<start_of_turn>ROLE\\n`` and ``<end_of_turn>\\n``; assistant turns are
``model`` turns as in Gemma. The models have no thinking mode: ``enable_thinking=false`` (the
protocol's thinking-off flag) is accepted and changes nothing, ``true`` raises. The end-of-turn
token is the tokenizer's EOS, so ``generate`` and vLLM stop at the end of a seller turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from negotiation.errors import ConfigError

__all__ = ["BOS", "CHAT_TEMPLATE", "END_OF_TURN", "EOS", "PAD", "SPECIAL_TOKENS", "START_OF_TURN",
           "load_tokenizer", "train_tokenizer"]

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
START_OF_TURN, END_OF_TURN = "<start_of_turn>", "<end_of_turn>"
SPECIAL_TOKENS = (PAD, BOS, EOS, START_OF_TURN, END_OF_TURN)
"""Special tokens, in id order (ids 0..4)."""

# One line: transformers renders chat templates with trim_blocks/lstrip_blocks, and a template
# without literal newlines between tags cannot leak layout whitespace into the prompt.
CHAT_TEMPLATE = (
    "{% if enable_thinking is defined and enable_thinking %}"
    "{{ raise_exception('these models have no thinking mode: render with enable_thinking=false') }}"
    "{% endif %}"
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown chat role ' + message['role'] + ': expected system, user or assistant') }}"
    "{% endif %}"
    "{{ '" + START_OF_TURN + "' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' }}"
    "{{ message['content'] }}"
    "{{ '" + END_OF_TURN + "\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '" + START_OF_TURN + "model\\n' }}{% endif %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Any:
    """A ``PreTrainedTokenizerFast`` with byte-level BPE trained on ``texts`` (vocab ``vocab_size``).

    Deterministic for the same texts in the same order. The ids of ``SPECIAL_TOKENS`` are 0..4;
    no special token is added by encoding (the chat template writes BOS), so the ids of a
    rendered prompt are exactly those of its text.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    floor = 256 + len(SPECIAL_TOKENS)
    if vocab_size < floor:
        raise ConfigError(f"tokenizer.vocab_size: {vocab_size} is below the byte alphabet plus special "
                          f"tokens ({floor})")
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), min_frequency=2,
                                  show_progress=False)
    core.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token=BOS, eos_token=END_OF_TURN,
                                        pad_token=PAD, unk_token=None,
                                        additional_special_tokens=[EOS, START_OF_TURN])
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.padding_side = "left"  # batched generation pads prompts on the left
    tokenizer.model_max_length = 1 << 20
    return tokenizer


def load_tokenizer(folder: str | Path) -> Any:
    """The tokenizer saved in ``folder`` (offline; ``ConfigError`` naming the folder otherwise)."""
    from transformers import AutoTokenizer

    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file():
        raise ConfigError(f"{folder}:tokenizer.json: no tokenizer here (build it with the tokenizer stage)")
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    for key in ("local_files_only", "is_local"):  # loading options, not properties to save again
        tokenizer.init_kwargs.pop(key, None)
    return tokenizer
