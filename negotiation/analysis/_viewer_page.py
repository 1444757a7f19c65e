"""The transcript viewer's page: a jinja2 template (autoescaped), its style and its script.

The script never builds markup from data: every transcript string reaches the page through
``textContent``. See ``_viewer.py`` for the data layout.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment

_ENV = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
# Key order carries meaning (ledger entries in the order they were named); non-ASCII stays readable.
_ENV.policies["json.dumps_kwargs"] = {"sort_keys": False, "ensure_ascii": False}

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
#controls label{margin-right:.8em;white-space:nowrap}#controls{line-height:2.2em}
.episode{border:1px solid #ccc;border-radius:4px;margin:.4em 0;padding:.3em .6em}
.episode>summary{cursor:pointer}.sides{display:flex;gap:1em;align-items:flex-start}.side{flex:1;min-width:0}
.side h3{font-size:1em;margin:.4em 0}.turns{padding-left:1.6em}
.turn{margin:.4em 0;padding:.3em .5em;border-left:4px solid #9ab;overflow-wrap:anywhere}
.turn.buyer{border-color:#c9a;background:#fcf8fb}.turn.seller{background:#f6f9fc}
.turn.flagged{outline:2px solid #d33}.flag{background:#d33;color:#fff;border-radius:3px;padding:0 .3em;
margin-right:.3em;font-size:.8em}.action,.ledger{font-family:monospace;font-size:.85em;color:#444}
.error{color:#b00}.meta{color:#666;font-size:.9em}.dS{font-weight:600}.pos{color:#070}.neg{color:#b00}
"""

SCRIPT = r"""
'use strict';
const t0 = performance.now();
const data = JSON.parse(document.getElementById('viewer-data').textContent);
const PAGE = 500;
const E = {arm: 0, domain: 1, seed: 2, buyer: 3, outcome: 4, S: 5, mask: 6, turns: 7};
const $ = id => document.getElementById(id);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function fill(id, values, first) {
  const s = $(id);
  for (const [value, label] of [...first, ...values.map((v, i) => [String(i), v])]) {
    const o = el('option', null, label); o.value = value; s.appendChild(o);
  }
}
const byKey = new Map();  // "domain|seed|buyer" -> Map(arm index -> episode)
for (const e of data.episodes) {
  const k = e[E.domain] + '|' + e[E.seed] + '|' + e[E.buyer];
  if (!byKey.has(k)) byKey.set(k, new Map());
  byKey.get(k).set(e[E.arm], e);
}
const haystack = new Map();  // episode -> lower-cased prose, built on the first search
function text(e) {
  if (!haystack.has(e)) haystack.set(e, e[E.turns].map(t => t[1]).join('\n').toLowerCase());
  return haystack.get(e);
}
function flagNames(mask) { return data.flags.filter((f, i) => mask & (1 << i)); }
function fmtS(s) { return s === null ? '—' : s.toFixed(4); }

function renderTurns(e) {
  const ol = el('ol', 'turns');
  let ledger = {};
  for (const [n, t] of e[E.turns].entries()) {
    const [role, prose, ok, action, terms, error, changed, mask] = t;
    ledger = Object.assign({}, ledger, changed);
    const li = el('li', 'turn ' + (role ? 'buyer' : 'seller') + (mask ? ' flagged' : ''));
    li.appendChild(el('div', 'meta', 'turn ' + (n + 1) + ' · ' + (role ? 'buyer' : 'seller')));
    for (const f of flagNames(mask)) li.appendChild(el('span', 'flag', f.replace('_', ' ')));
    li.appendChild(el('div', 'prose', prose));
    if (ok) li.appendChild(el('div', 'action', 'action: ' + action + ' ' +
                              terms.map(p => p.name !== undefined ? p.name + '=' + JSON.stringify(p.value)
                                                                  : p[0] + '=' + JSON.stringify(p[1])).join(', ')));
    else li.appendChild(el('div', 'action error', 'parse error: ' + error));
    li.appendChild(el('div', 'ledger', 'ledger after: ' + JSON.stringify(ledger)));
    ol.appendChild(li);
  }
  return ol;
}
function side(title, e) {
  const d = el('div', 'side');
  d.appendChild(el('h3', null, title + (e ? ' · ' + data.outcomes[e[E.outcome]] + ' · S ' + fmtS(e[E.S]) : ' · no episode')));
  if (e) d.appendChild(renderTurns(e));
  return d;
}

function controls() {
  const c = {};
  for (const k of ['a', 'b', 'domain', 'buyer', 'outcome', 'flag', 'sort']) c[k] = $('f-' + k).value;
  c.q = $('f-q').value.trim().toLowerCase();
  return c;
}
function rows(c) {
  const a = c.a === 'all' ? null : +c.a, b = c.b === 'none' ? null : +c.b;
  const out = [];
  for (const group of byKey.values()) {
    const pairs = a === null ? [...group.values()].map(e => [e, null]) : [[group.get(a) || null, b === null ? null : group.get(b) || null]];
    for (const [ea, eb] of pairs) {
      if (!ea || (b !== null && !eb)) continue;
      if (c.domain !== 'all' && ea[E.domain] !== +c.domain) continue;
      if (c.buyer !== 'all' && ea[E.buyer] !== +c.buyer) continue;
      if (c.outcome !== 'all' && ea[E.outcome] !== +c.outcome && !(eb && eb[E.outcome] === +c.outcome)) continue;
      const mask = ea[E.mask] | (eb ? eb[E.mask] : 0);
      if (c.flag !== 'all' && !(mask & (1 << +c.flag))) continue;
      if (c.q && !text(ea).includes(c.q) && !(eb && text(eb).includes(c.q))) continue;
      const dS = eb && ea[E.S] !== null && eb[E.S] !== null ? ea[E.S] - eb[E.S] : null;
      out.push({ea, eb, dS, mask});
    }
  }
  const key = r => [r.ea[E.domain], r.ea[E.seed], r.ea[E.buyer], r.ea[E.arm]];
  const byKeyOrder = (x, y) => { const p = key(x), q = key(y); for (let i = 0; i < 4; i++) if (p[i] !== q[i]) return p[i] < q[i] ? -1 : 1; return 0; };
  const num = (v, dir) => v === null ? Infinity : dir * v;
  const order = {
    key: byKeyOrder,
    dS_asc: (x, y) => num(x.dS, 1) - num(y.dS, 1) || byKeyOrder(x, y),
    dS_desc: (x, y) => num(x.dS, -1) - num(y.dS, -1) || byKeyOrder(x, y),
    S_asc: (x, y) => num(x.ea[E.S], 1) - num(y.ea[E.S], 1) || byKeyOrder(x, y),
    S_desc: (x, y) => num(x.ea[E.S], -1) - num(y.ea[E.S], -1) || byKeyOrder(x, y),
  }[c.sort] || byKeyOrder;
  return out.sort(order);
}
let current = [], shown = 0;
function summary(r) {
  const e = r.ea, s = el('summary');
  s.appendChild(el('span', null, data.domains[e[E.domain]] + ' · seed ' + e[E.seed] + ' · ' + data.buyers[e[E.buyer]] + ' · '));
  s.appendChild(el('span', null, data.arms[e[E.arm]] + ' ' + data.outcomes[e[E.outcome]] + ' S ' + fmtS(e[E.S])));
  if (r.eb) {
    s.appendChild(el('span', null, ' | ' + data.arms[r.eb[E.arm]] + ' ' + data.outcomes[r.eb[E.outcome]] + ' S ' + fmtS(r.eb[E.S]) + ' | '));
    s.appendChild(el('span', 'dS ' + (r.dS > 0 ? 'pos' : r.dS < 0 ? 'neg' : ''), 'ΔS ' + (r.dS === null ? '—' : (r.dS > 0 ? '+' : '') + r.dS.toFixed(4))));
  }
  if (r.mask) s.appendChild(el('span', 'meta', ' · flags: ' + flagNames(r.mask).join(', ')));
  return s;
}
function more() {
  const box = $('episodes');
  for (const r of current.slice(shown, shown + PAGE)) {
    const d = el('details', 'episode');
    d.dataset.arm = data.arms[r.ea[E.arm]];
    d.appendChild(summary(r));
    d.addEventListener('toggle', () => {
      if (!d.open || d.querySelector('.sides')) return;
      const sides = el('div', 'sides');
      sides.appendChild(side(data.arms[r.ea[E.arm]], r.ea));
      if (r.eb) sides.appendChild(side(data.arms[r.eb[E.arm]], r.eb));
      d.appendChild(sides);
    });
    box.appendChild(d);
  }
  shown = Math.min(current.length, shown + PAGE);
  $('count').textContent = (current.length === shown ? shown : shown + ' drawn, ' + current.length) +
    ' of ' + (controls().b === 'none' ? data.episodes.length + ' episodes' : byKey.size + ' scenarios') + ' shown';
  $('more').hidden = shown >= current.length;
}
function render() {
  const c = controls();
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(c)) if (v && v !== 'all' && v !== 'none' && v !== 'key') params.set(k, k in names ? names[k][+v] : v);
  try { history.replaceState(null, '', params.toString() ? '?' + params : location.pathname); }
  catch (err) { /* some browsers refuse to rewrite file: URLs; the view still works */ }
  current = rows(c); shown = 0; $('episodes').replaceChildren(); more();
}
const names = {a: data.arms, b: data.arms, domain: data.domains, buyer: data.buyers, outcome: data.outcomes, flag: data.flags};
fill('f-a', data.arms, [['all', 'all arms']]);
fill('f-b', data.arms, [['none', '—']]);
fill('f-domain', data.domains, [['all', 'all']]);
fill('f-buyer', data.buyers, [['all', 'all']]);
fill('f-outcome', data.outcomes, [['all', 'all']]);
fill('f-flag', data.flags, [['all', 'any']]);
const params = new URLSearchParams(location.search);
if (params.has('arm') && !params.has('a')) params.set('a', params.get('arm'));
for (const k of ['a', 'b', 'domain', 'buyer', 'outcome', 'flag', 'sort']) {
  if (!params.has(k)) continue;
  const v = params.get(k), i = k in names ? names[k].indexOf(v) : -1;
  $('f-' + k).value = k === 'sort' ? v : String(i);
  if ($('f-' + k).selectedIndex < 0) $('f-' + k).selectedIndex = 0;
}
if (params.has('q')) $('f-q').value = params.get('q');
for (const k of ['a', 'b', 'domain', 'buyer', 'outcome', 'flag', 'sort']) $('f-' + k).addEventListener('change', render);
let typing = null;
$('f-q').addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(render, 200); });
$('more').addEventListener('click', more);
render();
window.viewerLoadMs = performance.now() - t0;
document.body.dataset.ready = '1';
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title><style>{{ style }}</style></head>
<body><h1>{{ title }}</h1>
{% if note %}<p class="meta">{{ note }}</p>{% endif %}
<div id="controls">
<label>arm A <select id="f-a"></select></label><label>arm B <select id="f-b"></select></label>
<label>sort <select id="f-sort"><option value="key">scenario</option><option value="dS_asc">ΔS ascending</option>
<option value="dS_desc">ΔS descending</option><option value="S_asc">S of A ascending</option>
<option value="S_desc">S of A descending</option></select></label>
<label>domain <select id="f-domain"></select></label><label>buyer <select id="f-buyer"></select></label>
<label>outcome <select id="f-outcome"></select></label><label>flag <select id="f-flag"></select></label>
<label>text <input id="f-q" type="search" placeholder="search the prose"></label>
</div>
<p id="count"></p><div id="episodes"></div><button id="more" hidden>show more</button>
<script id="viewer-data" type="application/json">{{ data|tojson }}</script>
<script>{{ script }}</script>
</body></html>
"""


def render_page(*, title: str, note: str, data: dict[str, Any]) -> str:
    """The viewer page; ``title`` and ``note`` are escaped, ``data`` goes through ``tojson``."""
    from markupsafe import Markup

    return _ENV.from_string(PAGE).render(title=title, note=note, data=data, style=Markup(STYLE),
                                         script=Markup(SCRIPT))
