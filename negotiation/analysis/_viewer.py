"""Static transcript viewer: one self-contained HTML page over episode and turn tables.

Filters (arm, domain, buyer, outcome, flag) are selects; their initial values can be
given in the query string (``viewer.html?arm=x&flag=json_leak``). Each turn shows the
prose the counterpart saw, the parsed action (or the parse error), the ledger after
it, and its flags highlighted. Data rides in a JSON script tag and is rendered with
DOM text nodes, so transcript text can never inject markup.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from negotiation.analysis._metrics import require_columns

FLAGS = ("json_leak", "placeholder", "template_tag", "bad_parse", "off_schema")
"""Flags a turn can carry (and the flag filter offers)."""

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:70em;color:#222}
#filters label{margin-right:1em}.episode{border:1px solid #ccc;border-radius:4px;margin:.4em 0;padding:.3em .6em}
.episode>summary{cursor:pointer}.turn{margin:.4em 0;padding:.3em .5em;border-left:4px solid #9ab}
.turn.buyer{border-color:#c9a;background:#fcf8fb}.turn.seller{background:#f6f9fc}
.turn.flagged{outline:2px solid #d33}.flag{background:#d33;color:#fff;border-radius:3px;padding:0 .3em;
margin-right:.3em;font-size:.8em}.action,.ledger{font-family:monospace;font-size:.85em;color:#444}
.error{color:#b00}.meta{color:#666;font-size:.9em}
"""

_SCRIPT = """
const data = JSON.parse(document.getElementById('viewer-data').textContent);
const fields = ['arm','domain','buyer','outcome','flag'];
function fill(id, values){const s=document.getElementById('filter-'+id);
  for(const v of ['all',...values]){const o=document.createElement('option');o.value=v;o.textContent=v;s.appendChild(o);}}
function el(tag, cls, text){const e=document.createElement(tag);if(cls)e.className=cls;
  if(text!==undefined)e.textContent=text;return e;}
function renderTurn(t){const li=el('li','turn '+t.role+(t.flags.length?' flagged':''));
  li.appendChild(el('div','meta','turn '+t.turn+' · '+t.role));
  for(const f of t.flags){li.appendChild(el('span','flag',f.replace('_',' ')));}
  li.appendChild(el('div','prose',t.prose));
  if(t.ok){li.appendChild(el('div','action','action: '+t.action+' '+t.terms.map(p=>p[0]+'='+JSON.stringify(p[1])).join(', ')));}
  else{li.appendChild(el('div','action error','parse error: '+t.error));}
  li.appendChild(el('div','ledger','ledger after: '+JSON.stringify(t.ledger)));return li;}
function render(){const f={};for(const k of fields){f[k]=document.getElementById('filter-'+k).value;}
  const box=document.getElementById('episodes');box.replaceChildren();let shown=0;
  for(const e of data.episodes){
    if((f.arm!=='all'&&e.arm!==f.arm)||(f.domain!=='all'&&e.domain!==f.domain)||(f.buyer!=='all'&&e.buyer!==f.buyer)
       ||(f.outcome!=='all'&&e.outcome!==f.outcome)||(f.flag!=='all'&&!e.flags.includes(f.flag)))continue;
    shown++;const d=el('details','episode');d.dataset.arm=e.arm;d.dataset.outcome=e.outcome;
    d.appendChild(el('summary',null,e.arm+' · '+e.domain+' · seed '+e.seed+' · '+e.buyer+' · '+e.outcome+
      ' · S '+e.S+(e.flags.length?' · flags: '+e.flags.join(', '):'')));
    const ol=el('ol','turns');for(const t of e.turns){ol.appendChild(renderTurn(t));}d.appendChild(ol);box.appendChild(d);}
  document.getElementById('count').textContent=shown+' of '+data.episodes.length+' episodes shown';}
fill('arm',data.arms);fill('domain',data.domains);fill('buyer',data.buyers);fill('outcome',['deal','no_deal','error']);
fill('flag',data.flags);
const params=new URLSearchParams(window.location.search);
for(const k of fields){const s=document.getElementById('filter-'+k);if(params.has(k))s.value=params.get(k);
  s.addEventListener('change',render);}
render();
"""


def _turn_entry(t: dict[str, Any]) -> dict[str, Any]:
    flags = [name for name in ("json_leak", "placeholder", "template_tag") if bool(t[f"flag_{name}"])]
    flags += ["bad_parse"] * (not bool(t["ok"])) + ["off_schema"] * (int(t["n_off_schema"]) > 0)
    return {"turn": int(t["turn"]), "role": str(t["role"]), "prose": str(t["prose"]), "ok": bool(t["ok"]),
            "action": str(t["action"]), "terms": json.loads(t["terms"] or "[]"), "error": str(t["error"]),
            "ledger": json.loads(t["ledger_after"] or "{}"), "flags": flags}


def viewer_data(episodes: pd.DataFrame, turns: pd.DataFrame) -> dict[str, Any]:
    """The JSON the page renders: one entry per episode with its turns in order."""
    require_columns(turns, ["arm", "domain", "seed", "buyer", "turn", "role", "prose", "ok", "action", "terms",
                            "error", "ledger_after", "flag_json_leak", "flag_placeholder", "flag_template_tag",
                            "n_off_schema"], "turns")
    key = ["arm", "domain", "seed", "buyer"]
    by_episode: dict[tuple, list[dict[str, Any]]] = {}
    for t in turns.sort_values([*key, "turn"]).to_dict("records"):
        by_episode.setdefault(tuple(t[c] for c in key), []).append(_turn_entry(t))
    entries = []
    for episode in episodes.sort_values(key).to_dict("records"):
        k = tuple(episode[c] for c in key)
        turn_list = by_episode.get(k, [])
        score = episode["S"]
        entries.append({"arm": str(k[0]), "domain": str(k[1]), "seed": int(k[2]), "buyer": str(k[3]),
                        "outcome": str(episode["outcome"]), "S": None if pd.isna(score) else round(float(score), 4),
                        "flags": sorted({f for t in turn_list for f in t["flags"]}), "turns": turn_list})
    return {"version": 1, "arms": sorted(episodes["arm"].unique().tolist()),
            "domains": sorted(episodes["domain"].unique().tolist()),
            "buyers": sorted(episodes["buyer"].unique().tolist()), "flags": list(FLAGS), "episodes": entries}


def viewer_html(episodes: pd.DataFrame, turns: pd.DataFrame, *, title: str, note: str = "") -> str:
    """The page as one string (no external resources)."""
    payload = json.dumps(viewer_data(episodes, turns), ensure_ascii=False).replace("</", "<\\/")
    selects = "".join(f'<label>{name} <select id="filter-{name}"></select></label>'
                      for name in ("arm", "domain", "buyer", "outcome", "flag"))
    escaped = title.replace("&", "&amp;").replace("<", "&lt;")
    note_html = f"<p class='meta'>{note.replace('&', '&amp;').replace('<', '&lt;')}</p>" if note else ""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{escaped}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{escaped}</h1>{note_html}<div id='filters'>{selects}</div>"
            f"<p id='count'></p><div id='episodes'></div>"
            f"<script id='viewer-data' type='application/json'>{payload}</script><script>{_SCRIPT}</script>"
            f"</body></html>")


def write_viewer(path: Path, episodes: pd.DataFrame, turns: pd.DataFrame, *, title: str, note: str = "") -> Path:
    """Write the viewer page to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(viewer_html(episodes, turns, title=title, note=note), encoding="utf-8")
    return path
