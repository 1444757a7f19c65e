"""Building the ``lm`` study's ladder: the scripted corpus, the tokenizer, each size's base.

The warm-start corpus is played by scripted agents (``negotiation.agents``) in the environment,
so it sits above both ``negotiation.agents`` and ``negotiation.lm`` (whose generator the ``hf:``
seller runs). ``write_tokenizer`` and ``write_base`` are the pipeline's tokenizer and init
stages for lm sizes; ``seller_chats`` / ``tokenizer_texts`` are the corpus they read. See
``docs/lm.md``.
"""

from negotiation.ladder._build import (
    TOKENIZER_RECORD, WARM_START_RECORD, ladder_tags, lm_size, write_base, write_tokenizer,
)
from negotiation.ladder._corpus import corpus_seeds, seller_chats, tokenizer_texts

__all__ = [
    "TOKENIZER_RECORD", "WARM_START_RECORD", "corpus_seeds", "ladder_tags", "lm_size", "seller_chats",
    "tokenizer_texts", "write_base", "write_tokenizer",
]
