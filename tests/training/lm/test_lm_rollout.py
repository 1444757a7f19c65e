"""Token rollouts build the sequence the chat template renders, masks only seller tokens."""

from __future__ import annotations

import transformers

from negotiation.env import seller_training_messages
from negotiation.training.lm import play_token_episodes
from negotiation.training.nemo import (
    NegotiationStepLogic, derive_turn_tags, protocol_env_settings, replay, stop_token_ids, template_kwargs,
    training_scenarios,
)
from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint


def test_episode_tokens_equal_the_template_render_and_only_seller_tokens_train(tmp_path):
    folder = write_tiny_checkpoint(tmp_path / "tiny")
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    protocol = tiny_protocol()
    tags = derive_turn_tags(tok, template_kwargs(False))
    settings = protocol_env_settings(protocol, tags)
    stops = stop_token_ids(tags, tok.eos_token_id)
    states = training_scenarios(protocol, offset=0, count=3, seed=0)
    with NegotiationStepLogic(settings) as logic:
        ep = play_token_episodes(states, [11, 12, 13], tokenizer=tok, generate=canned_generator(None, tok, sampling=None,
                                 stop_ids=stops), settings=settings, prompt_tokens=2048, context_tokens=8192, new_tokens=32,
                                 rollout_turns=5, stop_ids=stops, logic=logic)
    for i, episode in enumerate(ep.episodes):
        assert episode is not None and not ep.truncated[i]
        turns = tuple(t.raw for t in episode.turns)
        last = max(k for k, t in enumerate(episode.turns) if t.role == "seller")
        game = replay(states[i].model_copy(update={"turns": turns[:last]}), settings)  # the seller's last view
        messages = seller_training_messages(game.view()) + [{"role": "assistant", "content": turns[last]}]
        rendered = tok.apply_chat_template(messages, tokenize=False, **template_kwargs(False))
        decoded = tok.decode(ep.ids[i], skip_special_tokens=False)
        assert rendered == decoded + tags.after_end_of_turn
        seller = tok.decode([t for t, m in zip(ep.ids[i], ep.gen_mask[i]) if m], skip_special_tokens=True)
        assert seller == "".join(t.raw for t in episode.turns if t.role == "seller")
        assert ep.gen_tokens[i] == sum(ep.gen_mask[i])
    assert ep.returns.min() >= -0.3 - 0.1 and ep.trainable.all()
