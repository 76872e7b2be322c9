// The taskfs web viewer: a client of the JSON API of `taskfs serve`
// (docs/web.md). The list is the first page of GET /api/tasks, then pages
// by cursor, kept live by the events of GET /api/events; a task's page
// (#/task/ID) shows its record, its important lines and its transcript:
// the tail by a Range request, earlier parts by earlier Ranges as the user
// scrolls up, new lines by the follow stream. Task output is only ever
// inserted as text (textContent, text nodes), never as markup.
//
// The token (docs/web.md, "Logging in"): the login URL carries it in its
// fragment (#token=..., which a browser sends to no server) or, once, in
// its query; it is kept in sessionStorage, which belongs to this origin
// (port included) and this tab, dropped from the address bar, and sent as
// "Authorization: Bearer" on every request. No cookie: a browser would send
// one to every port of this host, another local user's server included.
// Event streams are read with fetch() for the same reason (an EventSource
// cannot send a header).
'use strict';

const STATES = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled', 'lost'];
const ENDED = new Set(['completed', 'failed', 'cancelled', 'lost']);
const PAGE = 200; // tasks per page of the list
const CHUNK = 256 * 1024; // bytes per Range of a transcript
const TAIL = 64 * 1024; // the first Range: a few screens of the end, painted at once
const JUMP_MAX = 64 * 1024 * 1024; // how far from the start a jump to a line reads
const LINES_MAX = 100000; // transcript lines kept in the page while following

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// ---- the token ----------------------------------------------------------------

const TOKEN_KEY = 'taskfs.token';

// Takes the token out of the address bar (#token=... or ?token=...) into
// sessionStorage. Returns true if there was one.
function takeToken() {
  const h = /^#token=([^&]*)/.exec(location.hash);
  const q = new URLSearchParams(location.search).get('token');
  const t = h ? decodeURIComponent(h[1]) : q;
  if (!t) return false;
  try {
    sessionStorage.setItem(TOKEN_KEY, t);
  } catch { /* storage refused: this page's requests will get 401 */ }
  history.replaceState(null, '', location.pathname);
  return true;
}

function authHeaders() {
  let t = null;
  try {
    t = sessionStorage.getItem(TOKEN_KEY);
  } catch { /* no storage: not logged in */ }
  return t ? { Authorization: `Bearer ${t}` } : {};
}

// ---- the API ----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

function errorText(status, body) {
  if (status === 401)
    return 'Not logged in (or the server has a new token): open the login URL that `taskfs serve` printed.';
  if (body && typeof body === 'object' && body.error) return body.error;
  if (typeof body === 'string' && body.trim()) return body.trim();
  return `HTTP ${status}`;
}

async function readBody(res) {
  const type = res.headers.get('Content-Type') || '';
  if (type.includes('json')) return res.json().catch(() => null);
  return res.text().catch(() => '');
}

async function api(path, opts = {}) {
  const res = await fetch(path, { credentials: 'omit', ...opts, headers: { Accept: 'application/json', ...authHeaders(), ...(opts.headers || {}) } });
  const body = await readBody(res);
  if (!res.ok) throw new ApiError(res.status, errorText(res.status, body), body);
  return body;
}

// A stream of server-sent events read with fetch(), which can send the
// token. on[event](data, id) for each event (id: the last id the stream
// gave, as EventSource's lastEventId); onEnd(err) once when the stream
// ends or fails (err null for a clean end), unless close() came first.
function openEvents(path, on, onEnd) {
  const ctl = new AbortController();
  const stream = { closed: false, close() { this.closed = true; ctl.abort(); } };
  (async () => {
    let err = null;
    try {
      const res = await fetch(path, { credentials: 'omit', cache: 'no-store', signal: ctl.signal, headers: { Accept: 'text/event-stream', ...authHeaders() } });
      if (!res.ok) throw new ApiError(res.status, errorText(res.status, await readBody(res)));
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      let type = '';
      let data = [];
      let id = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done || stream.closed) break;
        buf += value;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (!line) {
            const fn = on[type || 'message'];
            if (data.length && fn && !stream.closed) fn(data.join('\n'), id);
            type = '';
            data = [];
            continue;
          }
          if (line[0] === ':') continue;
          const c = line.indexOf(':');
          const field = c < 0 ? line : line.slice(0, c);
          const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
          if (field === 'event') type = v;
          else if (field === 'data') data.push(v);
          else if (field === 'id') id = v;
        }
      }
    } catch (e) {
      err = e;
    }
    if (!stream.closed) {
      stream.closed = true;
      onEnd(err);
    }
  })();
  return stream;
}

function showError(box, err) {
  if (!err) {
    box.hidden = true;
    box.textContent = '';
    return;
  }
  box.textContent = err.message || String(err);
  box.hidden = false;
}

// ---- words for times, exits, commands -------------------------------------------

const pad = (n) => String(n).padStart(2, '0');

function spanText(ms) {
  if (!(ms >= 0)) return '';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${pad(s % 60)}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${pad(m % 60)}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

const when = (t) => (t ? Date.parse(t) : NaN);
const ageText = (rec, now) => spanText(now - when(rec.created));

function durationText(rec, now) {
  const start = when(rec.started);
  if (Number.isNaN(start)) return '';
  const end = rec.ended ? when(rec.ended) : ENDED.has(rec.state) ? NaN : now;
  return spanText(end - start);
}

function exitText(rec) {
  if (rec.exitCode != null) return String(rec.exitCode);
  if (rec.signalName) return rec.signalName;
  if (rec.signal != null) return `signal ${rec.signal}`;
  return '';
}

function shellQuote(argv) {
  return (argv || []).map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${String(a).replace(/'/g, `'\\''`)}'`)).join(' ');
}

function bytesText(n) {
  if (n == null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i ? `${v.toFixed(1)} ${units[i]}` : `${n} B`;
}

function stateBadge(state) {
  return el('span', `state s-${state}`, state);
}

// ---- ANSI SGR ---------------------------------------------------------------
// A line's text becomes text nodes and spans: SGR (ESC [ ... m) sets bold,
// dim, italic, underline, inverse and colours (8/16 by class, 256 and
// truecolor by value through the CSSOM, which the CSP allows); every other
// escape and control character is dropped; a carriage return starts the
// line over, as a terminal shows a progress bar.

const ESC_RE = /\x1b\[([0-?]*)([ -/]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[P^_X][^\x1b]*(?:\x1b\\)?|\x1b[ -/]*[0-~]?|\r(?!$)|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

const ANSI_PLAIN = Object.freeze({ fg: null, bg: null, bo: false, dm: false, it: false, ul: false, inv: false });

function color256(n) {
  if (n < 16) return n;
  if (n < 232) {
    const c = n - 16;
    const v = (x) => (x ? 55 + x * 40 : 0);
    return `rgb(${v(Math.floor(c / 36))},${v(Math.floor(c / 6) % 6)},${v(c % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

// An extended colour (38/48): `5;N` or `2;R;G;B` in ps from index i; returns
// [colour or undefined, the index of the last parameter used].
function extColor(ps, i) {
  if (ps[i + 1] === 5 && ps.length > i + 2) return [color256(Math.min(255, ps[i + 2])), i + 2];
  if (ps[i + 1] === 2 && ps.length > i + 4) {
    const c = ps.slice(i + 2, i + 5).map((x) => Math.min(255, x));
    return [`rgb(${c.join(',')})`, i + 4];
  }
  return [undefined, ps.length];
}

function applySgr(st, params) {
  const s = { ...st };
  // colon sub-parameters (38:2::R:G:B) read as the semicolon form
  const ps = params === '' ? [0] : params.replace(/:+/g, ';').split(';').map((x) => (x === '' ? 0 : Number(x) || 0));
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i];
    if (p === 0) Object.assign(s, ANSI_PLAIN);
    else if (p === 1) s.bo = true;
    else if (p === 2) s.dm = true;
    else if (p === 3) s.it = true;
    else if (p === 4) s.ul = true;
    else if (p === 7) s.inv = true;
    else if (p === 22) s.bo = s.dm = false;
    else if (p === 23) s.it = false;
    else if (p === 24) s.ul = false;
    else if (p === 27) s.inv = false;
    else if (p >= 30 && p <= 37) s.fg = p - 30;
    else if (p >= 90 && p <= 97) s.fg = p - 90 + 8;
    else if (p >= 40 && p <= 47) s.bg = p - 40;
    else if (p >= 100 && p <= 107) s.bg = p - 100 + 8;
    else if (p === 39) s.fg = null;
    else if (p === 49) s.bg = null;
    else if (p === 38 || p === 48) {
      const [c, last] = extColor(ps, i);
      if (c !== undefined) s[p === 38 ? 'fg' : 'bg'] = c;
      i = last;
    }
  }
  return s;
}

const isPlain = (s) => s.fg == null && s.bg == null && !s.bo && !s.dm && !s.it && !s.ul && !s.inv;

function styledSpan(s, text) {
  const e = document.createElement('span');
  let fg = s.fg;
  let bg = s.bg;
  if (s.inv) {
    if (fg == null && bg == null) e.classList.add('inv');
    [fg, bg] = [bg, fg];
  }
  if (typeof fg === 'number') e.classList.add(`f${fg}`);
  else if (fg) e.style.color = fg;
  if (typeof bg === 'number') e.classList.add(`b${bg}`);
  else if (bg) e.style.backgroundColor = bg;
  for (const k of ['bo', 'dm', 'it', 'ul']) if (s[k]) e.classList.add(k);
  e.textContent = text;
  return e;
}

// Renders text into parent from state st; returns the state after it.
function renderAnsi(parent, text, st) {
  const parts = [];
  let s = st;
  let at = 0;
  const put = (t) => {
    if (t) parts.push([s, t]);
  };
  ESC_RE.lastIndex = 0;
  for (let m; (m = ESC_RE.exec(text)); ) {
    put(text.slice(at, m.index));
    at = ESC_RE.lastIndex;
    if (m[0] === '\r') parts.length = 0;
    else if (m[3] === 'm' && !m[2] && !/[<=>?]/.test(m[1])) s = applySgr(s, m[1]);
  }
  put(text.slice(at));
  for (const [ps, t] of parts) parent.appendChild(isPlain(ps) ? document.createTextNode(t) : styledSpan(ps, t));
  return s;
}

// ---- the list -----------------------------------------------------------------

const list = {
  filter: new Set(), // states shown; empty: all
  rows: new Map(), // id -> { rec, tr }
  next: null, // cursor of the next page, null: none
  loading: false,
  gen: 0, // bumped by each reload; a page of an older one is dropped
  queue: null, // events that came while the first page loads
  focusId: null,
  painted: false,
};

// How far a record has come: a list page read before an event must not
// take a task back (running -> queued) in the page.
const rank = (rec) => (ENDED.has(rec.state) ? 2 : rec.state === 'running' ? 1 : 0);

function makeRow(rec) {
  const tr = document.createElement('tr');
  tr.tabIndex = -1;
  tr.dataset.id = rec.id;
  for (const c of ['state', 'id', 'age', 'dur', 'exit', 'lines', 'key', 'cmd']) tr.appendChild(el('td', `c-${c}`));
  fillRow(tr, rec, Date.now());
  return tr;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function fillRow(tr, rec, now) {
  const [st, id, age, dur, exit, lines, key, cmd] = tr.children;
  if (tr.dataset.state !== rec.state) {
    st.replaceChildren(stateBadge(rec.state));
    tr.dataset.state = rec.state;
    tr.className = `s-${rec.state}`;
  }
  setText(id, rec.id);
  setText(age, ageText(rec, now));
  age.title = rec.created || '';
  setText(dur, durationText(rec, now));
  setText(exit, exitText(rec));
  exit.title = rec.reason || '';
  setText(lines, rec.transcript ? String(rec.transcript.lines) : '');
  lines.title = rec.transcript ? bytesText(rec.transcript.bytes) : '';
  setText(key, rec.key ?? '');
  const c = shellQuote(rec.command);
  setText(cmd, c);
  cmd.title = c;
}

const shown = (rec) => !list.filter.size || list.filter.has(rec.state);

function updateCount() {
  const n = list.rows.size;
  $('count').textContent = `${n} shown${list.next ? ', more below' : ''}`;
  $('empty').hidden = n > 0 || list.loading;
  $('more').hidden = !list.next;
}

// Puts a record in the list (from a page: at the end; from an event: in id
// order, newest first, if it falls within the pages loaded).
function upsert(rec, fromPage) {
  const have = list.rows.get(rec.id);
  if (!shown(rec)) {
    if (have && !fromPage) {
      have.tr.remove();
      list.rows.delete(rec.id);
    }
    return;
  }
  if (have) {
    if (fromPage && rank(have.rec) > rank(rec)) return;
    have.rec = rec;
    fillRow(have.tr, rec, Date.now());
    return;
  }
  const body = $('rows');
  const tr = makeRow(rec);
  if (fromPage) body.appendChild(tr);
  else {
    const last = body.lastElementChild;
    if (list.next && last && rec.id < last.dataset.id) return; // comes with a later page
    let at = body.firstElementChild;
    while (at && at.dataset.id > rec.id) at = at.nextElementSibling;
    body.insertBefore(tr, at);
  }
  list.rows.set(rec.id, { rec, tr });
}

function stateQuery() {
  return list.filter.size ? `&state=${enc([...list.filter].join(','))}` : '';
}

async function loadPage(first) {
  if (list.loading && !first) return;
  const gen = first ? ++list.gen : list.gen;
  if (first) {
    list.queue = [];
    list.next = null;
  }
  list.loading = true;
  updateCount();
  try {
    const cursor = !first && list.next ? `&cursor=${enc(list.next)}` : '';
    const page = await api(`/api/tasks?limit=${PAGE}${stateQuery()}${cursor}`);
    if (gen !== list.gen) return;
    if (first) {
      $('rows').replaceChildren();
      list.rows.clear();
    }
    for (const rec of page.tasks) upsert(rec, true);
    list.next = page.next || null;
    showError($('list-error'), null);
    if (first) {
      const q = list.queue;
      list.queue = null;
      for (const rec of q) upsert(rec, false);
    }
    rovingFocus();
    if (!list.painted) {
      list.painted = true;
      markPaint('taskfs:list');
    }
  } catch (e) {
    if (gen === list.gen) showError($('list-error'), e);
    if (first) list.queue = null;
  } finally {
    if (gen === list.gen) list.loading = false;
    updateCount();
  }
}

// A mark once the browser has painted what was just put in the page (the
// frame after the next), for bench/web_paint.mjs.
function markPaint(name) {
  requestAnimationFrame(() => setTimeout(() => performance.mark(name), 0));
}

// One row is in the tab order (the last one focused, else the first); the
// arrow keys move between rows.
function rovingFocus() {
  const body = $('rows');
  let cur = body.querySelector('tr[tabindex="0"]');
  const want = (list.focusId && list.rows.get(list.focusId)?.tr) || cur || body.firstElementChild;
  if (cur && cur !== want) cur.tabIndex = -1;
  if (want) want.tabIndex = 0;
}

function focusRow(tr) {
  if (!tr) return;
  const cur = $('rows').querySelector('tr[tabindex="0"]');
  if (cur && cur !== tr) cur.tabIndex = -1;
  tr.tabIndex = 0;
  list.focusId = tr.dataset.id;
  tr.focus();
}

function onRowsKey(e) {
  const tr = e.target.closest('tr');
  if (!tr) return;
  const go = {
    Enter: () => openRow(tr),
    ArrowDown: () => focusRow(tr.nextElementSibling),
    ArrowUp: () => focusRow(tr.previousElementSibling),
    Home: () => focusRow($('rows').firstElementChild),
    End: () => focusRow($('rows').lastElementChild),
  }[e.key];
  if (!go) return;
  e.preventDefault();
  go();
  if (e.key === 'ArrowDown' && !tr.nextElementSibling?.nextElementSibling && list.next) loadPage(false);
}

function openRow(tr) {
  list.focusId = tr.dataset.id;
  location.hash = `#/task/${enc(tr.dataset.id)}`;
}

function buildFilter() {
  const box = $('filter');
  for (const s of STATES) {
    const label = el('label');
    const cb = el('input');
    cb.type = 'checkbox';
    cb.value = s;
    cb.addEventListener('change', () => {
      if (cb.checked) list.filter.add(s);
      else list.filter.delete(s);
      loadPage(true);
    });
    label.append(cb, ` ${s}`);
    box.appendChild(label);
  }
}

// Ages and the durations of running tasks move on.
function tick() {
  const now = Date.now();
  if (!$('list-view').hidden) for (const { rec, tr } of list.rows.values()) fillRow(tr, rec, now);
  if (view.rec && !ENDED.has(view.rec.state)) renderFields(view.rec);
}

// ---- the events ---------------------------------------------------------------

let events = null;
let eventsReady = 0;

function setLive(on, text) {
  const l = $('live');
  l.textContent = text;
  l.className = `live ${on ? 'on' : 'off'}`;
}

function onTaskEvent(rec) {
  if (list.queue) list.queue.push(rec);
  else upsert(rec, false);
  updateCount();
  if (view.id === rec.id) setRecord(rec);
}

// A running task's counters moved (at most twice a second per task): the
// record as known, with the event's counters put in. New important lines
// are read with the record when its page is open (the event names only
// the newest few; the panel shows the first and the last K).
function withProgress(rec, p) {
  if (rec.state !== p.state || (rec.transcript && rec.transcript.lines > p.transcript.lines)) return null;
  return {
    ...rec,
    transcript: { ...rec.transcript, ...p.transcript },
    usage: { ...rec.usage, ...p.usage },
    important: { ...rec.important, total: p.important.total },
  };
}

function onProgressEvent(p) {
  const have = list.rows.get(p.id);
  const row = have && withProgress(have.rec, p);
  if (row) {
    have.rec = row;
    fillRow(have.tr, row, Date.now());
  }
  if (view.id !== p.id || !view.rec) return;
  const before = view.rec.important ? view.rec.important.total : 0;
  const rec = withProgress(view.rec, p);
  if (!rec) return;
  setRecord(rec);
  if (p.important.total !== before) refreshRecord();
}

function onGoneEvent(id) {
  const have = list.rows.get(id);
  if (have) {
    have.tr.remove();
    list.rows.delete(id);
    updateCount();
  }
  if (view.id === id) showError($('t-error'), new Error('This task was removed from the store.'));
}

// The events of the whole store. Each `ready` after the first follows a
// reconnection, which may have missed events: the list is read again then.
function connectEvents() {
  const stream = openEvents('/api/events', {
    ready: () => {
      setLive(true, 'live');
      showError($('list-error'), null);
      if (eventsReady++) {
        loadPage(true);
        if (view.id) refreshRecord();
      }
    },
    task: (d) => onTaskEvent(JSON.parse(d)),
    progress: (d) => onProgressEvent(JSON.parse(d)),
    gone: (d) => onGoneEvent(JSON.parse(d).id),
  }, (err) => {
    if (events !== stream) return;
    const denied = err && err.status === 401;
    setLive(false, denied ? 'not logged in' : 'reconnecting');
    if (denied) showError($('list-error'), err);
    events = null;
    setTimeout(connectEvents, denied ? 10000 : 2000);
  });
  events = stream;
}

// ---- a task -------------------------------------------------------------------

const view = { id: null, rec: null, tr: null, pendingLine: null };

const FIELDS = [
  ['command', (r) => shellQuote(r.command)],
  ['cwd', (r) => r.cwd],
  ['reason', (r) => r.reason],
  ['state', (r) => r.state],
  ['exit', (r) => exitText(r)],
  ['key', (r) => r.key],
  ['queue', (r) => r.queue],
  ['created', (r) => r.created],
  ['started', (r) => r.started],
  ['ended', (r) => r.ended],
  ['duration', (r) => durationText(r, Date.now())],
  ['restarts', (r) => (r.restart ? `${r.restart.count} (policy ${r.restart.policy})` : '')],
  ['supervisor', (r) => (r.supervisor ? `pid ${r.supervisor.pid} on ${r.supervisor.host}` : '')],
  ['worker', (r) => (r.worker && r.worker.pid ? `pid ${r.worker.pid}` : '')],
  ['transcript', (r) => (r.transcript ? `${r.transcript.lines} lines, ${bytesText(r.transcript.bytes)} (stderr ${r.transcript.stderr})` : '')],
  ['cpu', (r) => (r.usage ? `${r.usage.cpuUserMs} ms user, ${r.usage.cpuSystemMs} ms system` : '')],
  ['memory', (r) => (r.usage && r.usage.maxRssKb ? `${bytesText(r.usage.maxRssKb * 1024)} peak RSS` : '')],
  ['cancel', (r) => (r.cancel ? `requested${r.cancel.by ? ` by ${r.cancel.by}` : ''}${r.cancel.at ? ` at ${r.cancel.at}` : ''}` : '')],
];

// Fields that take a whole row of the record's grid.
const WIDE = { reason: 'wide', command: 'wide mono', cwd: 'wide mono', cancel: 'wide' };

function renderFields(rec) {
  const dl = el('dl');
  dl.id = 't-fields';
  for (const [name, get] of FIELDS) {
    let v;
    try {
      v = get(rec);
    } catch {
      v = '';
    }
    if (v == null || v === '') continue;
    dl.append(el('dt', null, name), el('dd', WIDE[name] || null, String(v)));
  }
  $('t-fields').replaceWith(dl);
}

function importantLines(rec) {
  const imp = rec.important || {};
  const out = [];
  const seen = new Set();
  const add = (x, lead) => {
    if (!x || seen.has(x.line)) return;
    seen.add(x.line);
    out.push({ ...x, lead });
  };
  add(imp.lead, true);
  for (const x of imp.first || []) add(x, false);
  for (const x of imp.last || []) add(x, false);
  return out;
}

function renderImportant(rec) {
  const ol = $('t-important');
  ol.replaceChildren();
  const lines = importantLines(rec);
  for (const x of lines) {
    const li = el('li', x.lead ? 'lead' : null);
    const a = el('a', null, `line ${x.line}`);
    a.href = `#/task/${enc(rec.id)}/L${x.line}`;
    const text = el('span', 'text');
    renderAnsi(text, x.text || '', ANSI_PLAIN);
    li.append(a, el('span', 'kind', x.lead ? `${x.kind} (lead)` : x.kind), text);
    ol.appendChild(li);
  }
  $('t-noimp').hidden = lines.length > 0;
}

// The record shown; never one that has come less far than it (the answer
// to a cancel, read before the stop, may arrive after the event of the end).
function setRecord(rec) {
  const before = view.rec;
  if (before && before.id === rec.id && rank(rec) < rank(before)) return;
  view.rec = rec;
  $('t-title').textContent = rec.id;
  $('t-state').replaceWith(Object.assign(stateBadge(rec.state), { id: 't-state' }));
  $('cancel').hidden = ENDED.has(rec.state);
  renderFields(rec);
  $('t-json').textContent = JSON.stringify(rec, null, 2);
  if (!before || JSON.stringify(before.important) !== JSON.stringify(rec.important)) renderImportant(rec);
  if (view.tr) view.tr.recordChanged(rec);
}

// A record read before the progress event just shown counts fewer lines:
// the store's record only moves on, so a second read has caught up.
const behind = (a, b) => a.state === b.state && a.transcript && b.transcript && a.transcript.lines < b.transcript.lines;

async function refreshRecord() {
  const id = view.id;
  try {
    let rec;
    for (let i = 0; i < 3; i++) {
      rec = await api(`/api/tasks/${enc(id)}`);
      if (view.id !== id || !view.rec || !behind(rec, view.rec)) break;
    }
    if (view.id === id) setRecord(rec);
  } catch (e) {
    if (view.id === id) showError($('t-error'), e);
  }
}

async function openTask(id, line) {
  if (view.id === id) {
    if (line && view.tr) view.tr.jump(line);
    return;
  }
  closeTask();
  view.id = id;
  view.pendingLine = line;
  $('t-title').textContent = id;
  $('t-raw').dataset.id = id;
  $('t-important').replaceChildren();
  $('t-json').textContent = '';
  showError($('t-error'), null);
  $('transcript').replaceChildren();
  let rec;
  try {
    rec = await api(`/api/tasks/${enc(id)}`);
  } catch (e) {
    if (view.id === id) showError($('t-error'), e);
    return;
  }
  if (view.id !== id) return;
  setRecord(rec);
  view.tr = new Transcript(id, $('transcript'), rec);
  await view.tr.openTail();
  if (view.id === id && view.pendingLine) view.tr.jump(view.pendingLine);
}

function closeTask() {
  if (view.tr) view.tr.close();
  view.tr = null;
  view.id = null;
  view.rec = null;
}

// ---- the transcript -----------------------------------------------------------

function concatBytes(a, b) {
  if (!b || !b.length) return a;
  if (!a.length) return b;
  const c = new Uint8Array(a.length + b.length);
  c.set(a);
  c.set(b, a.length);
  return c;
}

// Whole lines of bytes (each ends in \n, at base in the file) as texts and
// the byte offset just after each.
function splitLines(bytes, base) {
  const texts = new TextDecoder().decode(bytes).split('\n');
  texts.pop();
  const ends = [];
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) ends.push(base + i + 1);
  return { texts, ends };
}

// One task's transcript in a scrolling box. Bytes [lo, hi) of the file are
// known: headCarry holds the bytes from lo up to the first line shown (the
// end of a line that starts before lo), the lines shown end at hi. The tail
// comes first (Range: bytes=-CHUNK); scrolling to the top reads the CHUNK
// before lo (each split on line boundaries, so no character is cut); the
// follow stream then brings the lines after hi as the task writes them.
// Lines are numbered once the number of one is known: from the start of the
// file, from the follow stream's first line, or from the record's count
// when the task has ended. A jump to an important line outside the window
// reads the file from its start ("head" mode, forward by Ranges, decoded by
// a TextDecoder in stream mode) up to the line, and follows again once the
// reading reaches the end.
class Transcript {
  constructor(id, box, rec) {
    this.id = id;
    this.box = box;
    this.rec = rec;
    this.closed = false;
    this.onScroll = () => this.scrolled();
    box.addEventListener('scroll', this.onScroll, { passive: true });
    this.reset();
  }

  reset() {
    this.stopFollow();
    this.box.replaceChildren();
    this.lo = 0;
    this.hi = 0;
    this.headCarry = null;
    this.first = null; // number of the first line shown
    this.ends = []; // byte offset after each line shown
    this.size = 0;
    this.stick = true;
    this.busy = false;
    this.ansi = ANSI_PLAIN;
    this.mode = 'tail';
    this.gen = (this.gen || 0) + 1;
    $('t-tail').hidden = true;
    $('t-bottom').hidden = true;
  }

  close() {
    this.closed = true;
    this.stopFollow();
    this.box.removeEventListener('scroll', this.onScroll);
  }

  get count() {
    return this.ends.length;
  }

  info() {
    const lines = this.first != null ? `lines ${this.first}-${this.first + this.count - 1}` : `${this.count} lines`;
    const part = this.lo > 0 ? ` of ${bytesText(this.size)} (scroll up for earlier lines)` : '';
    $('t-tinfo').textContent = this.count ? `${lines}${part}${this.es ? ', following' : ''}` : this.es ? 'waiting for output' : '';
  }

  async range(spec) {
    const res = await fetch(`/api/tasks/${enc(this.id)}/transcript`, { credentials: 'omit', headers: { Range: `bytes=${spec}`, ...authHeaders() } });
    const sizeHdr = Number(res.headers.get('X-Taskfs-Size'));
    if (res.status === 416) {
      const size = Number((res.headers.get('Content-Range') || '').split('/')[1]);
      const s = Number.isFinite(size) ? size : sizeHdr;
      return { bytes: new Uint8Array(0), start: s, end: s, size: s };
    }
    if (!res.ok) throw new ApiError(res.status, errorText(res.status, await readBody(res)));
    const bytes = new Uint8Array(await res.arrayBuffer());
    let start = 0;
    let size = sizeHdr;
    const m = /bytes (\d+)-(\d+)\/(\d+|\*)/.exec(res.headers.get('Content-Range') || '');
    if (res.status === 206 && m) {
      start = Number(m[1]);
      if (m[3] !== '*') size = Number(m[3]);
    }
    if (!Number.isFinite(size)) size = start + bytes.length;
    return { bytes, start, end: start + bytes.length, size };
  }

  lineEl(text, st) {
    const d = el('div', 'ln');
    return [d, renderAnsi(d, text, st)];
  }

  number(from) {
    if (this.first == null) return;
    const kids = this.box.children;
    for (let i = from; i < kids.length; i++) kids[i].dataset.n = this.first + i;
  }

  setFirst(n) {
    if (this.first != null || !(n >= 1)) return;
    this.first = n;
    this.number(0);
  }

  // Lines after the last one shown.
  append(texts, ends) {
    if (!texts.length) return;
    const frag = document.createDocumentFragment();
    const base = this.count;
    let st = this.ansi;
    for (const t of texts) {
      let d;
      [d, st] = this.lineEl(t, st);
      if (this.first != null) d.dataset.n = this.first + base + frag.childNodes.length;
      frag.appendChild(d);
    }
    this.ansi = st;
    this.box.appendChild(frag);
    this.ends.push(...ends);
    this.hi = ends[ends.length - 1];
    this.trim();
    if (this.stick) this.box.scrollTop = this.box.scrollHeight;
    this.info();
  }

  // Lines before the first one shown, keeping what the user sees in place.
  prepend(texts, ends) {
    const frag = document.createDocumentFragment();
    let st = ANSI_PLAIN;
    for (const t of texts) {
      let d;
      [d, st] = this.lineEl(t, st);
      frag.appendChild(d);
    }
    const h = this.box.scrollHeight;
    const top = this.box.scrollTop;
    this.box.insertBefore(frag, this.box.firstChild);
    this.ends.unshift(...ends);
    if (this.first != null) {
      this.first -= texts.length;
      this.number(0);
    } else if (this.lo === 0) this.setFirst(1);
    this.box.scrollTop = top + (this.box.scrollHeight - h);
    this.info();
  }

  // While following a fast writer, the oldest lines leave the page (they
  // come back by scrolling up).
  trim() {
    const over = this.count - LINES_MAX;
    if (over <= 0 || !this.stick) return;
    for (let i = 0; i < over; i++) this.box.firstChild.remove();
    this.lo = this.ends[over - 1];
    this.headCarry = null;
    this.ends.splice(0, over);
    if (this.first != null) this.first += over;
  }

  async openTail() {
    const gen = this.gen;
    const bytes = this.rec.transcript ? this.rec.transcript.bytes : 0;
    try {
      if (bytes > 0) {
        const r = await this.range(`-${TAIL}`);
        if (gen !== this.gen || this.closed) return;
        this.size = r.size;
        let b = r.bytes;
        const lastNL = b.lastIndexOf(10);
        b = b.subarray(0, lastNL + 1); // the partial last line comes with the follow stream
        this.lo = r.start;
        this.hi = r.start + b.length;
        if (r.start > 0) {
          const nl = b.indexOf(10);
          this.headCarry = b.slice(0, nl + 1);
          b = b.subarray(nl + 1);
        } else this.first = 1;
        const { texts, ends } = splitLines(b, this.hi - b.length);
        this.append(texts, ends);
        this.hi = r.start + lastNL + 1;
        this.numberFromRecord(this.rec);
      } else this.first = 1;
      this.box.scrollTop = this.box.scrollHeight;
      markPaint('taskfs:transcript');
      this.follow();
    } catch (e) {
      showError($('t-error'), e);
    }
  }

  async pageBack() {
    if (this.lo <= 0 || this.busy || this.closed) return;
    const gen = this.gen;
    this.busy = true;
    try {
      const a = Math.max(0, this.lo - CHUNK);
      const r = await this.range(`${a}-${this.lo - 1}`);
      if (gen !== this.gen || this.closed) return;
      let b = concatBytes(r.bytes, this.headCarry);
      let texts = [];
      let ends = [];
      if (a > 0) {
        const nl = b.indexOf(10);
        if (nl < 0) {
          this.headCarry = b; // one very long line: read on back
          this.lo = a;
          return;
        }
        this.headCarry = b.slice(0, nl + 1);
        b = b.subarray(nl + 1);
        ({ texts, ends } = splitLines(b, a + nl + 1));
      } else {
        this.headCarry = null;
        ({ texts, ends } = splitLines(b, 0));
      }
      this.lo = a;
      this.prepend(texts, ends);
    } catch (e) {
      showError($('t-error'), e);
    } finally {
      if (gen === this.gen) this.busy = false;
    }
  }

  // Head mode: the next CHUNK after what is shown; at the end of the file,
  // the follow stream takes over.
  async pageForward() {
    if (this.mode !== 'head' || this.busy || this.closed) return false;
    if (this.fwd >= this.size) {
      this.toFollow();
      return false;
    }
    const gen = this.gen;
    this.busy = true;
    try {
      const r = await this.range(`${this.fwd}-${this.fwd + CHUNK - 1}`);
      if (gen !== this.gen || this.closed) return false;
      this.size = r.size;
      const parts = (this.textCarry + this.decoder.decode(r.bytes, { stream: true })).split('\n');
      this.textCarry = parts.pop();
      const ends = [];
      for (let i = r.bytes.indexOf(10); i >= 0; i = r.bytes.indexOf(10, i + 1)) ends.push(r.start + i + 1);
      this.fwd = r.end;
      this.append(parts, ends);
      if (!r.bytes.length || r.end >= r.size) this.toFollow();
      return true;
    } catch (e) {
      showError($('t-error'), e);
      return false;
    } finally {
      if (gen === this.gen) this.busy = false;
    }
  }

  toFollow() {
    if (this.mode !== 'head') return;
    this.mode = 'tail';
    this.textCarry = '';
    $('t-tail').hidden = true;
    this.follow();
  }

  follow() {
    if (this.closed || this.es) return;
    const gen = this.gen;
    let pending = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      if (gen !== this.gen || !pending.length) return;
      const batch = pending;
      pending = [];
      if (this.first == null) this.setFirst(batch[0].n - this.count);
      this.append(batch.map((x) => x.text), batch.map((x) => x.end));
    };
    const es = openEvents(`/api/tasks/${enc(this.id)}/transcript?follow=1&offset=${this.hi}`, {
      line: (data, id) => {
        const d = JSON.parse(data);
        pending.push({ n: d.n, text: d.text, end: Number(id) });
        if (!frame) frame = requestAnimationFrame(flush);
      },
      end: (data) => {
        flush();
        this.stopFollow();
        const rec = JSON.parse(data);
        this.numberFromRecord(rec);
        if (view.id === rec.id) setRecord(rec);
        this.info();
      },
    }, () => {
      // A dropped stream is opened again from the last line shown (never by
      // its first offset, which could repeat lines).
      if (this.es !== es) return;
      flush();
      this.stopFollow();
      setTimeout(() => {
        if (gen === this.gen && !this.closed && this.mode === 'tail') this.follow();
      }, 2000);
    });
    this.es = es;
    this.info();
  }

  stopFollow() {
    if (this.es) this.es.close();
    this.es = null;
  }

  // An ended task whose record counts exactly the bytes shown numbers the
  // lines from its end.
  numberFromRecord(rec) {
    const t = rec.transcript;
    if (this.first == null && ENDED.has(rec.state) && t && this.hi === t.bytes) this.setFirst(t.lines - this.count + 1);
  }

  recordChanged(rec) {
    this.rec = rec;
  }

  scrolled() {
    const b = this.box;
    this.stick = b.scrollTop + b.clientHeight >= b.scrollHeight - 8;
    $('t-bottom').hidden = this.stick || this.mode === 'head';
    if (b.scrollTop < 400) this.pageBack();
    if (this.mode === 'head' && b.scrollHeight - b.scrollTop - b.clientHeight < 400) this.pageForward();
  }

  toBottom() {
    this.stick = true;
    this.box.scrollTop = this.box.scrollHeight;
    $('t-bottom').hidden = true;
  }

  shows(n) {
    return this.first != null && n >= this.first && n < this.first + this.count;
  }

  highlight(n) {
    const prev = this.box.querySelector('.ln.hit');
    if (prev) prev.classList.remove('hit');
    const d = this.box.children[n - this.first];
    if (!d) return;
    d.classList.add('hit');
    this.stick = false;
    d.scrollIntoView({ block: 'center' });
    $('t-bottom').hidden = this.mode === 'head';
  }

  // Shows line n: in the window, a few pages back, or read from the start.
  async jump(n) {
    const gen = this.gen;
    for (let i = 0; i < 8 && this.first != null && n < this.first && this.lo > 0; i++) {
      await this.pageBack();
      if (gen !== this.gen) return;
    }
    if (!this.shows(n)) {
      this.reset();
      this.mode = 'head';
      this.first = 1;
      this.fwd = 0;
      this.size = Math.max(this.rec.transcript ? this.rec.transcript.bytes : 0, 1);
      this.decoder = new TextDecoder();
      this.textCarry = '';
      this.stick = false;
      $('t-tail').hidden = false;
      const g = this.gen;
      while (!this.shows(n) && this.mode === 'head' && this.fwd < JUMP_MAX && g === this.gen) if (!(await this.pageForward())) break;
      if (g !== this.gen) return;
    }
    if (this.shows(n)) this.highlight(n);
    else showError($('t-error'), new Error(`Line ${n} is not in the first ${bytesText(JUMP_MAX)} of the transcript here; download it to see it.`));
  }

  backToTail() {
    this.reset();
    this.openTail();
  }
}

// ---- cancel -------------------------------------------------------------------

function askCancel() {
  if (!view.rec) return;
  $('c-id').textContent = view.rec.id;
  $('c-cmd').textContent = shellQuote(view.rec.command);
  $('confirm').showModal();
}

async function doCancel() {
  const id = view.id;
  $('confirm').close();
  $('cancel').disabled = true;
  try {
    const rec = await api(`/api/tasks/${enc(id)}/cancel`, { method: 'POST' });
    if (view.id === id && rec && rec.id) setRecord(rec);
    showError($('t-error'), null);
  } catch (e) {
    if (view.id === id) showError($('t-error'), e);
    if (e.body && e.body.state && view.rec) refreshRecord();
  } finally {
    $('cancel').disabled = false;
  }
}

// ---- routes -------------------------------------------------------------------

function route() {
  const m = /^#\/task\/([^/]+)(?:\/L(\d+))?$/.exec(location.hash);
  if (m) {
    $('list-view').hidden = true;
    $('task-view').hidden = false;
    openTask(decodeURIComponent(m[1]), m[2] ? Number(m[2]) : null);
    return;
  }
  closeTask();
  $('task-view').hidden = true;
  $('list-view').hidden = false;
  tick();
  const tr = list.focusId && list.rows.get(list.focusId)?.tr;
  if (tr) focusRow(tr);
}

function onKey(e) {
  if (e.key !== 'Escape' || e.defaultPrevented || $('confirm').open) return;
  if (!$('task-view').hidden) {
    e.preventDefault();
    location.hash = '#/';
  }
}

// The raw transcript, saved as a file: fetched with the token (a plain
// link could not send it), then handed to the browser as a blob.
async function download(e) {
  e.preventDefault();
  const id = $('t-raw').dataset.id;
  try {
    const res = await fetch(`/api/tasks/${enc(id)}/transcript`, { credentials: 'omit', headers: authHeaders() });
    if (!res.ok) throw new ApiError(res.status, errorText(res.status, await readBody(res)));
    const url = URL.createObjectURL(await res.blob());
    const a = el('a');
    a.href = url;
    a.download = `${id}.transcript`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (err) {
    if (view.id === id) showError($('t-error'), err);
  }
}

function start() {
  takeToken();
  buildFilter();
  $('rows').addEventListener('keydown', onRowsKey);
  $('rows').addEventListener('click', (e) => {
    const tr = e.target.closest('tr');
    if (tr) openRow(tr);
  });
  $('more').addEventListener('click', () => loadPage(false));
  new IntersectionObserver((es) => {
    if (es.some((x) => x.isIntersecting) && list.next && !$('list-view').hidden) loadPage(false);
  }).observe($('more'));
  $('cancel').addEventListener('click', askCancel);
  $('c-no').addEventListener('click', () => $('confirm').close());
  $('c-yes').addEventListener('click', doCancel);
  $('t-bottom').addEventListener('click', () => view.tr && view.tr.toBottom());
  $('t-tail').addEventListener('click', () => view.tr && view.tr.backToTail());
  $('t-raw').addEventListener('click', download);
  document.addEventListener('keydown', onKey);
  // A login URL opened in this tab again changes only the fragment.
  window.addEventListener('hashchange', () => (takeToken() ? location.reload() : route()));
  setInterval(tick, 1000);
  connectEvents();
  loadPage(true);
  route();
}

start();
