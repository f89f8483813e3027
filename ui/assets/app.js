// groupd live view: every node this node (or, in lab mode, the network
// lab) knows, grouped by group number, and a scrolling timeline. It only
// reads: GET /v1/status, /v1/members and the /v1/events NDJSON stream of
// one daemon, or /lab/info, /lab/status and /lab/events of `lab.sh ui`.
// Plain JS and SVG, nothing fetched from elsewhere.
'use strict';

const WINDOW_MS = 5 * 60 * 1000; // the timeline's longest span
const MIN_SPAN_MS = 20 * 1000;    // and its shortest: it grows with what it has to show
const POLL_MS = 1000;            // /v1/members (gossip meta) and /lab/status refresh
const RETRY_MS = 1000;           // reconnecting a lost stream

// The timeline package's palette (timeline/render.go): the first groups
// get these, later ones golden-angle hues. Grey means election.
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
  '#b07aa1', '#ff9da7', '#9c755f', '#17becf', '#bcbd22', '#1f3a93'];
const FAULT_COLOUR = {partition: '#d62728', oneway: '#ff7f0e', loss: '#9467bd', delay: '#8c564b',
  degrade: '#9467bd', heal: '#2ca02c', kill: '#d62728', stop: '#d62728', restart: '#1f77b4', start: '#1f77b4'};
const WINDOW_KINDS = new Set(['partition', 'oneway', 'loss', 'delay', 'degrade']);
const NO_GROUP = '0.0';

const S = {
  mode: 'node',     // 'node' (one daemon's view) or 'lab' (every node of a lab)
  self: 0,          // node mode: this daemon's ID
  nodes: new Map(), // id -> node
  marks: [],        // lab mode: {t, kind, spec}
  colours: new Map(),
  groupSig: '',
  // Read by the browser test: when events arrived and the DOM showed them.
  // latency: an event's arrival (its chunk read) to the DOM showing it;
  // sinceEvent: the daemon's timestamp of the event to the DOM (the
  // stream's transport included; one clock in lab mode and on one host).
  stats: {events: 0, lastLatencyMs: 0, maxLatencyMs: 0, sumLatencyMs: 0,
    lastSinceEventMs: 0, maxSinceEventMs: 0, sumSinceEventMs: 0, groupsChangedAt: 0, groups: 0, renders: 0},
};
window.groupdUI = S;

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');

function colour(g) {
  if (!g || g === NO_GROUP) return '#e0e0e0';
  if (!S.colours.has(g)) {
    const i = S.colours.size;
    S.colours.set(g, i < PALETTE.length ? PALETTE[i] : `hsl(${((i - PALETTE.length) * 137.508 + 15) % 360},55%,55%)`);
  }
  return S.colours.get(g);
}

// coordOf returns the ID of a group number's creator: "seq.id".
function coordOf(g) {
  const i = (g || '').indexOf('.');
  return i < 0 ? 0 : Number(g.slice(i + 1));
}

// update merges fields into node id's entry and extends its history when
// what the timeline draws changed. t is in ms since the epoch.
function update(id, fields, t) {
  let n = S.nodes.get(id);
  if (!n) {
    n = {id, name: '', priority: 0, group: '', state: '', role: '', leader: false, primary: null,
      gossip: '', reachable: true, hist: []};
    S.nodes.set(id, n);
  }
  Object.assign(n, fields);
  if (!fields.role && fields.group !== undefined) n.role = coordOf(n.group) === id ? 'coordinator' : 'participant';
  const last = n.hist[n.hist.length - 1];
  const cur = {t, group: n.group, state: n.state, coord: n.role === 'coordinator' && n.state !== 'election', down: !n.reachable};
  if (!last || last.group !== cur.group || last.state !== cur.state || last.coord !== cur.coord || last.down !== cur.down) {
    if (last && t < last.t) cur.t = last.t; // a poll answered after a newer event
    n.hist.push(cur);
    colour(cur.group);
  }
  // Keep the last change before the window: it is where a row starts.
  const from = Date.now() - WINDOW_MS;
  while (n.hist.length > 1 && n.hist[1].t < from) n.hist.shift();
}

// applyStatus takes a full Status (GET /v1/status, an event's "new").
function applyStatus(st, t) {
  if (!st || !st.id) return;
  // A node seen for the first time has been in its view since st.since.
  if (!S.nodes.has(st.id) && st.since) t = Math.max(Date.now() - WINDOW_MS, Math.min(t, Date.parse(st.since) || t));
  update(st.id, {name: st.name, priority: st.priority, group: st.group, state: st.state, role: st.role,
    leader: st.leader, primary: st.primary, degraded: st.degraded, members: st.members, reachable: true,
    gossip: S.mode === 'lab' ? 'api' : 'alive'}, t);
}

function onEvent(e, arrived) {
  if (e.mark) {
    S.marks.push({t: Date.parse(e.mark.time), kind: e.mark.kind, spec: e.mark.spec});
    return;
  }
  if (e.down) { // lab mode: node's API stream ended
    if (S.nodes.has(e.node)) update(e.node, {reachable: false, gossip: 'unreachable'}, Date.parse(e.time) || Date.now());
    return;
  }
  const t = Date.parse(e.time) || Date.now();
  applyStatus(e.new, t);
  S.stats.events++;
  if (e.reason !== 'snapshot') S.pending.push({arrived, t}); // a snapshot is stamped when its view began
  if (S.mode === 'node' && e.new && e.new.state === 'normal') {
    // The member list is the freshest word on the others' group; their
    // gossip meta (the next poll) follows.
    for (const id of e.new.members || []) {
      if (id !== e.new.id && S.nodes.has(id)) update(id, {group: e.new.group}, t);
    }
    soon();
  }
}
S.pending = [];

let soonTimer = 0;
function soon() { // refresh the member list shortly after a change
  if (!soonTimer) soonTimer = setTimeout(() => { soonTimer = 0; poll(); }, 150);
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

async function poll() {
  const now = Date.now();
  try {
    if (S.mode === 'lab') {
      for (const v of await getJSON('/lab/status')) {
        if (v.status) applyStatus(v.status, now);
        else if (S.nodes.has(v.node) || v.node) update(v.node, {reachable: false, gossip: 'unreachable', name: S.nodes.get(v.node)?.name || `node${v.node}`}, now);
      }
    } else {
      const [st, ms] = await Promise.all([getJSON('/v1/status'), getJSON('/v1/members')]);
      S.self = st.id;
      for (const m of ms) {
        if (m.id === st.id) continue;
        update(m.id, {name: m.name, priority: m.priority, group: m.group, state: m.state, leader: m.leader,
          degraded: m.degraded, gossip: m.gossip, reachable: m.gossip === 'alive', inList: m.in_group,
          primary: m.group === st.group ? st.primary : null}, now);
      }
      applyStatus(st, Date.parse(st.time) || now);
    }
  } catch (err) {
    setConn('lost', String(err.message || err));
  }
  render();
}

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
        render();
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

// sectionOf says which box a node is drawn in.
function sectionOf(n) {
  if (!n.reachable) return 'unreachable';
  if (!n.group || n.group === NO_GROUP) return 'none';
  return n.group;
}

function render() {
  S.stats.renders++;
  const secs = new Map();
  const ids = [...S.nodes.keys()].sort((a, b) => a - b);
  for (const id of ids) {
    const n = S.nodes.get(id);
    const k = sectionOf(n);
    if (!secs.has(k)) secs.set(k, []);
    secs.get(k).push(n);
  }
  const special = (k) => k === 'none' || k === 'unreachable';
  const keys = [...secs.keys()].sort((a, b) =>
    special(a) - special(b) || secs.get(b).length - secs.get(a).length || (a < b ? -1 : 1));
  let html = '';
  for (const k of keys) {
    const ns = secs.get(k);
    let head;
    if (k === 'none') head = 'no group (election)';
    else if (k === 'unreachable') head = S.mode === 'lab' ? 'API not answering' : 'unreachable (gossip)';
    else {
      const c = coordOf(k);
      const cn = S.nodes.get(c);
      const prim = ns.some((n) => n.primary === true);
      head = `group <span class="num">${esc(k)}</span> · coordinator ${esc(cn?.name || '')} ${c} · ${ns.length} node${ns.length === 1 ? '' : 's'}` +
        (prim ? ' <span class="tag primary">primary</span>' : '');
    }
    html += `<section class="group" data-group="${special(k) ? k : esc(k)}" style="--c:${special(k) ? '#ccc' : colour(k)}">` +
      `<h3>${head}</h3><table><tr><th>name</th><th>id</th><th>prio</th><th>role</th><th>state</th><th>reach</th>` +
      (special(k) ? '<th>last group</th>' : '') + '</tr>';
    for (const n of ns) {
      const reach = n.reachable ? (n.gossip === 'api' ? 'api' : n.gossip || 'alive') : (n.gossip || 'unreachable');
      // A node that is gone leads nothing, whatever it last announced.
      html += `<tr class="node" data-id="${n.id}" data-group="${esc(n.group)}" data-reachable="${n.reachable}" data-leader="${!!n.leader && n.reachable}">` +
        `<td class="name">${esc(n.name || '?')}${n.id === S.self ? ' (this node)' : ''}</td><td class="id">${n.id}</td>` +
        `<td class="prio">${n.priority || ''}</td><td>${esc(n.role)}</td><td class="state-${esc(n.state)}">${esc(n.state || '?')}</td>` +
        `<td class="gossip-${esc(reach)}">${esc(reach)}</td>` + (special(k) ? `<td>${esc(n.group || '-')}</td>` : '') + '</tr>';
    }
    html += '</table></section>';
  }
  $('groups').innerHTML = html;
  const groups = keys.filter((k) => !special(k));
  const sig = groups.join(' ');
  if (sig !== S.groupSig) {
    S.groupSig = sig;
    S.stats.groupsChangedAt = Date.now();
    S.stats.groups = groups.length;
  }
  const now = performance.now(), wall = Date.now();
  for (const p of S.pending) {
    const d = now - p.arrived, e = wall - p.t;
    S.stats.lastLatencyMs = d;
    S.stats.sumLatencyMs += d;
    S.stats.maxLatencyMs = Math.max(S.stats.maxLatencyMs, d);
    S.stats.lastSinceEventMs = e;
    S.stats.sumSinceEventMs += e;
    S.stats.maxSinceEventMs = Math.max(S.stats.maxSinceEventMs, e);
  }
  S.pending = [];
  $('summary').textContent = summary(secs, groups);
  $('stats').textContent = `${S.stats.events} events; event→DOM ${S.stats.lastLatencyMs.toFixed(1)} ms (max ${S.stats.maxLatencyMs.toFixed(1)} ms)`;
  renderTimeline();
}

// summary counts the nodes in groups, and apart those without a group and
// those that are unreachable (a killed node is not in any group).
function summary(secs, groups) {
  const count = (k) => (secs.get(k) || []).length;
  const plural = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const inGroups = groups.reduce((sum, g) => sum + count(g), 0);
  let s = `${plural(inGroups, 'node')} in ${plural(groups.length, 'group')}`;
  if (count('none')) s += `, ${count('none')} without a group`;
  if (count('unreachable')) s += `, ${count('unreachable')} unreachable`;
  return s;
}

// timelineSpan is the time the timeline shows: what it knows, with a
// quarter more on the left, between MIN_SPAN_MS and WINDOW_MS, so that a
// fresh page (or a short lab run) is not a sliver at the right edge.
function timelineSpan(now) {
  let first = now;
  for (const n of S.nodes.values()) if (n.hist.length) first = Math.min(first, n.hist[0].t);
  for (const m of S.marks) first = Math.min(first, m.t);
  return Math.max(MIN_SPAN_MS, Math.min(WINDOW_MS, (now - first) * 1.25));
}

const ROW = 18, GAP = 4, LEFT = 90, TOP = 22, RIGHT = 12;

function renderTimeline() {
  const svg = $('timeline');
  const width = Math.max(400, svg.clientWidth || 1000);
  const ids = [...S.nodes.keys()].sort((a, b) => a - b);
  const height = TOP + ids.length * (ROW + GAP) + 8;
  const now = Date.now(), span = timelineSpan(now), from = now - span, plotW = width - LEFT - RIGHT;
  const x = (t) => LEFT + Math.max(0, Math.min(1, (t - from) / span)) * plotW;
  const f1 = (v) => v.toFixed(1);
  let out = '<g stroke="#e6e6e6">';
  const tick = [5000, 10000, 15000, 30000, 60000].find((d) => span / d <= 10) || 60000;
  for (let t = Math.ceil(from / tick) * tick; t <= now; t += tick) {
    const d = new Date(t);
    out += `<line x1="${f1(x(t))}" y1="${TOP - 4}" x2="${f1(x(t))}" y2="${height}"/>` +
      `<text x="${f1(x(t) + 2)}" y="12" fill="#777" stroke="none" font-size="10">${d.toTimeString().slice(0, 8)}</text>`;
  }
  out += '</g>';
  // Fault windows (until the next heal) and marks, under the rows.
  let open = [];
  const marks = S.marks.filter((m) => m.t >= from - WINDOW_MS);
  const shade = (m, end) => {
    if (end >= from) out += `<rect class="fault" data-kind="${esc(m.kind)}" x="${f1(x(m.t))}" y="${TOP - 4}" width="${f1(Math.max(1, x(end) - x(m.t)))}" height="${height - TOP + 4}" fill="${FAULT_COLOUR[m.kind] || '#7f7f7f'}" fill-opacity="0.10"/>`;
  };
  for (const m of marks) {
    if (m.kind === 'heal') {
      const keep = m.spec === 'partitions' ? open.filter((o) => o.kind !== 'partition' && o.kind !== 'oneway') : [];
      for (const o of open) if (!keep.includes(o)) shade(o, m.t);
      open = keep;
    } else if (WINDOW_KINDS.has(m.kind)) {
      if (m.kind !== 'oneway') open = open.filter((o) => o.kind !== m.kind || (shade(o, m.t), false));
      open.push(m);
    }
  }
  for (const o of open) shade(o, now);
  ids.forEach((id, r) => {
    const n = S.nodes.get(id);
    const y = TOP + r * (ROW + GAP);
    out += `<text x="4" y="${y + 13}" font-size="11" fill="#222">${esc((n.name || 'node').slice(0, 10))} <tspan fill="#777">${id}</tspan></text>` +
      `<rect x="${LEFT}" y="${y}" width="${f1(plotW)}" height="${ROW}" fill="#f6f6f6"/>`;
    n.hist.forEach((h, k) => {
      const end = k + 1 < n.hist.length ? n.hist[k + 1].t : now;
      if (end < from) return;
      const x0 = x(h.t), w = x(end) - x0;
      if (w <= 0) return;
      const tip = `<title>${esc(n.name)} ${h.down ? 'unreachable' : esc(h.state) + ' group ' + esc(h.group)} from ${new Date(h.t).toTimeString().slice(0, 8)}</title>`;
      if (h.down) {
        out += `<g>${tip}<line x1="${f1(x0)}" y1="${y + ROW / 2}" x2="${f1(x0 + w)}" y2="${y + ROW / 2}" stroke="#999" stroke-dasharray="3 3"/></g>`;
        return;
      }
      const fill = h.state === 'election' ? '#c8c8c8' : colour(h.group);
      out += `<g class="seg" data-group="${esc(h.group)}">${tip}<rect x="${f1(x0)}" y="${y}" width="${f1(w)}" height="${ROW}" fill="${fill}"` +
        (h.state === 'reorganization' ? ' fill-opacity="0.6"' : '') + '/>' +
        (h.coord ? `<rect x="${f1(x0)}" y="${y}" width="${f1(w)}" height="3" fill="#222"/>` : '') + '</g>';
    });
  });
  for (const m of marks) {
    if (m.t < from) continue;
    const c = FAULT_COLOUR[m.kind] || '#7f7f7f';
    out += `<g class="mark" data-kind="${esc(m.kind)}"><title>${esc(m.kind + ' ' + (m.spec || ''))}</title>` +
      `<line x1="${f1(x(m.t))}" y1="${TOP - 4}" x2="${f1(x(m.t))}" y2="${height}" stroke="${c}" stroke-width="1.5"/>` +
      // Near the right edge (a fault just now) the label goes left of its line.
      (x(m.t) > width - 160 ? `<text x="${f1(x(m.t) - 2)}" text-anchor="end"` : `<text x="${f1(x(m.t) + 2)}"`) +
      ` y="${TOP - 6}" font-size="10" fill="${c}">${esc(m.kind)} ${esc(m.spec || '')}</text></g>`;
  }
  $('window').textContent = `(last ${span >= 60000 ? Math.round(span / 60000) + ' min' : Math.round(span / 1000) + ' s'}` +
    (S.mode === 'lab' ? ', with the lab\'s faults)' : ')');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('height', height);
  svg.innerHTML = out;
  let legend = '';
  const seen = new Set();
  for (const n of S.nodes.values()) for (const h of n.hist) if (h.group && h.group !== NO_GROUP) seen.add(h.group);
  for (const g of [...seen].sort()) legend += `<span><i style="background:${colour(g)}"></i>group ${esc(g)}</span>`;
  legend += '<span><i style="background:#c8c8c8"></i>election</span><span><i style="background:#222;height:3px"></i>coordinator</span>' +
    '<span>- - unreachable</span>';
  $('legend').innerHTML = legend;
}

async function main() {
  try {
    const info = await getJSON('/lab/info');
    S.mode = 'lab';
    $('title').textContent = `lab ${info.prefix} (${info.nodes} nodes)`;
    document.title = `groupd lab ${info.prefix}`;
  } catch (_) {
    S.mode = 'node';
  }
  await poll();
  if (S.mode === 'node') {
    const me = S.nodes.get(S.self);
    if (me) $('title').textContent = `live view of ${me.name || 'node ' + me.id}`;
  }
  setInterval(poll, POLL_MS);
  setInterval(renderTimeline, 1000); // scroll
  follow(S.mode === 'lab' ? '/lab/events' : '/v1/events');
}

main();
