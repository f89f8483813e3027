// groupd live view: who can reach whom (a topology drawn from what the
// nodes observe and, in lab mode, from the lab's own cuts), the groups, and
// a timeline of the whole run that zooms and pans. It only reads: GET
// /v1/status, /v1/members and the /v1/events NDJSON stream of one daemon,
// or /lab/info, /lab/status, /lab/events and /lab/runs of `lab.sh ui`. A
// recorded history (the lab's history.ndjson, or `groupd watch --json`
// output) replays through the very same drawing. Plain JS and SVG,
// nothing fetched from elsewhere.
'use strict';

const POLL_MS = 250;   // /v1/members (reachability) refresh; the lab's /lab/status twice as slow
const RETRY_MS = 1000; // reconnecting a lost stream
const TICK_MS = 250;   // redraw: evidence ages while nothing arrives
const HIST_MAX = 5000; // changes kept per node
const NO_GROUP = '0.0';
// Stable colours: a group's number picks its palette slot, so it has the
// same colour on every node's page. Grey means no group (election).
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
  '#b07aa1', '#ff9da7', '#9c755f', '#17becf', '#bcbd22', '#1f3a93'];
const FAULT_COLOUR = {partition: '#d62728', oneway: '#ff7f0e', loss: '#9467bd', delay: '#8c564b',
  degrade: '#9467bd', heal: '#2ca02c', kill: '#d62728', stop: '#d62728', restart: '#1f77b4', start: '#1f77b4'};
const WINDOW_KINDS = new Set(['partition', 'oneway', 'loss', 'delay', 'degrade']);
const DOWN_KINDS = new Set(['kill', 'stop', 'restart']);

const S = {
  mode: 'node',     // 'node' (one daemon's view) or 'lab' (every node of a lab)
  self: 0,          // node mode: this daemon's ID
  nodes: new Map(), // id -> {id, name, priority, hist: [{t, st|null (down)}], api, reach, gossip}
  obs: new Map(),   // observer id -> Map(peer id -> reach, with .at: performance.now() of the answer)
  marks: [],        // {t, kind, spec}
  colours: new Map(),
  short: new Map(), // group -> short form unique on the page
  groupSig: '',
  replay: null,     // {name, start, end, t, playing, speed, events, marks}
  tl: {from: 0, to: 0, zoomed: false, follow: true},
  pending: [],
  lostMemo: new Map(), // "p>o" -> when o's evidence of p was last seen lost (live)
  // Read by the browser tests: when events arrived and the DOM showed them.
  // latency: an event's arrival (its chunk read) to the DOM showing it;
  // sinceEvent: the daemon's timestamp of the event to the DOM.
  stats: {events: 0, lastLatencyMs: 0, maxLatencyMs: 0, sumLatencyMs: 0,
    lastSinceEventMs: 0, maxSinceEventMs: 0, sumSinceEventMs: 0, groupsChangedAt: 0, groups: 0, renders: 0},
};
window.groupdUI = S;

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
const f1 = (v) => v.toFixed(1);
const plural = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;
const clock = (t) => new Date(t).toTimeString().slice(0, 8);
const secs = (ms) => ms < 0 ? 'never' : ms < 10000 ? (ms / 1000).toFixed(1) + ' s' : Math.round(ms / 1000) + ' s';
const hasGroup = (g) => !!g && g !== NO_GROUP;

// ---- group numbers: colour and short form ----

function colour(g) {
  if (!hasGroup(g)) return '#d0d0d0';
  let c = S.colours.get(g);
  if (c) return c;
  let h = 0;
  for (const ch of g) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  const used = new Set(S.colours.values());
  for (let i = 0; i < PALETTE.length && !c; i++) if (!used.has(PALETTE[(h + i) % PALETTE.length])) c = PALETTE[(h + i) % PALETTE.length];
  c ||= `hsl(${(h * 137.508) % 360},55%,50%)`;
  S.colours.set(g, c);
  return c;
}

// shortNames gives every group on the page the shortest tail of its
// sequence (at least 3 digits) that, with its creator's ID, tells it from
// the others: "…836.16".
function shortNames(groups) {
  const gs = [...groups].filter(hasGroup);
  const split = gs.map((g) => { const i = g.indexOf('.'); return [g, g.slice(0, i), g.slice(i + 1)]; });
  const longest = Math.max(3, ...split.map((s) => s[1].length));
  for (let k = 3; k <= longest; k++) {
    const form = (s) => (s[1].length > k ? '…' + s[1].slice(-k) : s[1]) + '.' + s[2];
    if (new Set(split.map(form)).size === split.length || k === longest) {
      S.short = new Map(split.map((s) => [s[0], form(s)]));
      return;
    }
  }
  S.short = new Map();
}
const short = (g) => !hasGroup(g) ? '—' : S.short.get(g) || g;
function groupTitle(g) {
  if (!hasGroup(g)) return 'no group';
  const [seq, id] = g.split('.');
  return `group ${g}: formed ${new Date(Number(seq)).toISOString().replace('T', ' ').slice(0, 23)} UTC (as its number says) by ${labelOf(Number(id))}`;
}
const groupSpan = (g) => `<span class="num" style="--c:${colour(g)}" title="${esc(groupTitle(g))}">${esc(short(g))}</span>`;

// label is a node's name as the page shows it everywhere: its name, with
// its ID when another node has the same name.
function label(n) {
  if (!n.name) return 'node ' + n.id;
  for (const m of S.nodes.values()) if (m.id !== n.id && m.name === n.name) return `${n.name}#${n.id}`;
  return n.name;
}

// ---- the model: every node's history of views ----

function node(id) {
  let n = S.nodes.get(id);
  if (!n) {
    n = {id, name: '', priority: 0, hist: [], api: true, gossip: ''};
    S.nodes.set(id, n);
  }
  return n;
}

// drawn is what a change must touch to be recorded.
const drawn = (st) => st ? [st.group, st.state, st.role, st.leader, st.primary, st.expect, st.term, st.coordinator,
  (st.members || []).join(',')].join('|') : 'down';

// record appends node id's view st (null: down) at t when it differs from
// its last one.
function record(id, st, t) {
  const n = node(id);
  if (st) {
    if (st.name) n.name = st.name;
    if (st.priority) n.priority = st.priority;
  }
  const last = n.hist[n.hist.length - 1];
  if (last && drawn(last.st) === drawn(st)) {
    if (st && last.st) last.st = st; // newer fields (lease, time) without a new row
    return;
  }
  if (last && t < last.t) t = last.t; // a poll answered after a newer event
  n.hist.push({t, st});
  if (n.hist.length > HIST_MAX) n.hist.splice(0, n.hist.length - HIST_MAX);
}

// entryAt returns node n's history entry at t ({t, st}; st null when
// down), or null before its first record.
function entryAt(n, t) {
  const h = n.hist;
  let lo = 0, hi = h.length - 1, k = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (h[mid].t <= t) { k = mid; lo = mid + 1; } else hi = mid - 1;
  }
  return k < 0 ? null : h[k];
}

// applyStatus takes a full Status (GET /v1/status, an event's "new").
function applyStatus(st, t) {
  if (!st || !st.id) return;
  const n = node(st.id);
  n.api = true;
  // A node seen for the first time has been in this view since st.since.
  if (!n.hist.length && st.since) t = Math.min(t, Date.parse(st.since) || t);
  record(st.id, st, t);
}

function onEvent(e, arrived) {
  if (e.mark) {
    addMark({t: Date.parse(e.mark.time), kind: e.mark.kind, spec: e.mark.spec || ''});
    return;
  }
  if (e.down) { // lab mode: node's API stream ended
    const n = node(e.node);
    n.api = false;
    record(e.node, null, Date.parse(e.time) || Date.now());
    return;
  }
  const t = Date.parse(e.time) || Date.now();
  applyStatus(e.new, t);
  S.stats.events++;
  if (e.reason !== 'snapshot') S.pending.push({arrived, t}); // a snapshot is stamped when its view began
  if (S.mode === 'node') soon();
}

// addMark keeps a mark once (the stream's backlog repeats the recorded
// history the page may have read first).
function addMark(m) {
  if (!isFinite(m.t) || S.marks.some((o) => o.t === m.t && o.kind === m.kind && o.spec === m.spec)) return;
  S.marks.push(m);
  S.marks.sort((a, b) => a.t - b.t);
}

let soonTimer = 0;
function soon() { // refresh the member list shortly after a change
  if (!soonTimer) soonTimer = setTimeout(() => { soonTimer = 0; poll(); }, 100);
}

async function getJSON(path) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 5000);
  try {
    const r = await fetch(path, {signal: ctl.signal, cache: 'no-store'});
    if (!r.ok) throw new Error(`${path}: ${r.status}`);
    return await r.json();
  } finally {
    clearTimeout(timer);
  }
}

// observe keeps observer's answer about its peers: their reach (when the
// daemon reports it) and, in node mode, their gossip meta.
function observe(observer, members, at) {
  const m = new Map();
  for (const p of members || []) if (p.id !== observer && p.reach) m.set(p.id, Object.assign({at}, p.reach));
  S.obs.set(observer, m);
}

async function poll() {
  if (S.replay) return;
  const now = Date.now(), at = performance.now();
  try {
    if (S.mode === 'lab') {
      for (const v of await getJSON('/lab/status')) {
        const n = node(v.node);
        if (v.status) {
          applyStatus(v.status, now);
          observe(v.node, v.members, at);
        } else {
          n.api = false;
          if (!n.name) n.name = `node${v.node}`;
          record(v.node, null, now);
          S.obs.delete(v.node);
        }
      }
    } else {
      const [st, ms] = await Promise.all([getJSON('/v1/status'), getJSON('/v1/members')]);
      S.self = st.id;
      observe(st.id, ms, at);
      for (const m of ms) {
        if (m.id === st.id) continue;
        const n = node(m.id);
        n.name = m.name || n.name;
        n.priority = m.priority || n.priority;
        n.gossip = m.gossip;
        // Another node's view is its gossip meta: what it last announced.
        record(m.id, {id: m.id, name: m.name, group: m.group, state: m.state, leader: m.leader,
          role: coordOf(m.group) === m.id ? 'coordinator' : 'participant', gossip: true,
          coordinator: coordOf(m.group), members: []}, now);
      }
      applyStatus(st, Date.parse(st.time) || now);
    }
    S.pollFailed = false;
  } catch (err) {
    S.pollFailed = true;
    setConn('lost', String(err.message || err));
  }
  render();
}
const coordOf = (g) => { const i = (g || '').indexOf('.'); return i < 0 ? 0 : Number(g.slice(i + 1)); };

// follow reads an NDJSON stream for good, reconnecting when it ends.
async function follow(path) {
  for (;;) {
    try {
      const r = await fetch(path, {cache: 'no-store'});
      if (!r.ok || !r.body) throw new Error(`${path}: ${r.status}`);
      setConn('live');
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        const arrived = performance.now();
        buf += dec.decode(value, {stream: true});
        const lines = buf.split('\n');
        buf = lines.pop();
        for (const line of lines) {
          if (!line.trim()) continue;
          try { onEvent(JSON.parse(line), arrived); } catch (err) { console.warn('bad line', err); }
        }
        if (!S.replay) render();
      }
      setConn('lost', 'stream ended');
    } catch (err) {
      setConn('lost', String(err.message || err));
    }
    await new Promise((res) => setTimeout(res, RETRY_MS));
  }
}

function setConn(state, why) {
  const c = $('conn');
  c.dataset.state = state;
  c.textContent = state === 'live' ? 'live' : `reconnecting (${why || state})`;
}

// ---- what the page shows at time t ----

// reachNow is a reach answer as of now. The daemon's verdict stands until
// its next answer (newer evidence may have reached it meanwhile: windows
// are shorter than a poll in the fast profile, and a busy browser polls
// late); only when the page cannot reach the API does it age the evidence
// past its window itself.
function reachNow(r) {
  if (!r) return null;
  const since = performance.now() - r.at;
  const age = r.age_ms < 0 ? -1 : r.age_ms + since;
  let state = r.state;
  if (state === 'up' && r.window_ms > 0 && S.pollFailed && age > r.window_ms) state = 'lost';
  return {state, basis: r.basis, via: r.via || 0, age};
}
const pollMs = () => S.mode === 'lab' ? 2 * POLL_MS : POLL_MS;

// cutsAt returns the lab's cuts at t from its marks: key "a>b" (packets
// from a to b are dropped) -> the mark.
function cutsAt(t) {
  const cuts = new Map();
  for (const m of S.marks) {
    if (m.t > t) break;
    if (m.kind === 'end' || m.kind === 'heal') { // the lab's teardown, or any heal: partitions and cuts end
      cuts.clear();
    } else if (m.kind === 'partition') {
      for (const [k, c] of cuts) if (c.kind === 'partition') cuts.delete(k);
      const sides = m.spec.split('|').map(ids);
      for (const a of sides) for (const b of sides) if (a !== b) for (const x of a) for (const y of b) cuts.set(x + '>' + y, m);
    } else if (m.kind === 'oneway') {
      for (const [x, y] of onewayPairs(m.spec)) cuts.set(x + '>' + y, m);
    }
  }
  return cuts;
}
// onewayPairs reads a one-way mark's spec: "1->3,1->4" (the lab's), a
// bare number continuing the last pair's sender ("1->3,4").
function onewayPairs(spec) {
  const out = [];
  let from = 0;
  for (const tok of spec.split(',')) {
    const [a, b] = tok.includes('->') ? tok.split('->') : [String(from), tok];
    from = Number(a.trim());
    const to = Number(b.trim());
    if (from > 0 && to > 0 && from !== to) out.push([from, to]);
  }
  return out;
}
// ids reads a node list as schema.ParseIDs does: "1-3,5" is 1, 2, 3, 5
// (the lab writes runs of three or more as ranges).
const ids = (s) => (s || '').split(',').flatMap((x) => {
  const [a, b = a] = x.split('-').map((y) => Number(y.trim()));
  return a > 0 && b >= a && b - a <= 65536 ? Array.from({length: b - a + 1}, (_, i) => a + i) : [];
});

// dropsAt returns who dropped whom: key "c>p" -> time, for every member p
// that coordinator c removed from its member list while it kept
// coordinating (its acknowledgements stopped, or it stopped), as the
// views up to t tell, unless p came back.
function dropsAt(t) {
  const drops = new Map();
  for (const n of S.nodes.values()) {
    // A coordinator's own views, and in node mode this node's view of
    // its coordinator's list: each tells of one list, in order.
    const local = new Map();
    let prev = null;
    for (const h of n.hist) {
      if (h.t > t) break;
      const st = h.st;
      if (!st || st.gossip || !hasGroup(st.group) || st.state === 'election' || !st.coordinator ||
        (st.coordinator !== n.id && !(S.mode === 'node' && n.id === S.self))) {
        prev = null;
        local.clear();
        continue;
      }
      if (prev && prev.coordinator === st.coordinator) {
        const cur = new Set(st.members || []);
        for (const p of prev.members || []) if (!cur.has(p)) local.set(st.coordinator + '>' + p, h.t);
        for (const p of cur) local.delete(st.coordinator + '>' + p);
      } else local.clear();
      prev = st;
    }
    for (const [k, at] of local) drops.set(k, at);
  }
  return drops;
}

// viewAt is the whole picture at t: every node's view, the groups, and the
// links with what each rests on.
function viewAt(t) {
  const live = !S.replay;
  const nodes = [];
  for (const n of [...S.nodes.values()].sort((a, b) => a.id - b.id)) {
    const h = entryAt(n, t);
    const st = h && h.st;
    const v = {id: n.id, name: n.name, label: label(n), st, down: !st || (S.mode === 'lab' && live && !n.api), reach: null};
    if (S.mode === 'node' && live) {
      if (n.id === S.self) v.reach = {state: 'self', basis: 'self', age: 0};
      else if (S.obs.get(S.self)?.has(n.id)) v.reach = reachNow(S.obs.get(S.self).get(n.id));
      else v.reach = {state: n.gossip === 'alive' ? 'up' : 'lost', basis: 'gossip ' + (n.gossip || '?'), age: -1};
      if (v.reach.state !== 'up' && v.reach.state !== 'self') v.down = true;
    }
    v.group = v.down || !st ? '' : st.group;
    nodes.push(v);
  }
  const byId = new Map(nodes.map((v) => [v.id, v]));
  // Groups: a node's own view, or in node mode the member list of this
  // node's group (fresher than the others' gossip meta).
  const me = byId.get(S.self);
  if (S.mode === 'node' && me && me.st && hasGroup(me.st.group)) {
    // Its coordinator created the number: it is in the group before its
    // member list (the Ready) arrives.
    for (const id of [...(me.st.members || []), me.st.coordinator]) {
      const v = byId.get(id);
      if (v && !v.down) v.group = me.st.group;
    }
  }
  const groups = new Map();
  for (const v of nodes) {
    if (!hasGroup(v.group)) continue;
    if (!groups.has(v.group)) groups.set(v.group, {group: v.group, ids: [], primary: false, expect: 0, known: false});
    const g = groups.get(v.group);
    g.ids.push(v.id);
    if (v.st && !v.st.gossip) {
      g.known = true;
      g.expect = Math.max(g.expect, v.st.expect || 0);
      if (v.st.expect > 0 && v.st.primary) g.primary = true;
      g.coordinator = v.st.coordinator;
    }
  }
  for (const g of groups.values()) {
    // A member says primary from its coordinator's last message. When the
    // coordinator's own answer puts it in another group (a merge it began)
    // or down, the group it led is gone: its lease, if any, is the new
    // group's, and one leader must not show as two primary groups.
    const c = g.primary && byId.get(g.coordinator);
    if (c && c.st && !c.st.gossip && (c.down || c.st.group !== g.group)) g.primary = false;
  }
  return {t, nodes, byId, groups: [...groups.values()], links: linksAt(t, nodes, byId)};
}

// linksAt draws a link between two nodes from what is known of each
// direction ("a>b": packets from a reach b), strongest evidence first:
// the lab's cuts, a node's own reach answer, a coordinator that dropped a
// member, a member list (a member in it acknowledged the coordinator's
// heartbeat lately, so both directions worked).
function linksAt(t, nodes, byId) {
  const dir = new Map();
  const know = (k, state, basis, rank) => {
    const o = dir.get(k);
    if (!o || o.rank < rank) dir.set(k, {state, basis, rank});
  };
  if (S.mode === 'lab' || S.replay) { // a recording's marks are the lab's
    const cuts = cutsAt(t);
    for (const [k, m] of cuts) {
      know(k, 'cut', `the lab cut it: ${m.kind} ${m.spec}, ${secs(t - m.t)} ago`, 4);
      const [a, b] = k.split('>');
      if (!cuts.has(b + '>' + a)) know(b + '>' + a, 'up', `not cut by the lab (${m.kind} ${m.spec} is one-way)`, 3);
    }
  }
  if (!S.replay) {
    for (const [o, peers] of S.obs) {
      for (const [p, r0] of peers) {
        const r = reachNow(r0);
        if (!r) continue;
        if (r.state === 'unknown') {
          // Lost, and nothing heard since: the last word stands until
          // the peer is heard again (directly or by its coordinator).
          const m = S.lostMemo.get(p + '>' + o);
          if (m) know(p + '>' + o, 'cut', `${labelOf(o)} lost it ${secs(Date.now() - m.at)} ago (${m.basis}) and has heard nothing since`, 2);
          continue;
        }
        const age = r.age < 0 ? '' : `, ${secs(r.age)} ago`;
        const key = p + '>' + o;
        if (r.state === 'up') S.lostMemo.delete(key);
        if (r.basis === 'coordinator') {
          if (r.state === 'up' && r.via) know(p + '>' + r.via, 'up', `${labelOf(r.via)} lists it (as ${labelOf(o)} heard${age})`, 1);
          continue;
        }
        if (r.state === 'lost') S.lostMemo.set(key, {at: Date.now() - Math.max(0, r.age), basis: r.basis});
        know(key, r.state === 'up' ? 'up' : 'cut', `${labelOf(o)} ${r.state === 'up' ? 'heard' : 'last heard'} it (${r.basis}${age})`, 3);
      }
    }
  }
  for (const [k, at] of dropsAt(t)) {
    const [c, p] = k.split('>');
    const why = `${labelOf(Number(c))} dropped ${labelOf(Number(p))} from its member list ${secs(t - at)} ago`;
    know(p + '>' + c, 'cut', why, 2);
    know(c + '>' + p, 'cut', why, 2);
  }
  for (const v of nodes) {
    const st = v.st;
    if (v.down || !st || st.gossip || st.role !== 'coordinator' || st.state !== 'normal') continue;
    for (const m of st.members || []) {
      if (m === v.id) continue;
      const why = `in ${labelOf(v.id)}'s member list`;
      know(m + '>' + v.id, 'up', why, 1);
      know(v.id + '>' + m, 'up', why, 1);
    }
  }
  // A member's view names its coordinator's list too (node mode: this
  // node's group, where the others' views are only gossip).
  if (S.mode === 'node') {
    const me = byId.get(S.self);
    const st = me && me.st;
    const cr = S.obs.get(S.self)?.get(st && st.coordinator);
    const coordUp = !cr || reachNow(cr).state === 'up'; // an older daemon says nothing: trust its list
    if (coordUp && st && hasGroup(st.group) && st.state === 'normal' && st.coordinator && st.coordinator !== S.self) {
      for (const m of st.members || []) {
        if (m === st.coordinator) continue;
        const why = `in ${labelOf(st.coordinator)}'s member list, as this node last heard`;
        know(m + '>' + st.coordinator, 'up', why, 1);
        know(st.coordinator + '>' + m, 'up', why, 1);
      }
    }
  }
  const links = [];
  const seen = new Set();
  for (const k of dir.keys()) {
    const [a, b] = k.split('>').map(Number);
    const key = Math.min(a, b) + '-' + Math.max(a, b);
    if (seen.has(key) || !byId.has(a) || !byId.has(b)) continue;
    seen.add(key);
    const ab = dir.get(a + '>' + b), ba = dir.get(b + '>' + a);
    const l = {a: Math.min(a, b), b: Math.max(a, b), state: 'up', from: 0, to: 0,
      basis: [ab && `${labelOf(a)}→${labelOf(b)}: ${ab.state}, ${ab.basis}`, ba && `${labelOf(b)}→${labelOf(a)}: ${ba.state}, ${ba.basis}`].filter(Boolean).join('\n')};
    // One-way takes evidence that one direction works (the lab's word, or
    // a node that hears the other): a member list vouches for both or
    // neither.
    const cutAB = ab && ab.state === 'cut', cutBA = ba && ba.state === 'cut';
    if (cutAB && ba && !cutBA && ba.rank >= 3) [l.state, l.from, l.to] = ['oneway', b, a];
    else if (cutBA && ab && !cutAB && ab.rank >= 3) [l.state, l.from, l.to] = ['oneway', a, b];
    else if (cutAB || cutBA) l.state = 'cut';
    links.push(l);
  }
  return links;
}
const labelOf = (id) => { const n = S.nodes.get(id); return n ? label(n) : 'node ' + id; };

// ---- drawing ----

function now() { return S.replay ? S.replay.t : Date.now(); }

function render() {
  S.stats.renders++;
  const t = now();
  const all = new Set();
  for (const n of S.nodes.values()) for (const h of n.hist) if (h.st && hasGroup(h.st.group)) all.add(h.st.group);
  shortNames(all);
  const view = viewAt(t);
  renderHeader(view);
  renderTopology(view);
  renderGroups(view);
  const sig = view.groups.map((g) => g.group + ':' + g.ids.join(',')).sort().join(' ');
  if (sig !== S.groupSig) {
    S.groupSig = sig;
    S.stats.groupsChangedAt = Date.now();
    S.stats.groups = view.groups.length;
  }
  const pnow = performance.now(), wall = Date.now();
  for (const p of S.pending) {
    const d = pnow - p.arrived, e = wall - p.t;
    S.stats.lastLatencyMs = d;
    S.stats.sumLatencyMs += d;
    S.stats.maxLatencyMs = Math.max(S.stats.maxLatencyMs, d);
    S.stats.lastSinceEventMs = e;
    S.stats.sumSinceEventMs += e;
    S.stats.maxSinceEventMs = Math.max(S.stats.maxSinceEventMs, e);
  }
  S.pending = [];
  $('stats').textContent = S.replay ? `replay of ${S.replay.name}: ${S.replay.events} events, ${S.replay.marks} marks` :
    `${S.stats.events} events; event→DOM ${S.stats.lastLatencyMs.toFixed(1)} ms (max ${S.stats.maxLatencyMs.toFixed(1)} ms)`;
  renderTimeline();
}

function renderHeader(view) {
  const inGroups = view.groups.reduce((s, g) => s + g.ids.length, 0);
  const apart = view.nodes.filter((v) => !v.down && !hasGroup(v.group)).length;
  const gone = view.nodes.filter((v) => v.down).length;
  let s = `${plural(inGroups, 'node')} in ${plural(view.groups.length, 'group')}`;
  if (apart) s += `, ${apart} without a group`;
  if (gone) s += S.mode === 'lab' ? `, ${gone} not answering` : `, ${gone} not reachable from here`;
  const expect = Math.max(0, ...view.nodes.map((v) => (v.st && !v.st.gossip && v.st.expect) || 0));
  s += expect > 0 ? ` · quorum ${Math.floor(expect / 2) + 1} of ${expect}` : ' · no quorum set (--expect): no group is primary';
  $('summary').textContent = s;
}

// The topology: nodes on a circle in ID order (stable while groups
// change), coloured by group; links as the evidence says.
function renderTopology(view) {
  const svg = $('topo');
  const W = Math.max(320, svg.clientWidth || 600), n = view.nodes.length;
  const H = n > 16 ? 480 : n > 8 ? 400 : 300, cx = W / 2, cy = H / 2, R = Math.min(W, H) / 2 - 36, r = n > 32 ? 6 : n > 12 ? 11 : 15;
  const pos = new Map(view.nodes.map((v, i) => [v.id, [cx + R * Math.sin(2 * Math.PI * i / Math.max(n, 1)), cy - R * Math.cos(2 * Math.PI * i / Math.max(n, 1))]]));
  let out = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
    '<path d="M0,0L10,5L0,10z" fill="#ff7f0e"/></marker></defs><g class="links">';
  // Many cut links (a partition of many nodes) are drawn lighter, so that
  // the nodes and the links that work stay readable.
  const dense = view.links.filter((l) => l.state === 'cut').length > 2 * n;
  for (const l of view.links) {
    if (n > 40 && l.state === 'up') continue; // too many to read: the groups' colours say it
    const [x1, y1] = pos.get(l.a), [x2, y2] = pos.get(l.b);
    const attrs = `class="link" data-a="${l.a}" data-b="${l.b}" data-state="${l.state}"` + (l.from ? ` data-from="${l.from}" data-to="${l.to}"` : '');
    const tip = `<title>${esc(labelOf(l.a))} – ${esc(labelOf(l.b))}: ${l.state === 'oneway' ? `one-way, only ${esc(labelOf(l.from))} → ${esc(labelOf(l.to))} gets through` : l.state}\n${esc(l.basis)}</title>`;
    if (l.state === 'oneway') {
      const [fx, fy] = pos.get(l.from), [tx, ty] = pos.get(l.to);
      const mx = (fx + tx) / 2, my = (fy + ty) / 2;
      out += `<g ${attrs}>${tip}<line x1="${f1(fx)}" y1="${f1(fy)}" x2="${f1(mx)}" y2="${f1(my)}" stroke="#ff7f0e" stroke-width="2.5" marker-end="url(#arrow)"/>` +
        `<line x1="${f1(mx)}" y1="${f1(my)}" x2="${f1(tx)}" y2="${f1(ty)}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="4 3"/></g>`;
    } else {
      const st = l.state === 'cut' ? `stroke="#d62728" stroke-width="${dense ? 0.8 : 1.5}" stroke-dasharray="4 3"${dense ? ' stroke-opacity="0.35"' : ''}` : 'stroke="#9a9a9a" stroke-width="1.5"';
      out += `<g ${attrs}>${tip}<line x1="${f1(x1)}" y1="${f1(y1)}" x2="${f1(x2)}" y2="${f1(y2)}" ${st}/>` +
        (l.state === 'cut' && !dense ? `<text x="${f1((x1 + x2) / 2)}" y="${f1((y1 + y2) / 2 + 4)}" text-anchor="middle" fill="#d62728" font-size="12">✕</text>` : '') + '</g>';
    }
  }
  out += '</g>';
  for (const v of view.nodes) {
    const [x, y] = pos.get(v.id), st = v.st;
    const coord = !v.down && st && !st.gossip && st.role === 'coordinator' && st.state === 'normal';
    const leader = !v.down && st && st.leader;
    const quorum = st && st.expect > 0;
    const lastGroup = st && hasGroup(st.group) ? st.group : '';
    const fill = v.down ? '#fff' : colour(v.group);
    const stroke = v.down ? (lastGroup ? colour(lastGroup) : '#999') : '#333';
    const reach = v.reach ? v.reach.state : v.down ? 'down' : 'api';
    let tip = `${v.label} (id ${v.id})`;
    if (v.down) tip += S.mode === 'lab' ? ': its API does not answer' : `: not reachable from here (${v.reach ? v.reach.basis + (v.reach.age >= 0 ? ', ' + secs(v.reach.age) + ' ago' : '') : '?'})`;
    if (lastGroup) tip += `\n${v.down ? 'last known ' : ''}${groupTitle(lastGroup)}`;
    if (leader) tip += `\nleader, term ${st.term || 'unknown here (gossip carries none)'}` + (quorum ? (st.primary ? ', primary (holds its lease)' : ', NOT primary: no quorum') : ' (no quorum set)');
    out += `<g class="tnode" data-id="${v.id}" data-group="${esc(v.group)}" data-reach="${reach}" data-leader="${!!leader}"` +
      ` data-primary="${!!(leader && quorum && st.primary)}"><title>${esc(tip)}</title>`;
    if (leader && quorum && st.primary) out += `<circle cx="${f1(x)}" cy="${f1(y)}" r="${r + 5}" fill="none" stroke="#2c8a2c" stroke-width="3"/>`;
    else if (leader && quorum) out += `<circle cx="${f1(x)}" cy="${f1(y)}" r="${r + 5}" fill="none" stroke="#a33" stroke-width="2" stroke-dasharray="3 2"/>`;
    out += `<circle cx="${f1(x)}" cy="${f1(y)}" r="${r}" fill="${fill}" stroke="${stroke}" stroke-width="${coord ? 3 : 1}"` +
      (v.down ? ' stroke-dasharray="3 2"' : '') + '/>';
    if (leader) out += `<text x="${f1(x)}" y="${f1(y + 4)}" text-anchor="middle" font-size="${r}" fill="#fff">★</text>`;
    // The name outside the circle, away from the centre.
    const dx = x - cx, dy = y - cy, d = Math.hypot(dx, dy) || 1;
    const lx = x + dx / d * (r + 8), ly = y + dy / d * (r + 8) + 4;
    const anchor = dx > 5 ? 'start' : dx < -5 ? 'end' : 'middle';
    out += `<text x="${f1(lx)}" y="${f1(anchor === 'middle' && dy > 0 ? ly + 6 : anchor === 'middle' ? ly - 4 : ly)}" text-anchor="${anchor}" font-size="11">${esc(v.label)}` +
      (leader && st.term && n <= 32 ? ` <tspan fill="#666">T ${esc(short(st.term))}</tspan>` : '') + '</text></g>';
  }
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('height', H);
  svg.innerHTML = out;
  const cuts = view.links.filter((l) => l.state !== 'up').length;
  $('topo-note').textContent = (S.replay ? 'Links: from the recording: member lists, coordinators that dropped members, and the lab\'s cuts (a recording holds no node\'s reach evidence)' :
    S.mode === 'lab' ? 'Links: every node\'s own evidence, and the lab\'s cuts' :
    `Links: what ${labelOf(S.self)} observes (heartbeats, acknowledgements, member lists); nodes it has no fresh evidence of are hollow`) +
    ` · ${plural(cuts, 'cut link')} · hover for what each rests on and how old it is.`;
}

function renderGroups(view) {
  const sections = view.groups.slice().sort((a, b) => b.ids.length - a.ids.length || (a.group < b.group ? -1 : 1));
  const none = view.nodes.filter((v) => !v.down && !hasGroup(v.group));
  const gone = view.nodes.filter((v) => v.down);
  let html = '';
  const box = (key, head, vs, extra) => {
    html += `<section class="group" data-group="${esc(key)}" style="--c:${hasGroup(key) ? colour(key) : '#ccc'}"><h3>${head}</h3>` +
      `<table><tr><th>name</th><th>id</th><th>prio</th><th>role</th><th>state</th><th>reach</th>${extra ? '<th>last group</th>' : ''}</tr>`;
    for (const v of vs) html += row(v, extra);
    html += '</table></section>';
  };
  for (const g of sections) {
    const c = coordOf(g.group);
    let tag = '';
    if (g.known) {
      if (g.expect > 0) tag = g.primary ? '<span class="tag primary">primary</span>' : `<span class="tag minority">no quorum of ${g.expect}</span>`;
      else tag = '<span class="tag">no quorum set</span>';
    }
    box(g.group, `group ${groupSpan(g.group)} · coordinator ${esc(labelOf(c))} · ${plural(g.ids.length, 'node')} ${tag}`,
      g.ids.map((id) => view.byId.get(id)), false);
  }
  if (none.length) box('none', 'no group (election)', none, true);
  if (gone.length) box('unreachable', S.mode === 'lab' ? 'API not answering' : 'not reachable from here', gone, true);
  $('groups').innerHTML = html;
}

function row(v, extra) {
  const st = v.st || {};
  const leader = !v.down && !!st.leader;
  let reach = v.down ? (S.mode === 'lab' || S.replay ? 'down' : 'lost') : S.replay ? 'recorded' : 'api';
  let tip = S.replay ? 'its recorded view' : S.mode === 'lab' ? 'the lab reads its API' : '';
  if (v.reach) {
    reach = v.reach.state;
    tip = v.reach.state === 'self' ? 'this node' : `${v.reach.basis}` + (v.reach.age >= 0 ? `, ${secs(v.reach.age)} ago` : ', never heard') +
      (v.reach.via ? ` (via ${labelOf(v.reach.via)})` : '');
  }
  const seen = S.mode === 'lab' && !S.replay ? heardBy(v.id) : '';
  const text = reach === 'self' ? 'this node' : reach + (v.reach && v.reach.age >= 0 && reach !== 'self' ? ' · ' + secs(v.reach.age) : '') + seen;
  const role = st.role === 'coordinator' && st.state === 'normal' ? 'coordinator' : st.role || '';
  const lead = leader ? (st.expect > 0 ? (st.primary ? ' ★ primary leader' : ' ☆ leader, no quorum') : ' ★ leader') : '';
  return `<tr class="node" data-id="${v.id}" data-group="${esc(v.group)}" data-reachable="${!v.down}" data-leader="${leader}">` +
    `<td class="name">${esc(v.label)}${v.id === S.self && S.mode === 'node' ? ' (this node)' : ''}</td><td class="id">${v.id}</td>` +
    `<td class="prio">${st.priority || S.nodes.get(v.id)?.priority || ''}</td><td>${esc(role)}${lead}` +
    (leader && st.term ? ` <small title="${esc('term ' + st.term)}">T ${esc(short(st.term))}</small>` : '') + `</td>` +
    `<td class="state-${esc(st.state)}">${esc(st.state || '?')}</td><td class="reach-${esc(reach)}" title="${esc(tip)}">${esc(text)}</td>` +
    (extra ? `<td>${hasGroup(st.group) ? groupSpan(st.group) : '-'}</td>` : '') + '</tr>';
}

// heardBy says, in lab mode, how many of the other answering nodes have
// fresh evidence of v (a member is only heard by its coordinator).
function heardBy(id) {
  let up = 0, lost = 0;
  for (const [o, peers] of S.obs) {
    const r = o !== id && reachNow(peers.get(id));
    if (r && r.state === 'up') up++;
    else if (r && r.state === 'lost') lost++;
  }
  return up + lost ? ` · heard by ${up}` + (lost ? `, lost by ${lost}` : '') : '';
}

// ---- timeline: the whole run, zoom (wheel) and pan (drag) ----

const ROW = 18, GAP = 4, LEFT = 100, RIGHT = 12, LANE = 12;

function dataSpan() {
  let first = Infinity;
  for (const n of S.nodes.values()) if (n.hist.length) first = Math.min(first, n.hist[0].t);
  if (S.marks.length) first = Math.min(first, S.marks[0].t);
  const last = S.replay ? S.replay.end : Date.now();
  if (!isFinite(first)) first = last - 10000;
  return [first, Math.max(last, first + 1000)];
}

function timelineRange() {
  const [first, last] = dataSpan();
  const tl = S.tl;
  if (!tl.zoomed) return [first, last + (last - first) / 50];
  if (tl.follow) { const w = tl.to - tl.from; tl.to = last + w / 50; tl.from = tl.to - w; }
  return [tl.from, tl.to];
}

function renderTimeline() {
  const svg = $('timeline');
  const width = Math.max(400, svg.clientWidth || 1000);
  const list = [...S.nodes.values()].sort((a, b) => a.id - b.id);
  const [from, to] = timelineRange();
  const span = to - from, plotW = width - LEFT - RIGHT, end = S.replay ? S.replay.end : Date.now();
  const x = (t) => LEFT + (t - from) / span * plotW;
  const cx = (t) => Math.max(LEFT, Math.min(LEFT + plotW, x(t)));
  // Fault labels in lanes, so that none overlaps another.
  const lanes = [];
  const labels = [];
  for (const m of S.marks) {
    if (m.t < from || m.t > to) continue;
    const text = `${m.kind} ${m.spec}`.trim(), w = text.length * 5.6 + 6;
    let x0 = x(m.t) + 2;
    if (x0 + w > width) x0 = Math.max(LEFT, x(m.t) - 2 - w);
    let lane = lanes.findIndex((r) => r <= x0);
    if (lane < 0) { lane = lanes.length; lanes.push(0); }
    lanes[lane] = x0 + w + 4;
    labels.push({m, x0, lane, text});
  }
  const top = 18 + lanes.length * LANE + 4;
  const height = top + list.length * (ROW + GAP) + 6;
  let out = '<g stroke="#e6e6e6">';
  const tick = [100, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000].find((d) => span / d <= 10) || 3600000;
  for (let t = Math.ceil(from / tick) * tick; t <= to; t += tick) {
    const ms = tick < 1000 ? '.' + String(new Date(t).getMilliseconds()).padStart(3, '0') : '';
    out += `<line x1="${f1(x(t))}" y1="14" x2="${f1(x(t))}" y2="${height}"/>` +
      `<text x="${f1(x(t) + 2)}" y="11" fill="#777" stroke="none" font-size="10">${clock(t)}${ms}</text>`;
  }
  out += '</g>';
  // Fault windows, under the rows: a fault lasts until the heal that ends it.
  let open = [];
  const shade = (m, until) => {
    if (until < from || m.t > to) return;
    out += `<rect class="fault" data-kind="${esc(m.kind)}" x="${f1(cx(m.t))}" y="${top - 4}" width="${f1(Math.max(1, cx(until) - cx(m.t)))}" height="${height - top + 4}" fill="${FAULT_COLOUR[m.kind] || '#7f7f7f'}" fill-opacity="0.10"/>`;
  };
  for (const m of S.marks) {
    if (m.t > end) break;
    if (m.kind === 'heal') {
      const keep = m.spec.trim() === 'partitions' ? open.filter((o) => o.kind !== 'partition' && o.kind !== 'oneway') : [];
      for (const o of open) if (!keep.includes(o)) shade(o, m.t);
      open = keep;
    } else if (WINDOW_KINDS.has(m.kind)) {
      if (m.kind !== 'oneway') open = open.filter((o) => o.kind !== m.kind || (shade(o, m.t), false));
      open.push(m);
    }
  }
  for (const o of open) shade(o, end);
  list.forEach((n, r) => {
    const y = top + r * (ROW + GAP), name = label(n);
    out += `<text x="4" y="${y + 13}" font-size="11" fill="#222">${esc(name.slice(0, 14))}</text>` +
      `<rect x="${LEFT}" y="${y}" width="${f1(plotW)}" height="${ROW}" fill="#f6f6f6"/>`;
    n.hist.forEach((h, k) => {
      const until = k + 1 < n.hist.length ? n.hist[k + 1].t : end;
      if (until < from || h.t > to) return;
      const x0 = cx(h.t), w = cx(until) - x0;
      if (w <= 0) return;
      const st = h.st;
      const tip = `<title>${esc(name)} ${st ? esc(st.state) + ' ' + esc(groupTitle(st.group)) : 'down'} from ${clock(h.t)}</title>`;
      if (!st) {
        out += `<g class="seg" data-down="true">${tip}<line x1="${f1(x0)}" y1="${y + ROW / 2}" x2="${f1(x0 + w)}" y2="${y + ROW / 2}" stroke="#999" stroke-dasharray="3 3"/></g>`;
        return;
      }
      const fill = st.state === 'election' || !hasGroup(st.group) ? '#c8c8c8' : colour(st.group);
      out += `<g class="seg" data-group="${esc(st.group)}">${tip}<rect x="${f1(x0)}" y="${y}" width="${f1(w)}" height="${ROW}" fill="${fill}"` +
        (st.state === 'reorganization' ? ' fill-opacity="0.6"' : '') + '/>' +
        (st.role === 'coordinator' && st.state !== 'election' ? `<rect x="${f1(x0)}" y="${y}" width="${f1(w)}" height="3" fill="#222"/>` : '') + '</g>';
    });
  });
  for (const {m, x0, lane, text} of labels) {
    const c = FAULT_COLOUR[m.kind] || '#7f7f7f';
    out += `<g class="mark" data-kind="${esc(m.kind)}"><title>${esc(text)} at ${clock(m.t)}</title>` +
      `<line x1="${f1(x(m.t))}" y1="${18 + lane * LANE}" x2="${f1(x(m.t))}" y2="${height}" stroke="${c}" stroke-width="1.5"/>` +
      `<text x="${f1(x0)}" y="${26 + lane * LANE}" font-size="10" fill="${c}">${esc(text)}</text></g>`;
  }
  if (S.replay) out += `<line id="cursor" x1="${f1(cx(S.replay.t))}" y1="14" x2="${f1(cx(S.replay.t))}" y2="${height}" stroke="#000" stroke-width="1.5"/>`;
  $('window').textContent = `(${clock(from)} – ${clock(to)}, ${secs(span)}${S.tl.zoomed ? '; double-click to fit' : '; wheel zooms, drag pans'})`;
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('height', height);
  svg.innerHTML = out;
  let legend = '';
  for (const g of [...S.short.keys()].sort((a, b) => Number(a.split('.')[0]) - Number(b.split('.')[0]))) legend += `<span title="${esc(groupTitle(g))}"><i style="background:${colour(g)}"></i>${esc(short(g))}</span>`;
  legend += '<span><i style="background:#c8c8c8"></i>election</span><span><i style="background:#222;height:3px"></i>coordinator</span><span>- - down</span>';
  $('legend').innerHTML = legend;
}

function timelineEvents() {
  const svg = $('timeline');
  const toTime = (ev) => {
    const rect = svg.getBoundingClientRect(), width = Math.max(400, svg.clientWidth || 1000);
    const [from, to] = timelineRange();
    const px = (ev.clientX - rect.left) * width / rect.width;
    return from + (px - LEFT) / (width - LEFT - RIGHT) * (to - from);
  };
  svg.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const [from, to] = timelineRange(), [first, last] = dataSpan();
    const at = Math.max(from, Math.min(to, toTime(ev))), k = ev.deltaY > 0 ? 1.25 : 0.8;
    const w = Math.max(200, Math.min((last - first) * 1.02, (to - from) * k));
    const f = from + (at - from) * (1 - w / (to - from));
    Object.assign(S.tl, {zoomed: true, from: f, to: f + w, follow: f + w >= last});
    renderTimeline();
  }, {passive: false});
  let drag = null;
  svg.addEventListener('mousedown', (ev) => { drag = {x: ev.clientX, range: timelineRange(), moved: false}; });
  window.addEventListener('mousemove', (ev) => {
    if (!drag) return;
    const rect = svg.getBoundingClientRect(), width = Math.max(400, svg.clientWidth || 1000);
    const [from, to] = drag.range, dx = (ev.clientX - drag.x) * width / rect.width;
    if (Math.abs(dx) > 3) drag.moved = true;
    const dt = -dx / (width - LEFT - RIGHT) * (to - from), last = dataSpan()[1];
    Object.assign(S.tl, {zoomed: true, from: from + dt, to: to + dt, follow: to + dt >= last});
    renderTimeline();
  });
  window.addEventListener('mouseup', (ev) => {
    if (drag && !drag.moved && S.replay) seek(toTime(ev));
    drag = null;
  });
  svg.addEventListener('dblclick', () => { Object.assign(S.tl, {zoomed: false, follow: true}); renderTimeline(); });
}

// ---- replay: a recorded history, the same drawing ----

// parseHistory reads NDJSON: events ({"time","node","new",...}: the lab's
// history.ndjson, `groupd watch --json`) and marks ({"time","kind","spec"}),
// each sorted by time; fill puts them into the model.
function parseHistory(text) {
  const evs = [], marks = [];
  let bad = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let r;
    try { r = JSON.parse(line); } catch (_) { bad++; continue; }
    const t = Date.parse(r.time);
    if (!isFinite(t)) { bad++; continue; }
    if (r.new && (r.node || r.new.id)) evs.push({t, id: r.node || r.new.id, st: r.new});
    else if (r.kind) marks.push({t, kind: r.kind, spec: r.spec || ''});
    else bad++;
  }
  evs.sort((a, b) => a.t - b.t);
  marks.sort((a, b) => a.t - b.t);
  return {evs, marks, bad};
}

// fill puts recorded views and marks into the model, as timeline draws
// them: nodes taken down by a kill, stop or restart mark stay down until
// their next event.
function fill({evs, marks}) {
  for (const m of marks) if (m.kind !== 'check' && m.kind !== 'quiet') addMark(m);
  const downs = [];
  for (const m of marks) if (DOWN_KINDS.has(m.kind)) for (const id of ids(m.spec)) downs.push({t: m.t, id, down: true});
  // Events before downs at the same instant: the down holds then.
  for (const r of [...evs, ...downs].sort((a, b) => a.t - b.t || (a.down ? 1 : 0) - (b.down ? 1 : 0))) {
    const n = node(r.id);
    if (r.down) {
      if (n.hist.length) n.hist.push({t: r.t, st: null});
    } else {
      if (r.st.name) n.name = r.st.name;
      n.hist.push({t: r.t, st: r.st});
    }
  }
}

function loadHistory(text, name) {
  const rec = parseHistory(text), {evs, marks, bad} = rec;
  if (!evs.length) throw new Error(`${name}: no events in it (${bad} lines not understood)`);
  S.nodes = new Map();
  S.obs = new Map();
  S.colours = new Map();
  S.short = new Map();
  S.marks = [];
  fill(rec);
  const start = Math.min(evs[0].t, marks.length ? marks[0].t : Infinity);
  const stop = Math.max(evs[evs.length - 1].t, marks.length ? marks[marks.length - 1].t : 0);
  S.replay = {name, start, end: stop, t: start, playing: false, speed: 1, events: evs.length, marks: marks.length, bad};
  Object.assign(S.tl, {zoomed: false, follow: true});
  showReplay();
  seek(start);
  return {events: evs.length, marks: marks.length, bad, start, end: stop};
}

function seek(t) {
  const r = S.replay;
  if (!r) return;
  r.t = Math.max(r.start, Math.min(r.end, t));
  $('replay-pos').value = String(Math.round(r.t - r.start));
  $('replay-time').textContent = `${clock(r.t)}.${String(new Date(r.t).getMilliseconds()).padStart(3, '0')} (+${secs(r.t - r.start)} of ${secs(r.end - r.start)})`;
  render();
}

let playTimer = 0, playLast = 0;
function play(on) {
  const r = S.replay;
  if (!r) return;
  r.playing = on;
  $('replay-play').textContent = on ? 'pause' : 'play';
  clearInterval(playTimer);
  if (!on) return;
  if (r.t >= r.end) seek(r.start);
  playLast = performance.now();
  playTimer = setInterval(() => {
    const p = performance.now();
    seek(r.t + (p - playLast) * r.speed);
    playLast = p;
    if (r.t >= r.end) play(false);
  }, 100);
}

function showReplay() {
  const r = S.replay;
  $('replay-ctl').hidden = !r;
  $('back-live').hidden = !r;
  if (!r) return;
  $('title').textContent = `replay of ${r.name}`;
  $('conn').dataset.state = 'replay';
  $('conn').textContent = 'replay';
  const pos = $('replay-pos');
  pos.max = String(Math.round(r.end - r.start));
  pos.step = '10';
}

function replayEvents() {
  $('open-file').addEventListener('change', (ev) => {
    const f = ev.target.files && ev.target.files[0];
    if (!f) return;
    f.text().then((text) => openRecording(text, f.name));
  });
  $('replay-pos').addEventListener('input', (ev) => seek(S.replay.start + Number(ev.target.value)));
  $('replay-play').addEventListener('click', () => play(!S.replay.playing));
  $('replay-speed').addEventListener('change', (ev) => { if (S.replay) S.replay.speed = Number(ev.target.value); });
  $('back-live').addEventListener('click', () => location.reload());
  $('runs').addEventListener('change', async (ev) => {
    const id = ev.target.value;
    if (!id) return;
    try {
      const r = await fetch(id === 'current' ? '/lab/history.ndjson' : `/lab/runs/${encodeURIComponent(id)}/history.ndjson`, {cache: 'no-store'});
      if (!r.ok) throw new Error(`${r.status}`);
      openRecording(await r.text(), id === 'current' ? 'the current run' : id);
    } catch (err) {
      $('replay-error').textContent = `could not load run ${id}: ${err.message || err}`;
    }
  });
}

function openRecording(text, name) {
  try {
    play(false);
    loadHistory(text, name);
    $('replay-error').textContent = '';
  } catch (err) {
    $('replay-error').textContent = String(err.message || err);
  }
}

async function listRuns() {
  try {
    const runs = await getJSON('/lab/runs');
    let opts = '<option value="">replay a lab run…</option>';
    for (const r of runs || []) opts += `<option value="${esc(r.id)}">${esc(r.name || r.id)}${r.nodes ? ' · ' + plural(r.nodes, 'node') : ''}</option>`;
    $('runs').innerHTML = opts;
    $('runs').hidden = false;
  } catch (_) { /* not a lab: a file can still be opened */ }
}

// view is what the tests read: the picture at the page's time, in plain
// data (groups by full number, links, and badges).
S.view = () => {
  const v = viewAt(now());
  return {t: v.t, replay: !!S.replay, mode: S.mode,
    nodes: v.nodes.map((n) => ({id: n.id, name: n.name, label: n.label, group: n.group, down: n.down, reach: n.reach && n.reach.state,
      leader: !!(n.st && n.st.leader && !n.down), primary: !!(n.st && !n.down && n.st.primary && n.st.expect > 0)})),
    groups: v.groups.map((g) => ({group: g.group, ids: g.ids, primary: g.primary, expect: g.expect})),
    links: v.links.map(({a, b, state, from, to, basis}) => ({a, b, state, from, to, basis})),
    primaryBadges: document.querySelectorAll ? document.querySelectorAll('.tag.primary').length : 0};
};
S.loadHistory = loadHistory;
S.seek = (t) => seek(t);

// labInfo asks whether the page is served by the lab: its info, or null
// when the server says there is no such thing (a daemon). A failure to get
// an answer is asked again, not taken for a daemon: a loaded host
// answered late, and the page then read /v1/* of a lab and showed nothing.
async function labInfo() {
  for (;;) {
    try {
      const r = await fetch('/lab/info', {cache: 'no-store'});
      if (r.ok) return await r.json();
      if (r.status === 404 || r.status === 403 || r.status === 405) return null;
      setConn('lost', `/lab/info: ${r.status}`);
    } catch (err) {
      setConn('lost', String(err.message || err));
    }
    await new Promise((res) => setTimeout(res, RETRY_MS));
  }
}

async function main() {
  replayEvents();
  timelineEvents();
  const info = await labInfo();
  if (info) {
    S.mode = 'lab';
    $('title').textContent = `lab ${info.prefix} (${info.nodes} nodes)`;
    document.title = `groupd lab ${info.prefix}`;
    listRuns();
    // The run so far: the page does not start empty.
    try {
      const r = await fetch('/lab/history.ndjson', {cache: 'no-store'});
      if (r.ok) fill(parseHistory(await r.text()));
    } catch (_) { /* an older lab: live only */ }
  }
  await poll();
  if (S.mode === 'node') {
    const me = S.nodes.get(S.self);
    if (me) $('title').textContent = `live view of ${label(me)}`;
  }
  setInterval(poll, pollMs());
  setInterval(() => { if (!S.replay) render(); }, TICK_MS);
  follow(S.mode === 'lab' ? '/lab/events' : '/v1/events');
}

main();
