"""Chat-template turn tags per arm, derived from the arm's own tokenizer (paper Appendix J).

NeMo-RL's multi-turn driver tokenizes an environment observation raw (no chat template) and
appends it to the exact token ids generated so far. The observation must therefore carry the
template text itself: what follows the model's end-of-turn token, the buyer's (user) turn
header and closer, and the generation prompt of the next model turn. Those strings differ by
checkpoint (E-series Gemma 4 opens a model turn with ``<|turn>model\\n``, the conventional sizes
add an empty thought channel), so they are read off each tokenizer by differencing renders of a
probe dialogue, never typed in, and checked on a multi-turn history before training starts.

The same tags build the loss masks of every trainer of language-model sellers (``encode_chat``:
the NeMo-RL adapter's driver layout, the ladder's warm start and token-level GRPO), so this
module lives with the models in ``negotiation.lm`` and the NeMo-RL backend imports it from here.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, Sequence

from pydantic import BaseModel, ConfigDict

from negotiation.errors import NegotiationError

__all__ = [
    "DEFAULT_HISTORY", "THINKING_TEMPLATE_VAR", "ChatTokenizer", "TurnTagError", "TurnTags", "check_round_trip",
    "derive_turn_tags", "encode_chat", "template_kwargs",
]

# Name of the chat-template variable that switches thinking mode. The NeMo-RL notes flag it as
# unverified for Gemma 4, so ``derive_turn_tags`` refuses a template that never reads it.
THINKING_TEMPLATE_VAR = "enable_thinking"

# Probe texts: plain words without surrounding whitespace, so templates that trim content
# render them verbatim and each occurs exactly once in a render.
_PROBE_USER_1 = "ProbeUserAlpha"
_PROBE_MODEL_1 = "ProbeModelBravo"
_PROBE_USER_2 = "ProbeUserCharlie"

# A multi-turn history with prose, JSON, braces and line breaks, for the round-trip check.
DEFAULT_HISTORY: tuple[dict[str, str], ...] = (
    {"role": "user", "content": "You are the seller. Open the negotiation."},
    {"role": "assistant", "content": 'Happy to start.\n{"action": "COUNTER", "terms": '
                                     '[{"name": "price", "value": 42}], "notes": ""}'},
    {"role": "user", "content": "That price is steep; could you do 35?"},
    {"role": "assistant", "content": 'Let us meet at 39.\n{"action": "COUNTER", "terms": '
                                     '[{"name": "price", "value": 39}]}'},
    {"role": "user", "content": "Deal at 39, if delivery is included."},
)


class TurnTagError(NegotiationError):
    """The tokenizer's chat template cannot be driven by raw observations as derived."""


class ChatTokenizer(Protocol):
    """What the derivation needs of a tokenizer (a Hugging Face fast tokenizer satisfies it)."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = ...) -> str: ...


class TurnTags(BaseModel):
    """Template strings an observation needs, for one tokenizer and one set of template kwargs."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    version: Literal[1] = 1
    """Record format version."""
    end_of_turn: str
    """Text of the special token that closes a model turn (the generation stop token)."""
    end_of_turn_id: int
    """Token id of ``end_of_turn``; it belongs in ``policy.generation.stop_token_ids``."""
    after_end_of_turn: str
    """Template text between a model turn's end-of-turn token and the next turn header."""
    user_open: str
    """Header of a user (buyer) turn, before its content."""
    user_close: str
    """Closer of a user turn, after its content, up to the next turn header."""
    generation_prompt: str
    """Text that opens the model's next turn (``add_generation_prompt``)."""
    history_model_open: str
    """Text the template puts before a past model turn; differs from ``generation_prompt`` when
    the template drops the generation prologue from history."""
    template_kwargs: dict[str, bool]
    """Chat-template variables every render used (thinking switch)."""

    def observation(self, text: str) -> str:
        """Raw observation text that closes the model turn, carries ``text`` as a user turn and
        opens the next model turn."""
        return self.after_end_of_turn + self.user_open + text + self.user_close + self.generation_prompt


def template_kwargs(thinking: bool | None) -> dict[str, bool]:
    """Template variables for the protocol's thinking setting (``None``: leave the default)."""
    return {} if thinking is None else {THINKING_TEMPLATE_VAR: bool(thinking)}


def _render(tokenizer: ChatTokenizer, messages: Sequence[dict[str, str]], generation: bool,
            kwargs: dict[str, bool]) -> str:
    text = tokenizer.apply_chat_template(list(messages), tokenize=False,
                                         add_generation_prompt=generation, **kwargs)
    if not isinstance(text, str):
        raise TurnTagError(f"apply_chat_template returned {type(text).__name__}, expected str")
    return text


def _suffix(longer: str, shorter: str, what: str) -> str:
    """``longer`` minus its prefix ``shorter``; raise when the template re-renders the past."""
    if not longer.startswith(shorter):
        at = _first_difference(longer, shorter)
        raise TurnTagError(f"chat template: adding {what} changes earlier text at offset {at}: "
                           f"{shorter[at:at + 40]!r} became {longer[at:at + 40]!r}")
    return longer[len(shorter):]


def _split_around(text: str, marker: str, what: str) -> tuple[str, str]:
    if text.count(marker) != 1:
        raise TurnTagError(f"chat template: the probe {what} appears {text.count(marker)} times "
                           f"in {text!r}, expected once")
    before, after = text.split(marker)
    return before, after


def _end_of_turn(tokenizer: ChatTokenizer, assistant_close: str) -> tuple[str, int, str]:
    ids = tokenizer.encode(assistant_close, add_special_tokens=False)
    if not ids:
        raise TurnTagError("chat template: a model turn has no closing text, so no stop token")
    eot_id = int(ids[0])
    eot_text = tokenizer.decode([eot_id], skip_special_tokens=False)
    if not eot_text or not assistant_close.startswith(eot_text):
        raise TurnTagError(f"chat template: model-turn closer {assistant_close!r} does not start "
                           f"with a whole token (first token decodes to {eot_text!r})")
    if tokenizer.decode([eot_id], skip_special_tokens=True) != "":
        raise TurnTagError(f"chat template: end-of-turn {eot_text!r} (id {eot_id}) is not a special "
                           "token, so NeMo-RL's decoded turn text would keep it")
    return eot_text, eot_id, assistant_close[len(eot_text):]


def _check_kwargs_read(tokenizer: ChatTokenizer, kwargs: dict[str, bool]) -> None:
    source = getattr(tokenizer, "chat_template", None)
    if isinstance(source, str):
        unread = sorted(k for k in kwargs if k not in source)
        if unread:
            raise TurnTagError(f"chat template never reads {unread}; the thinking setting would "
                               "be silently ignored")


def derive_turn_tags(tokenizer: ChatTokenizer, kwargs: dict[str, bool] | None = None,
                     *, history: Sequence[dict[str, str]] = DEFAULT_HISTORY) -> TurnTags:
    """Read the turn tags off ``tokenizer``'s chat template and check them on ``history``.

    Raises ``TurnTagError`` naming the first text that does not line up.
    """
    kwargs = dict(kwargs or {})
    _check_kwargs_read(tokenizer, kwargs)
    user1 = [{"role": "user", "content": _PROBE_USER_1}]
    user1_model1 = user1 + [{"role": "assistant", "content": _PROBE_MODEL_1}]
    dialogue = user1_model1 + [{"role": "user", "content": _PROBE_USER_2}]
    r_user = _render(tokenizer, user1, False, kwargs)
    generation_prompt = _suffix(_render(tokenizer, user1, True, kwargs), r_user, "the generation prompt")
    r_model = _render(tokenizer, user1_model1, False, kwargs)
    model_open, assistant_close = _split_around(_suffix(r_model, r_user, "a model turn"),
                                                _PROBE_MODEL_1, "model turn")
    user_open, user_close = _split_around(_suffix(_render(tokenizer, dialogue, False, kwargs), r_model,
                                                  "a user turn"), _PROBE_USER_2, "user turn")
    eot_text, eot_id, after_eot = _end_of_turn(tokenizer, assistant_close)
    if not generation_prompt:
        raise TurnTagError("chat template: add_generation_prompt adds no text")
    tags = TurnTags(end_of_turn=eot_text, end_of_turn_id=eot_id, after_end_of_turn=after_eot,
                    user_open=user_open, user_close=user_close, generation_prompt=generation_prompt,
                    history_model_open=model_open, template_kwargs=kwargs)
    check_round_trip(tokenizer, tags, history)
    return tags


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _split_history(history: Sequence[dict[str, str]]) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """Prompt messages (before the first model turn) and (model text, user text) exchanges."""
    messages = list(history)
    first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), 0)
    prompt, rest = messages[:first], messages[first:]
    roles = [m["role"] for m in rest]
    if not prompt or not rest or roles != ["assistant", "user"] * (len(rest) // 2):
        raise ValueError("round-trip history must be prompt messages, then alternating assistant "
                         f"and user turns ending with a user turn; got roles {[m['role'] for m in messages]}")
    pairs = [(rest[i]["content"], rest[i + 1]["content"]) for i in range(0, len(rest), 2)]
    return prompt, pairs


def check_round_trip(tokenizer: ChatTokenizer, tags: TurnTags, history: Sequence[dict[str, str]]) -> None:
    """Assert that a rollout built as NeMo-RL builds it reproduces the template's own render.

    The driver's sequence is the prompt rendered with its generation prompt, then per exchange
    the generated model text with its end-of-turn token and the raw observation. Three checks:
    the text equals the template's render of the same history (up to the generation prologue a
    template may drop from past turns, ``history_model_open``); the concatenated token ids of the
    pieces equal the ids of the whole text (raw observation tokenization does not shift token
    boundaries); and the model text NeMo-RL decodes (special tokens skipped) is the text itself.
    """
    prompt, pairs = _split_history(history)
    kw, gen, hist_open = tags.template_kwargs, tags.generation_prompt, tags.history_model_open
    prompt_text = _render(tokenizer, prompt, True, kw)
    if not prompt_text.endswith(gen):
        raise TurnTagError(f"chat template: the prompt render does not end with the generation "
                           f"prompt {gen!r}: ...{prompt_text[-60:]!r}")
    ids: list[int] = list(tokenizer.encode(prompt_text, add_special_tokens=False))
    driver = prompt_text
    template_view = prompt_text[: len(prompt_text) - len(gen)]
    for i, (model_text, user_text) in enumerate(pairs):
        generated = list(tokenizer.encode(model_text, add_special_tokens=False)) + [tags.end_of_turn_id]
        seen = tokenizer.decode(generated, skip_special_tokens=True)
        if seen != model_text:
            raise TurnTagError(f"model turn {i + 1}: NeMo-RL would hand the environment {seen!r}, "
                               f"not {model_text!r}")
        observation = tags.observation(user_text)
        ids += generated + list(tokenizer.encode(observation, add_special_tokens=False))
        driver += model_text + tags.end_of_turn + observation
        template_view += hist_open + model_text + tags.end_of_turn + observation[: len(observation) - len(gen)]
    template_view += gen
    expected = _render(tokenizer, list(history), True, kw)
    if template_view != expected:
        at = _first_difference(template_view, expected)
        raise TurnTagError(f"round trip: rollout text differs from the template's render at offset {at}: "
                           f"{template_view[at:at + 40]!r} vs {expected[at:at + 40]!r}")
    whole = list(tokenizer.encode(driver, add_special_tokens=False))
    if ids != whole:
        at = _first_difference(ids, whole)
        raise TurnTagError(f"round trip: raw observation tokens differ from in-context tokens at "
                           f"token {at}: {ids[at:at + 5]} vs {whole[at:at + 5]}")
    if tokenizer.decode(ids, skip_special_tokens=False) != driver:
        raise TurnTagError("round trip: the rollout's tokens do not decode back to its text")


def encode_chat(tokenizer: ChatTokenizer, tags: TurnTags, messages: Sequence[dict[str, str]]
                ) -> tuple[list[int], list[int]]:
    """Token ids of a chat built the way the rollout driver builds it, and its loss mask.

    ``messages``: prompt messages (system / user) up to the first assistant turn, then assistant
    and user turns alternating, ending with an assistant turn. Ids: the prompt rendered with its
    generation prompt, then per model turn its text and the end-of-turn id (mask 1: the seller's
    tokens, end-of-turn included so the model learns to stop), then the next user turn as a raw
    observation (mask 0). ``check_round_trip`` is what guarantees these ids are the template's.
    Returns ``(ids, mask)``, two lists of equal length.
    """
    closed = list(messages) + [{"role": "user", "content": ""}]
    prompt, pairs = _split_history(closed)
    ids = list(tokenizer.encode(_render(tokenizer, prompt, True, tags.template_kwargs), add_special_tokens=False))
    mask = [0] * len(ids)
    for i, (model_text, user_text) in enumerate(pairs):
        generated = list(tokenizer.encode(model_text, add_special_tokens=False)) + [tags.end_of_turn_id]
        ids += generated
        mask += [1] * len(generated)
        if i + 1 < len(pairs):
            observation = list(tokenizer.encode(tags.observation(user_text), add_special_tokens=False))
            ids += observation
            mask += [0] * len(observation)
    return ids, mask
