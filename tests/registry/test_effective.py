"""Frozen values stay frozen; an arm runs under the protocol its deviations' values give."""

from __future__ import annotations

import datetime as dt

import yaml

from negotiation.agents._llm_vllm import ServeSettings
from negotiation.evaluation import arm_settings
from negotiation.study import load_study
from negotiation.registry import effective_protocol, load_registry, run_audit
from negotiation.registry._deviation_index import append_to_index


def test_31b_arms_are_served_on_four_while_the_frozen_protocol_says_two():
    study, registry = load_study("paper"), load_registry("paper")
    assert study.protocol.sizes["31b"].eval_accelerators == 2
    for arm in ("31b_base", "31b_shared_104", "31b_lr3x_56"):
        protocol = effective_protocol(study.protocol, registry, arm)
        assert ServeSettings.from_protocol(protocol, "31b").tensor_parallel_size == 4, arm
        assert arm_settings(study, arm, "vllm:x")["serve"].tensor_parallel_size == 4
    assert effective_protocol(study.protocol, registry, "12b_base") == study.protocol
    assert arm_settings(study, "12b_base", "vllm:x")["serve"].tensor_parallel_size == 1


def test_a_superseded_entry_s_values_no_longer_apply_and_bad_keys_fail_the_audit(root):
    folder = root / "registry/paper/deviations"
    entry = yaml.safe_load((folder / "0017-31b-arms-served-on-four-accelerators-value-recorded.yaml").read_text())
    amended = {**entry, "id": 19, "supersedes": 17, "date": dt.date.today().isoformat(), "values": {"sizes.31b.eval_acelerators": 8}}
    (folder / "0019-typo.yaml").write_text(yaml.safe_dump(amended, sort_keys=False))
    append_to_index(folder, 19, folder / "0019-typo.yaml")  # as `nego deviation new` does
    study, registry = load_study("paper", root), load_registry("paper", root)
    failed = [f.evidence for f in run_audit("paper", root=root).findings if f.status == "fail"]
    assert failed == ["registry/paper/deviations/0019-typo.yaml:values.sizes.31b.eval_acelerators: no protocol key "
                      "'eval_acelerators' there"]
    (folder / "0019-typo.yaml").write_text(yaml.safe_dump({**amended, "values": {"sizes.31b.eval_accelerators": 8}}))
    registry = load_registry("paper", root)
    assert effective_protocol(study.protocol, registry, "31b_base").sizes["31b"].eval_accelerators == 8
