"""Domain schemas: the nine shipped files meet the schema; malformed files name file, key, value."""

from __future__ import annotations

import pytest
import yaml

from negotiation.env import DOMAINS_DIR, load_domain, load_domain_file, load_domains
from negotiation.errors import ConfigError
from tests.env.toy_env import toy_domain_dict

TRAINING = {"acquisition", "job_offer", "partnership_dissolution", "media_rights"}


def test_all_nine_domains_load_sorted_by_name():
    domains = load_domains()
    assert len(domains) == 9
    assert list(domains) == sorted(domains)
    assert TRAINING | {"used_car"} <= set(domains)
    assert all(d.name == name for name, d in domains.items())


@pytest.mark.parametrize("path", sorted(DOMAINS_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_each_domain_meets_the_term_mix(path):
    domain = load_domain_file(path)
    kinds = [t.kind for t in domain.terms]
    assert 7 <= len(kinds) <= 10
    assert 3 <= kinds.count("continuous") <= 5
    # Distributive terms are opposed by role: never all favour the same party.
    assert len({t.high_preferred_by for t in domain.terms if t.is_continuous}) == 2
    for term in domain.terms:
        assert term.description.seller and term.description.buyer
        if term.kind == "categorical":
            assert 3 <= len(term.levels) <= 5  # protocol/domains/README.md
        if term.kind == "binary":
            assert term.levels == (True, False)


def test_used_car_has_the_ten_terms_of_the_quoted_episode():
    car = load_domain("used_car")
    assert len(car.terms) == 10
    assert {"price", "model", "interior", "service", "accessories", "delivery"} <= set(car.term_names)
    price = car.term("price")
    assert (price.unit, price.high_preferred_by) == ("$k", "seller")
    assert price.range[0] <= 40 <= 42.5 <= price.range[1]
    assert "Sedan" in car.term("model").levels and "Premium" in car.term("interior").levels
    assert "annual" in car.term("service").levels
    assert car.term("accessories").kind == "binary"
    assert car.term("delivery").kind == "continuous"


def test_unknown_domain_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"no such domain 'nope'; known: acquisition, .*used_car"):
        load_domain("nope")


def _write(tmp_path, data, stem="toy"):
    path = tmp_path / f"{stem}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_toy_domain_file_round_trips(tmp_path):
    _write(tmp_path, toy_domain_dict())
    domain = load_domain("toy", tmp_path)
    assert domain.term_names == ("price", "days", "volume", "color", "size", "extras", "support")
    assert domain.term("extras").levels == (True, False)


def test_reversed_range_names_file_key_and_value(tmp_path):
    data = toy_domain_dict()
    data["terms"][1]["range"] = [30, 10]
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_domain_file(path)
    msg = str(info.value)
    assert msg.startswith(f"{path.resolve()}:terms.1:")
    assert "[30.0, 10.0]" in msg


def test_unknown_key_and_bad_kind_are_named(tmp_path):
    data = toy_domain_dict()
    data["terms"][0]["colour"] = "red"
    data["terms"][3]["kind"] = "ordinal"
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_domain_file(path)
    msg = str(info.value)
    assert f"{path.resolve()}:terms.0.colour: Extra inputs are not permitted (got 'red')" in msg
    assert f"{path.resolve()}:terms.3.kind:" in msg and "'ordinal'" in msg


def test_too_few_continuous_terms_is_rejected(tmp_path):
    data = toy_domain_dict()
    volume = data["terms"][2]
    data["terms"][2] = {"name": "volume", "kind": "binary", "description": volume["description"]}
    with pytest.raises(ConfigError, match="3-5 continuous terms, got 2"):
        load_domain_file(_write(tmp_path, data))


def test_categorical_needs_distinct_levels(tmp_path):
    data = toy_domain_dict()
    data["terms"][3]["levels"] = ["Red", "Red"]
    with pytest.raises(ConfigError, match=r":terms.3: .*distinct levels, got \('Red', 'Red'\)"):
        load_domain_file(_write(tmp_path, data))


def test_name_must_equal_file_stem(tmp_path):
    path = _write(tmp_path, toy_domain_dict(), stem="other")
    with pytest.raises(ConfigError, match=r"other.yaml:name: 'toy' differs from the file stem 'other'"):
        load_domain_file(path)


def test_non_mapping_and_broken_yaml(tmp_path):
    listed = tmp_path / "listed.yaml"
    listed.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="listed.yaml: top level must be a mapping, got list"):
        load_domain_file(listed)
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="broken.yaml: cannot read YAML"):
        load_domain_file(broken)
