"""Environment constants come from the study protocol, never from code."""

from __future__ import annotations

import shutil

import pytest
import yaml

from negotiation.cli import dirichlet_alpha_for, env_config_for
from negotiation.env import REPO_ROOT
from negotiation.errors import ConfigError


def _environment(root, study="demo"):
    return yaml.safe_load((root / "protocol" / study / "protocol.yaml").read_text())["environment"]


@pytest.mark.parametrize("study", ["demo", "paper"])
@pytest.mark.parametrize("phase", ["evaluation", "training"])
def test_config_is_read_from_the_protocol_file(study, phase):
    env = _environment(REPO_ROOT, study)
    config = env_config_for(study, phase)
    assert config.max_rounds == env["max_rounds"] and config.max_turns == 2 * env["max_rounds"]
    assert (config.no_deal_penalty, config.g_fmt, config.g_len) == (env["no_deal_penalty"], env["g_fmt"], env["g_len"])
    assert config.t_soft == pytest.approx(env["t_soft_fraction"] * env["max_rounds"])
    assert config.accept_applies_terms is env["accept_terms_applied"][phase]
    assert config.phase == phase
    assert dirichlet_alpha_for(study) == env["dirichlet_alpha"]


def _copy_study(tmp_path, edit):
    for part in ("demo", "domains"):
        shutil.copytree(REPO_ROOT / "protocol" / part, tmp_path / "protocol" / part)
    path = tmp_path / "protocol" / "demo" / "protocol.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data["environment"])
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_changed_protocol_changes_the_config(tmp_path):
    def edit(env):
        env.update(max_rounds=8, no_deal_penalty=0.5, t_soft_fraction=0.5, dirichlet_alpha=1.0)
        env["accept_terms_applied"] = {"training": False, "evaluation": True}
    _copy_study(tmp_path, edit)
    config = env_config_for("demo", "evaluation", root=tmp_path)
    assert (config.max_rounds, config.no_deal_penalty, config.t_soft) == (8, 0.5, 4.0)
    assert config.accept_applies_terms is True
    assert env_config_for("demo", "training", root=tmp_path).accept_applies_terms is False
    assert dirichlet_alpha_for("demo", root=tmp_path) == 1.0


def test_a_malformed_protocol_names_file_key_and_value(tmp_path):
    _copy_study(tmp_path, lambda env: env.update(max_rounds=-4))
    with pytest.raises(ConfigError, match=r"protocol/demo/protocol.yaml:environment.max_rounds: .*\(got -4\)"):
        env_config_for("demo", "evaluation", root=tmp_path)


def test_unknown_phase_is_rejected():
    with pytest.raises(ValueError, match="phase must be one of"):
        env_config_for("demo", "rollout")
