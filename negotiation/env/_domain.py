"""Domain schemas: YAML data under ``protocol/domains/``, validated on load.

A drawn domain lists 7-10 terms (a profiled one, imported from Genius, any number). Continuous
(distributive) terms have a range, a unit and the role that prefers high values; categorical
terms have levels; binary terms have the levels ``[True, False]``. Errors name the file, the key and the bad value.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from negotiation._root import find_root
from negotiation.env._profile import Profile, check_profile
from negotiation.errors import ConfigError, format_validation_error
from negotiation.names import check_name



def default_domains_dir() -> Path:
    """``protocol/domains`` of the repository root (found from the working directory)."""
    return find_root() / "protocol" / "domains"


def __getattr__(name: str) -> Path:
    # REPO_ROOT and DOMAINS_DIR are resolved on each use (the root follows the working directory).
    if name == "REPO_ROOT":
        return find_root()
    if name == "DOMAINS_DIR":
        return default_domains_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

Role = Literal["seller", "buyer"]
ROLES: tuple[Role, Role] = ("seller", "buyer")


class RoleText(BaseModel):
    """One plain-language sentence per role."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seller: str = Field(min_length=1)
    """What the seller reads."""
    buyer: str = Field(min_length=1)
    """What the buyer reads."""

    def for_role(self, role: Role) -> str:
        return self.seller if role == "seller" else self.buyer


class Term(BaseModel):
    """One negotiable term of a domain."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Snake-case identifier, unique within the domain; the JSON action names it."""
    kind: Literal["continuous", "categorical", "binary"]
    """Continuous terms are distributive; categorical and binary ones integrative."""
    description: RoleText
    """What the term is, per role."""
    range: tuple[float, float] | None = None
    """Continuous only: ``[lo, hi]`` with lo < hi."""
    unit: str | None = None
    """Continuous only: unit of the value, e.g. ``$k`` or ``days``."""
    high_preferred_by: Role | None = None
    """Continuous only: the role whose utility rises with the value."""
    levels: tuple[Any, ...] | None = None
    """Categorical: the levels (strings). Binary: filled in as ``(True, False)``."""

    @model_validator(mode="before")
    @classmethod
    def _binary_levels(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kind") == "binary" and "levels" not in data:
            data = {**data, "levels": (True, False)}
        return data

    @model_validator(mode="after")
    def _kind_fields(self) -> Term:
        if self.kind == "continuous":
            if self.range is None or self.unit is None or self.high_preferred_by is None:
                raise ValueError("continuous term needs range, unit and high_preferred_by")
            if not self.range[0] < self.range[1]:
                raise ValueError(f"range must have lo < hi, got {list(self.range)!r}")
            if self.levels is not None:
                raise ValueError("continuous term takes no levels")
        else:
            if self.range is not None or self.unit is not None or self.high_preferred_by:
                raise ValueError(f"{self.kind} term takes no range, unit or high_preferred_by")
            if self.kind == "categorical":
                levels = self.levels or ()
                if len(levels) < 2 or len(set(levels)) != len(levels):
                    raise ValueError(f"categorical term needs >= 2 distinct levels, got {levels!r}")
                if not all(isinstance(v, str) and v for v in levels):
                    raise ValueError(f"categorical levels must be non-empty strings, got {levels!r}")
            elif tuple(self.levels or ()) != (True, False):
                raise ValueError(f"binary term levels are [true, false], got {self.levels!r}")
        return self

    @cached_property
    def is_continuous(self) -> bool:
        return self.kind == "continuous"

    @cached_property
    def level_by_folded(self) -> dict[str, Any]:
        """Categorical: each level under its case-folded spelling (the first of equal ones wins)."""
        table: dict[str, Any] = {}
        for level in self.levels or ():
            if isinstance(level, str):
                table.setdefault(level.casefold(), level)
        return table


class Domain(BaseModel):
    """A negotiation domain: the contract's terms and the roles' descriptions."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Identifier; equals the file stem."""
    version: int = Field(ge=1)
    """Schema version of this domain file; bump it on any change."""
    title: str
    """Human title."""
    description: RoleText
    """The situation, per role."""
    terms: tuple[Term, ...]
    """The 7-10 terms, in a fixed order (the order of weight draws)."""
    profiles: dict[Role, Profile] | None = None
    """Both parties' fixed preferences (the Genius model, ``_profile``); absent, every seed draws
    them. A profiled domain takes any number of continuous and categorical terms."""

    @model_validator(mode="after")
    def _term_mix(self) -> Domain:
        names = [t.name for t in self.terms]
        if len(set(names)) != len(names):
            raise ValueError(f"term names must be unique, got {names!r}")
        if self.profiles is not None:
            return self
        if not 7 <= len(names) <= 10:
            raise ValueError(f"a domain has 7-10 terms, got {len(names)}")
        n_cont = sum(t.is_continuous for t in self.terms)
        if not 3 <= n_cont <= 5:
            raise ValueError(f"a domain has 3-5 continuous terms, got {n_cont}")
        return self

    def __hash__(self) -> int:
        # pydantic's frozen hash would hash the profiles' dicts; equal domains share these fields
        return hash((self.name, self.version, self.terms))

    @field_validator("profiles")
    @classmethod
    def _check_profiles(cls, profiles: dict[Role, Profile] | None, info: ValidationInfo) -> Any:
        terms = info.data.get("terms")
        if profiles is None or terms is None:  # bad terms are reported on their own
            return profiles
        if set(profiles) != set(ROLES) or not terms:
            raise ValueError(f"profiles need the roles {list(ROLES)} and the domain a term")
        for role, profile in profiles.items():
            try:
                check_profile(profile, {t.name: t for t in terms})
            except ValueError as exc:
                raise ValueError(f"{role}: {exc}") from None
        return profiles

    @property
    def term_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terms)

    @cached_property
    def term_index(self) -> dict[str, Term]:
        """Terms by name. Name lookups sit on the hot path of scoring and parsing (every turn,
        every term); a cached property is a plain attribute read after the first (a pydantic
        private attribute costs a ``__getattr__`` call on every read)."""
        return {t.name: t for t in self.terms}

    def term(self, name: str) -> Term:
        try:
            return self.term_index[name]
        except KeyError:
            raise KeyError(f"domain {self.name!r} has no term {name!r}") from None

    def has_term(self, name: str) -> bool:
        return name in self.term_index


_CACHE: dict[Path, Domain] = {}
# libyaml's safe loader when the wheel has it: every stage process reads all nine files.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_domain_file(path: Path) -> Domain:
    """Load and validate one domain file; raise ``ConfigError`` naming file, key and value."""
    path = Path(path).resolve()
    if path in _CACHE:
        return _CACHE[path]
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)  # noqa: S506 - safe loader
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(raw).__name__}")
    try:
        domain = Domain.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(path, exc)) from exc
    if domain.name != path.stem:
        raise ConfigError(f"{path}:name: {domain.name!r} differs from the file stem {path.stem!r}")
    _CACHE[path] = domain
    return domain


def load_domain(name: str, domains_dir: Path | None = None) -> Domain:
    """Load the domain ``name`` from ``protocol/domains/<name>.yaml``."""
    check_name("domain", name)
    folder = Path(domains_dir) if domains_dir else default_domains_dir()
    path = folder / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        raise ConfigError(f"{path}: no such domain {name!r}; known: {', '.join(known)}")
    return load_domain_file(path)


def load_domains(domains_dir: Path | None = None) -> dict[str, Domain]:
    """All domains of the folder, keyed and sorted by name."""
    folder = Path(domains_dir) if domains_dir else default_domains_dir()
    return {p.stem: load_domain_file(p) for p in sorted(folder.glob("*.yaml"))}
