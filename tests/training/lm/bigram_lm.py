"""A bigram LM with the Hugging Face shape the token update reads: ``get_decoder()`` returns
``last_hidden_state`` (the table row of each input token), ``get_output_embeddings()`` is the
identity head, so ``log_softmax(table[input])`` is the model's next-token distribution."""

from __future__ import annotations

import torch


class _TableDecoder(torch.nn.Module):
    def __init__(self, vocab: int, dtype: torch.dtype):
        super().__init__()
        self.table = torch.nn.Embedding(vocab, vocab).to(dtype)

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        return type("Out", (), {"last_hidden_state": self.table(input_ids)})()


class BigramLm(torch.nn.Module):
    """``table`` is the ``[V, V]`` logit table (row: previous token)."""

    def __init__(self, vocab: int = 13, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.model = _TableDecoder(vocab, dtype)
        self.head = torch.nn.Identity()

    @property
    def table(self) -> torch.nn.Embedding:
        return self.model.table

    def get_decoder(self) -> torch.nn.Module:
        return self.model

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.head

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        return type("Out", (), {"logits": self.table(input_ids)})()
