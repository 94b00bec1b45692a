// The approval inbox's page. Everything a tool or a model wrote (arguments,
// descriptions, payloads, reasons, error messages) is untrusted: it reaches
// the page only through textContent and attribute setters, never as HTML.
'use strict';

const BASE = document.body.dataset.base;
const TOKEN_KEY = 'tool-inbox-token';
const items = new Map();
let streaming = null;

// --- elements --------------------------------------------------------------

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

let nextId = 0;
function uniqueId(prefix) {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

// --- the token ---------------------------------------------------------------

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function showLogin(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  if (streaming) streaming.abort();
  streaming = null;
  document.getElementById('inbox').hidden = true;
  document.getElementById('sign-out').hidden = true;
  const login = document.getElementById('login');
  login.hidden = false;
  document.getElementById('login-error').textContent = message || '';
  document.getElementById('token').focus();
}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(BASE + path, {
    method: options.method || 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
    cache: 'no-store',
    credentials: 'omit',
  });
  if (response.status === 401) {
    showLogin('The token was refused: enter a valid one.');
    throw new Error('unauthenticated');
  }
  return response;
}

// --- the list's state ---------------------------------------------------------

// The items loaded, in the list's order; `next` is where the list goes on
// (`null`: all loaded).
const list = { next: null, loading: false, principal: null };

// What the list shows: a search over tool, requester and call id, a kind,
// an order.
function filters() {
  return {
    q: document.getElementById('q').value.trim(),
    kind: document.getElementById('kind').value,
    sort: document.getElementById('sort').value,
  };
}

// Whether the list is not the event stream's first page (by call id, all).
function filtered() {
  const { q, kind, sort } = filters();
  return q !== '' || kind !== '' || sort !== 'id';
}

// Whether `item` belongs in the list as filtered (as the server filters).
function matches(item) {
  const { q, kind } = filters();
  if (kind && item.kind !== kind) return false;
  if (!q) return true;
  const text = q.toLowerCase();
  return [item.tool.id, item.requester, item.callId].some((field) => typeof field === 'string' && field.toLowerCase().includes(text));
}

// Where `item` stands in the list's order, as the server sorts: its time
// (none: after every other), then its call id.
const NO_TIME = Number.MAX_SAFE_INTEGER;
function position(item) {
  const { sort } = filters();
  const time = sort === 'age' ? item.askedAtMs : sort === 'expiry' ? item.expiresAtMs : 0;
  return [typeof time === 'number' ? time : NO_TIME, item.callId];
}

function before(a, b) {
  const [x, y] = [position(a), position(b)];
  return x[0] !== y[0] ? x[0] < y[0] : x[1] < y[1];
}

// Whether a new item falls among the loaded ones (past the last loaded,
// the list reaches it when it loads on).
function withinLoaded(item) {
  if (list.next === null) return true;
  const rows = document.getElementById('items').children;
  const last = rows.length ? items.get(rows[rows.length - 1].dataset.callId) : null;
  return !last || before(item, last);
}

// --- the live stream ---------------------------------------------------------

function setStatus(text) {
  document.getElementById('status').textContent = text;
}

// A notice of what changed without the person's doing (another decided,
// an item expired or changed); the last few are kept.
function notify(text) {
  const notices = document.getElementById('notices');
  notices.prepend(el('li', { text: `${new Date().toLocaleTimeString()}: ${text}` }));
  while (notices.children.length > 5) notices.lastElementChild.remove();
}

// Reads GET api/events with fetch (EventSource cannot send the token).
async function follow() {
  const controller = new AbortController();
  streaming = controller;
  while (streaming === controller) {
    try {
      const response = await api('api/events', { signal: controller.signal });
      if (!response.ok) throw new Error(`the event stream answered ${response.status}`);
      const stream = { ready: false, firstPage: [] };
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          // One event that cannot be read or shown never stops the others.
          try {
            handleEvent(stream, buffer.slice(0, end));
          } catch (error) {
            console.error('an inbox event could not be shown', error);
          }
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) {
      if (streaming !== controller) return;
      setStatus('Reconnecting…');
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function handleEvent(stream, block) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return;
  const payload = JSON.parse(data.join('\n'));
  if (!stream.ready) {
    // The first page, then `ready`: the list as it is now.
    if (event === 'item') stream.firstPage.push(payload);
    if (event === 'ready') {
      stream.ready = true;
      list.principal = payload.principal;
      document.getElementById('who').textContent = `Signed in as ${payload.principal}`;
      setStatus('Live');
      if (filtered()) loadPage(true);
      else showPage(stream.firstPage, payload.next, true);
    }
    return;
  }
  if (event === 'item') {
    if (!items.has(payload.callId) && matches(payload) && withinLoaded(payload)) {
      items.set(payload.callId, payload);
      render();
    }
  } else if (event === 'changed') {
    const before = items.get(payload.callId);
    if (before) changed(before, payload);
  } else if (event === 'dismissed') {
    if (removeItem(payload.callId)) notify(`${payload.callId} is dismissed`);
  } else if (event === 'settled') {
    const item = items.get(payload.callId);
    if (removeItem(payload.callId) && item) notify(settledText(item, payload));
  }
}

// What became of an item the person did not decide here.
function settledText(item, settled) {
  const name = `${item.tool.title || item.tool.id} (${item.callId})`;
  if (settled.action === 'expire') return `${name} expired`;
  const how = { approve: 'approved', decline: 'declined', edit: 'approved with an edit', respond: 'answered', resume: 'resumed' }[settled.action];
  if (how && settled.by) return `${name} was ${how} by ${settled.by}`;
  return `${name} no longer waits`;
}

// An item that changed. The same version (an approval counted) updates
// its counts in place, keeping what the person typed; a new version (its
// values and digest) replaces the one shown, with a notice.
function changed(before, after) {
  items.set(after.callId, after);
  const row = rowOf(after.callId);
  if (!row) return;
  if (before.digest === after.digest) {
    const count = after.approvals ? approvalsText(after.approvals) : '';
    for (const node of row.querySelectorAll('.count')) node.textContent = count;
    return;
  }
  const open = row.classList.contains('open');
  row.replaceWith(rowNode(after, open));
  notify(`${after.tool.title || after.tool.id} (${after.callId}) changed: review it again`);
  const fresh = rowOf(after.callId);
  if (fresh && open) fresh.querySelector('.item-error').textContent = 'This item changed since you opened it: review it again.';
}

// --- the list ------------------------------------------------------------------

// Replaces (`reset`) or extends the list with `page`.
function showPage(page, next, reset) {
  if (reset) {
    items.clear();
    selected.clear();
    document.getElementById('items').replaceChildren();
  }
  for (const item of page) items.set(item.callId, item);
  list.next = next;
  render();
  document.getElementById('more').hidden = next === null;
  if (reset) {
    // The first screen: the rows are in the document; marked once painted.
    requestAnimationFrame(() => setTimeout(() => {
      if (performance.getEntriesByName('inbox:first-screen').length === 0) performance.measure('inbox:first-screen');
    }, 0));
  }
}

// Loads the list's first page (`reset`) or its next one, as filtered.
async function loadPage(reset) {
  if (list.loading && !reset) return;
  list.loading = true;
  const { q, kind, sort } = filters();
  const params = new URLSearchParams({ limit: '50' });
  if (q) params.set('q', q);
  if (kind) params.set('kind', kind);
  if (sort !== 'id') params.set('sort', sort);
  if (!reset && list.next !== null) params.set('after', list.next);
  const asked = params.toString();
  list.asked = asked;
  try {
    const response = await api(`api/items?${asked}`);
    const answer = await response.json();
    if (list.asked !== asked) return;
    if (!response.ok) {
      setStatus((answer.error && answer.error.message) || `The list answered ${response.status}`);
      return;
    }
    showPage(answer.items || [], answer.next === undefined ? null : answer.next, reset);
  } catch (error) {
    if (error.message !== 'unauthenticated') setStatus(`Could not load the list: ${error.message}`);
  } finally {
    if (list.asked === asked) list.loading = false;
  }
}

function rowOf(callId) {
  return Array.from(document.getElementById('items').children).find((n) => n.dataset.callId === callId);
}

function removeItem(callId) {
  selected.delete(callId);
  if (!items.delete(callId)) return false;
  render();
  return true;
}

function render() {
  const listNode = document.getElementById('items');
  const shown = new Set();
  for (const node of Array.from(listNode.children)) {
    const callId = node.dataset.callId;
    if (items.has(callId)) shown.add(callId);
    else node.remove();
  }
  const missing = Array.from(items.values())
    .filter((item) => !shown.has(item.callId))
    .sort((a, b) => (before(a, b) ? -1 : 1));
  if (missing.length > 0) {
    // Inserted in order, walking the rows once.
    let cursor = listNode.firstElementChild;
    for (const item of missing) {
      while (cursor && before(items.get(cursor.dataset.callId), item)) cursor = cursor.nextElementSibling;
      listNode.insertBefore(rowNode(item, false), cursor);
    }
  }
  const empty = document.getElementById('empty');
  empty.hidden = items.size > 0;
  empty.textContent = filtered() ? 'No waiting item matches.' : 'Nothing waits for a decision.';
  renderBatch();
}

// --- rows, opened one at a time ----------------------------------------------

const selected = new Set();

// How long until `ms`, as a countdown.
function countdown(ms) {
  const left = Math.round((ms - Date.now()) / 1000);
  if (left <= 0) return 'expired';
  const h = Math.floor(left / 3600);
  const m = Math.floor((left % 3600) / 60);
  const sec = left % 60;
  const pad = (n) => String(n).padStart(2, '0');
  return h > 0 ? `expires in ${h}h ${pad(m)}m` : `expires in ${m}m ${pad(sec)}s`;
}

function tick() {
  for (const node of document.querySelectorAll('[data-expires-at]')) {
    const text = countdown(Number(node.dataset.expiresAt));
    if (node.textContent !== text) node.textContent = text;
    if (text === 'expired') node.closest('.item')?.classList.add('expired');
  }
}

// A row: a checkbox for a batch (where the person may approve or
// decline), and a summary that opens the item's details, built then.
function rowNode(item, open) {
  const detailId = uniqueId('detail');
  const node = el('li', { class: 'item', 'data-call-id': item.callId });
  const row = el('div', { class: 'row' });
  const may = new Set(item.actions || []);
  if (may.has('approve') || may.has('decline')) {
    const box = el('input', { type: 'checkbox', class: 'select', 'aria-label': `Select ${item.tool.title || item.tool.id} ${item.callId}` });
    box.checked = selected.has(item.callId);
    box.addEventListener('change', () => {
      if (box.checked) selected.add(item.callId);
      else selected.delete(item.callId);
      renderBatch();
    });
    row.append(box);
  }
  const summary = el('button', { type: 'button', class: 'summary', 'aria-expanded': 'false', 'aria-controls': detailId });
  summary.append(
    el('span', { class: 'kind', text: KIND_LABELS[item.kind] || item.kind }),
    el('span', { class: 'title', text: item.tool.title || item.tool.id }),
    el('span', { class: 'call', text: item.callId }),
  );
  if (item.requester) summary.append(el('span', { class: 'who', text: `by ${item.requester}` }));
  if (item.approvals) summary.append(el('span', { class: 'count', text: approvalsText(item.approvals) }));
  if (item.expiresAtMs) summary.append(el('span', { class: 'expires', 'data-expires-at': item.expiresAtMs, text: countdown(item.expiresAtMs) }));
  row.append(summary);
  const detail = el('div', { class: 'detail', id: detailId, hidden: true });
  node.append(row, detail);
  const toggle = () => {
    const opening = detail.hidden;
    if (opening && detail.childElementCount === 0) {
      performance.mark('inbox:open-start');
      detail.append(safeItemNode(items.get(item.callId) || item));
      // Measured once the details are painted.
      requestAnimationFrame(() => setTimeout(() => performance.measure('inbox:open', 'inbox:open-start'), 0));
    }
    detail.hidden = !opening;
    node.classList.toggle('open', opening);
    summary.setAttribute('aria-expanded', String(opening));
  };
  summary.addEventListener('click', toggle);
  if (open) toggle();
  return node;
}

// --- batches ---------------------------------------------------------------------

function renderBatch() {
  const bar = document.getElementById('batch');
  bar.hidden = selected.size === 0;
  document.getElementById('batch-count').textContent = `${selected.size} selected`;
}

// One decision on every selected item, each on its own digest; what the
// server refused stays, with why.
async function decideBatch(action) {
  const chosen = Array.from(selected).map((callId) => items.get(callId)).filter(Boolean);
  if (chosen.length === 0) return;
  const body = { action, items: chosen.map((item) => ({ callId: item.callId, digest: item.digest })) };
  const reason = document.getElementById('batch-reason').value.trim();
  if (action === 'decline' && reason) body.reason = reason;
  let answer;
  try {
    const response = await api('api/batch', { method: 'POST', body });
    answer = await response.json();
    if (!response.ok) {
      setStatus((answer.error && answer.error.message) || `The batch was refused (${response.status})`);
      return;
    }
  } catch (error) {
    if (error.message !== 'unauthenticated') setStatus(`Could not reach the inbox: ${error.message}`);
    return;
  }
  const refused = [];
  let done = 0;
  for (const result of answer.results || []) {
    if (result.error) {
      refused.push(`${result.callId} (${result.error.message})`);
    } else if (result.status === 'approval_required' && result.approvals) {
      const item = items.get(result.callId);
      if (item) changed(item, { ...item, approvals: result.approvals });
      selected.delete(result.callId);
      done += 1;
    } else {
      removeItem(result.callId);
      done += 1;
    }
  }
  document.getElementById('batch-reason').value = '';
  render();
  setStatus(`${action === 'approve' ? 'Approved' : 'Declined'} ${done} of ${chosen.length}${refused.length ? `; refused: ${refused.join('; ')}` : ''}`);
}

const KIND_LABELS = {
  approval: 'Waiting for approval',
  suspended: 'Waiting for an answer',
  output: 'Waiting for its result',
};

function json(value) {
  return JSON.stringify(value, null, 2);
}

function approvalsText(approvals) {
  const who = approvals.granted.length ? ` (${approvals.granted.join(', ')})` : '';
  return `${approvals.granted.length} of ${approvals.required}${who}`;
}

// An item, or, when its forms cannot be built, the same item with a JSON
// editor for each value it takes: one item never breaks the list.
function safeItemNode(item) {
  try {
    return itemNode(item);
  } catch (error) {
    console.error('an item could not be shown with its forms', error);
    return itemNode({ ...item, editSchema: null, editValues: null, resumeSchema: {}, outputSchema: {} });
  }
}

function itemNode(item) {
  const headingId = uniqueId('item');
  const node = el('section', { class: 'item-detail', 'aria-labelledby': headingId });
  node.append(
    el('p', { class: 'kind', text: KIND_LABELS[item.kind] || item.kind }),
    el('h2', { id: headingId, text: item.tool.title || item.tool.id }),
  );
  if (item.tool.description) node.append(el('p', { class: 'description', text: item.tool.description }));
  const facts = el('dl');
  const fact = (name, value, className) => {
    if (value !== undefined && value !== null) facts.append(el('dt', { text: name }), el('dd', { class: className, text: String(value) }));
  };
  fact('Tool', item.tool.id);
  fact('Call', item.callId);
  fact('Asked by', item.requester);
  if (item.askedAtMs) fact('Asked at', new Date(item.askedAtMs).toLocaleString());
  if (item.expiresAtMs) fact('Expires', new Date(item.expiresAtMs).toLocaleString());
  if (item.approvals) fact('Approvals', approvalsText(item.approvals), 'count');
  node.append(facts);
  if (Array.isArray(item.context) && item.context.length > 0) {
    node.append(el('h3', { text: 'Why: the conversation before the call' }), contextNode(item.context));
  }
  node.append(el('h3', { text: 'Arguments' }));
  node.append(shownValue('input', item.input === null ? '(hidden)' : json(item.input)));
  if (item.payload !== null && item.payload !== undefined) {
    node.append(el('h3', { text: 'The tool asks' }), shownValue('payload', json(item.payload)));
  }
  const alert = el('p', { class: 'error item-error', role: 'alert' });
  node.append(actionsFor(item, alert), alert, historyNode(item));
  return node;
}

// The last messages of the conversation a call was made in, each with who
// said it: text as text, tool calls and results as JSON.
function contextNode(messages) {
  const list = el('ol', { class: 'context' });
  for (const message of messages) {
    const entry = el('li', { class: `message message-${String(message && message.role)}` });
    const role = message && typeof message.role === 'string' ? message.role : 'message';
    if (role === 'tool_result') {
      entry.append(el('p', { class: 'role', text: `result of ${message.tool_name || 'a tool'}` }));
      entry.append(shownValue('message', json(message.model_output ?? message.result ?? null)));
    } else {
      entry.append(el('p', { class: 'role', text: role === 'assistant' ? 'the model' : role }));
      if (typeof message.text === 'string' && message.text !== '') entry.append(shownValue('message', message.text));
      const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
      for (const call of calls) entry.append(shownValue('message', `calls ${call.tool_name}: ${json(call.arguments)}`));
      if (typeof message.text !== 'string' && calls.length === 0) entry.append(shownValue('message', json(message)));
    }
    list.append(entry);
  }
  return list;
}

// Characters that show nothing, or reorder what follows: bidi controls,
// zero-width characters, the byte-order mark.
const HIDDEN = /[\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;
// A word mixing Latin letters with Greek or Cyrillic ones (a homoglyph).
const MIXED = /[A-Za-z]/;
const LOOKALIKE = /[\u0370-\u03FF\u0400-\u04FF]/;
// Longer values fold, with "Show all".
const FOLD_AT = 2000;

// A value as text, with every hidden character made visible (as
// `⟦U+202E⟧`) and a warning when it holds one or a word of mixed scripts;
// a long one folded.
function shownValue(kind, text) {
  const pre = el('pre', { class: kind });
  const fill = (shown) => {
    pre.replaceChildren();
    let last = 0;
    for (const match of shown.matchAll(HIDDEN)) {
      pre.append(shown.slice(last, match.index));
      const code = match[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
      pre.append(el('span', { class: 'hidden-char', title: 'a hidden character', text: `⟦U+${code}⟧` }));
      last = match.index + match[0].length;
    }
    pre.append(shown.slice(last));
  };
  const wrap = el('div', { class: 'value' });
  const hidden = text.search(HIDDEN) >= 0;
  const mixed = text.split(/[^\p{L}]+/u).some((word) => MIXED.test(word) && LOOKALIKE.test(word));
  if (hidden || mixed) {
    const what = [hidden && 'hidden characters (shown as ⟦U+…⟧)', mixed && 'a word mixing Latin with Greek or Cyrillic letters'].filter(Boolean).join(' and ');
    wrap.append(el('p', { class: 'warning', role: 'note', text: `⚠ This value holds ${what}: read it closely.` }));
  }
  if (text.length > FOLD_AT) {
    fill(`${text.slice(0, FOLD_AT)}…`);
    const more = el('button', { type: 'button', class: 'show-all', text: `Show all (${text.length} characters)` });
    more.addEventListener('click', () => {
      fill(text);
      more.remove();
    });
    wrap.append(pre, more);
  } else {
    fill(text);
    wrap.append(pre);
  }
  return wrap;
}

// The item's audit trail, read when opened.
function historyNode(item) {
  const details = el('details', { class: 'history' }, el('summary', { text: 'History' }));
  const list = el('ol', { class: 'audit' });
  details.append(list);
  details.addEventListener('toggle', async () => {
    if (!details.open) return;
    list.replaceChildren(el('li', { text: 'Loading…' }));
    try {
      const response = await api(`api/items/${encodeURIComponent(item.callId)}/audit`);
      const answer = await response.json();
      list.replaceChildren(...(answer.entries || []).map(auditLine));
    } catch (error) {
      list.replaceChildren(el('li', { text: `Could not read the history: ${error.message}` }));
    }
  });
  return details;
}

function auditLine(entry) {
  const when = new Date(entry.atMs).toISOString();
  const who = entry.principal ? ` by ${entry.principal}` : '';
  const why = entry.reason ? `: ${entry.reason}` : '';
  const line = el('li', { class: `audit-${entry.kind}`, text: `${when} ${entry.kind} ${entry.action}${who}${why}` });
  if (entry.detail !== undefined && entry.detail !== null) line.append(el('pre', { text: json(entry.detail) }));
  return line;
}

// Sends a decision; on success the item goes, on a refused value the form
// shows each problem next to its field.
async function decide(item, action, body, alert, form) {
  alert.textContent = '';
  if (form) form.clearErrors();
  let response;
  try {
    response = await api(`api/items/${encodeURIComponent(item.callId)}/${action}`, {
      method: 'POST',
      body: { ...body, digest: item.digest },
    });
  } catch (error) {
    alert.textContent = error.message === 'unauthenticated' ? '' : `Could not reach the inbox: ${error.message}`;
    return;
  }
  if (response.ok) {
    const answer = await response.json().catch(() => ({}));
    if (answer.status === 'approval_required' && answer.approvals) {
      // Counted; others must approve too: the item stays, with who did.
      const shown = items.get(item.callId);
      if (shown) changed(shown, { ...shown, approvals: answer.approvals });
      setStatus(`${item.tool.id} (${item.callId}): your approval is recorded, ${approvalsText(answer.approvals)}`);
      return;
    }
    removeItem(item.callId);
    setStatus(`${item.tool.id} (${item.callId}): ${action === 'dismiss' ? 'dismissed' : `${action} done`}`);
    return;
  }
  const answer = await response.json().catch(() => ({}));
  const error = answer.error || {};
  const located = form && error.modelError && error.modelError.validationErrors
    ? form.showErrors(error.modelError.validationErrors)
    : false;
  alert.textContent = located ? 'Some values were refused: see the fields.' : (error.message || `Refused (${response.status})`);
}

// The decisions the server says this person may take: no button for the
// others (a call's requester under separation of duties sees no approve).
function actionsFor(item, alert) {
  const actions = el('div', { class: 'actions' });
  const may = new Set(item.actions || []);
  if (may.has('approve')) {
    actions.append(el('button', {
      type: 'button', class: 'approve', text: 'Approve',
      onclick: () => decide(item, 'approve', {}, alert),
    }));
  }
  if (may.has('edit') && item.editSchema && item.editValues) {
    actions.append(editForm(item, alert));
  }
  if (may.has('resume')) {
    actions.append(valueForm(item, 'resume', 'data', item.resumeSchema, 'Resume', alert));
  }
  if (may.has('decline')) {
    const reasonId = uniqueId('reason');
    const decline = el('form', { class: 'decline-form', novalidate: true });
    decline.append(
      el('label', { for: reasonId, text: 'Reason (optional)' }),
      el('input', { id: reasonId, name: 'reason', type: 'text', maxlength: 2000 }),
      el('button', { type: 'submit', class: 'decline', text: 'Decline' }),
    );
    decline.addEventListener('submit', (event) => {
      event.preventDefault();
      const reason = decline.elements.reason.value.trim();
      decide(item, 'decline', reason ? { reason } : {}, alert);
    });
    actions.append(decline);
  }
  if (may.has('respond')) {
    actions.append(valueForm(item, 'respond', 'output', item.outputSchema, 'Respond instead', alert));
  }
  if (may.size === 0) {
    actions.append(el('p', { class: 'no-actions', text: 'You may read this item; you may not decide it.' }));
  }
  actions.append(el('button', {
    type: 'button', class: 'dismiss', text: 'Dismiss (hide for me)',
    onclick: () => decide(item, 'dismiss', {}, alert),
  }));
  return actions;
}

// An edit of the editable fields, filled with their raw values (never the
// display's, which may be masked or shortened). Only the fields the person
// changed are sent, after a before/after view of them to confirm.
function editForm(item, alert) {
  const form = el('form', { class: 'edit-form', novalidate: true });
  const before = item.editValues;
  const field = schemaField(item.editSchema, 'Edit and approve', [], true, before);
  const review = el('div', { class: 'edit-review', 'aria-live': 'polite' });
  const submit = el('button', { type: 'submit', class: 'edit', text: 'Edit and approve' });
  form.append(field.node, review, submit);
  form.clearErrors = field.clearErrors;
  form.showErrors = (tree) => field.showErrors(tree);
  let confirming = null;
  form.addEventListener('input', () => {
    confirming = null;
    review.replaceChildren();
    submit.textContent = 'Edit and approve';
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (confirming) {
      decide(item, 'edit', { edit: confirming }, alert, form);
      return;
    }
    let value;
    try {
      value = field.read() || {};
    } catch (error) {
      alert.textContent = error.message;
      return;
    }
    const changes = {};
    for (const [key, next] of Object.entries(value)) {
      if (JSON.stringify(next) !== JSON.stringify(before[key])) changes[key] = next;
    }
    if (Object.keys(changes).length === 0) {
      alert.textContent = 'Nothing changed: approve it as it is, or change a field.';
      return;
    }
    alert.textContent = '';
    confirming = changes;
    const rows = Object.entries(changes).map(([key, next]) => el('tr', {},
      el('th', { scope: 'row', text: key }),
      el('td', { class: 'before', text: JSON.stringify(before[key]) }),
      el('td', { class: 'after', text: JSON.stringify(next) })));
    review.replaceChildren(el('table', {},
      el('caption', { text: 'Your changes' }),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'field' }), el('th', { scope: 'col', text: 'before' }), el('th', { scope: 'col', text: 'after' }))),
      el('tbody', {}, ...rows)));
    submit.textContent = 'Confirm edit and approve';
  });
  return form;
}

// A form for the value a decision carries (resume data, an output), built
// from its JSON Schema.
function valueForm(item, action, key, schema, label, alert, initial) {
  const form = el('form', { class: `${action}-form`, novalidate: true });
  const field = schemaField(schema || {}, label, [], true, initial);
  form.append(field.node, el('button', { type: 'submit', class: action, text: label }));
  form.clearErrors = field.clearErrors;
  form.showErrors = (tree) => field.showErrors(tree);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    let value;
    try {
      value = field.read();
    } catch (error) {
      alert.textContent = error.message;
      return;
    }
    decide(item, action, { [key]: value === undefined ? null : value }, alert, form);
  });
  return form;
}

// --- forms from JSON Schema ------------------------------------------------------

// How deep the form follows `$ref`s: a recursive schema ends, past it, in a
// JSON editor.
const MAX_REF_DEPTH = 8;

// `schema` as the form reads it, with the root it is in: `true` (or none) is
// any value, `false` none; a `$ref` into the root (`#/$defs/...`) is
// followed, its sibling keywords kept. Returns the schema and the context
// its subschemas are read in.
function resolved(schema, ctx) {
  if (schema === true || schema === undefined || schema === null) return [{}, ctx];
  if (schema === false) return [{ description: 'No value is valid here.' }, ctx];
  if (typeof schema !== 'object' || Array.isArray(schema)) return [{}, ctx];
  if (typeof schema.$ref !== 'string') return [schema, ctx];
  const { $ref: reference, ...siblings } = schema;
  const target = ctx.depth < MAX_REF_DEPTH ? pointerIn(ctx.root, reference) : undefined;
  if (target === undefined) return [{ description: siblings.description }, ctx];
  const [inner, innerCtx] = resolved(target, { root: ctx.root, depth: ctx.depth + 1 });
  return [{ ...inner, ...siblings }, innerCtx];
}

// The value at the JSON pointer of a `#/...` reference in `root`.
function pointerIn(root, reference) {
  if (!reference.startsWith('#')) return undefined;
  const path = reference.slice(1);
  if (path === '') return root;
  if (!path.startsWith('/')) return undefined;
  let node = root;
  for (const raw of path.slice(1).split('/')) {
    let key;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch (error) {
      return undefined;
    }
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

// Sets `key` of `object` as an own property, whatever its name (`__proto__`
// included).
function setOwn(object, key, value) {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

// The schema's own type, with `null` making it optional.
function typeOf(schema, ctx) {
  let type = schema.type;
  let nullable = false;
  if (Array.isArray(type)) {
    nullable = type.includes('null');
    type = type.find((t) => t !== 'null');
  }
  const listed = schema.anyOf || schema.oneOf;
  // Each option with the context it resolved in: one that refers back to
  // this schema is read a `$ref` deeper each time, so it ends.
  const resolvedOptions = Array.isArray(listed) ? listed.map((option) => resolved(option, ctx)) : null;
  const options = resolvedOptions && resolvedOptions.map(([option]) => option);
  if (!type && options) {
    const consts = options.filter((o) => o && 'const' in o).map((o) => o.const);
    if (consts.length === options.length) return { type: 'enum', values: consts, nullable };
    const others = resolvedOptions.filter(([o]) => !(o && o.type === 'null'));
    if (others.length === 1) {
      const [only, onlyCtx] = others[0];
      const inner = typeOf(only, onlyCtx);
      return { ...inner, schema: only, nullable: true };
    }
    if (others.length > 1) {
      // Variants: a chooser, then the chosen one's field. The raw options
      // are kept, to be resolved in their own context.
      const variants = listed.filter((o) => !(resolved(o, ctx)[0].type === 'null'));
      return { type: 'choice', variants, nullable: others.length < options.length || nullable };
    }
  }
  if (Array.isArray(schema.enum)) return { type: 'enum', values: schema.enum.filter((v) => v !== null), nullable: nullable || schema.enum.includes(null) };
  if ('const' in schema) return { type: 'enum', values: [schema.const], nullable };
  if (!type && schema.properties) type = 'object';
  return { type, nullable };
}

// One field: its node, how to read its value (undefined: left empty), and
// where to show the errors of its path.
function schemaField(given, name, path, required, initial, context) {
  const [schema, ctx] = resolved(given, context || { root: given, depth: 0 });
  const typed = typeOf(schema, ctx);
  const effective = typed.schema || schema;
  const optional = !required || typed.nullable;
  const id = uniqueId('field');
  const errorNode = el('p', { class: 'error field-error', id: `${id}-error`, role: 'alert' });
  const hint = effective.description ? el('p', { class: 'hint', id: `${id}-hint`, text: effective.description }) : null;
  const describedBy = [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(' ');
  const title = `${effective.title || name}${optional ? ' (optional)' : ''}`;
  const ownErrors = {
    clear: () => { errorNode.textContent = ''; },
    show: (messages) => { errorNode.textContent = messages.join('; '); },
  };

  // An object of named properties is a fieldset; a map (no properties)
  // falls to the JSON editor below.
  const named = effective.properties && typeof effective.properties === 'object' && Object.keys(effective.properties).length > 0;
  if (typed.type === 'object' && named) return objectField(effective, title, path, errorNode, hint, ownErrors, initial, ctx);
  if (typed.type === 'array' && !Array.isArray(effective.items)) return arrayField(effective, title, path, errorNode, hint, ownErrors, ctx);
  if (typed.type === 'choice') return choiceField(typed.variants, { title, path, id, describedBy, errorNode, hint, ownErrors, optional }, initial, ctx);

  let input;
  let read;
  if (typed.type === 'enum') {
    input = el('select', { id, name: path.join('.') || name, 'aria-describedby': describedBy });
    if (optional) input.append(el('option', { value: '', text: '(not set)' }));
    typed.values.forEach((value, index) => input.append(el('option', { value: String(index), text: String(value) })));
    read = () => (input.value === '' ? undefined : typed.values[Number(input.value)]);
  } else if (typed.type === 'boolean' && !optional) {
    input = el('input', { id, type: 'checkbox', name: path.join('.') || name, 'aria-describedby': describedBy });
    read = () => input.checked;
  } else if (typed.type === 'boolean') {
    input = el('select', { id, name: path.join('.') || name, 'aria-describedby': describedBy });
    input.append(el('option', { value: '', text: '(not set)' }), el('option', { value: 'true', text: 'yes' }), el('option', { value: 'false', text: 'no' }));
    read = () => (input.value === '' ? undefined : input.value === 'true');
  } else if (typed.type === 'number' || typed.type === 'integer') {
    input = el('input', {
      id, type: 'number', name: path.join('.') || name, 'aria-describedby': describedBy,
      min: effective.minimum, max: effective.maximum,
      step: typed.type === 'integer' ? 1 : 'any',
    });
    read = () => {
      if (input.value.trim() === '') return undefined;
      const number = Number(input.value);
      if (!Number.isFinite(number)) throw new Error(`${title}: not a number`);
      return number;
    };
  } else if (typed.type === 'string') {
    const long = (effective.maxLength || 0) > 200 || effective.format === 'textarea';
    input = el(long ? 'textarea' : 'input', {
      id, type: long ? undefined : 'text', name: path.join('.') || name, 'aria-describedby': describedBy,
      minlength: effective.minLength, maxlength: effective.maxLength,
    });
    read = () => (input.value === '' && optional ? undefined : input.value);
  } else {
    // No schema the form knows: the value as JSON.
    input = el('textarea', { id, name: path.join('.') || name, 'aria-describedby': describedBy, rows: 4, placeholder: 'JSON' });
    read = () => {
      if (input.value.trim() === '') return undefined;
      try {
        return JSON.parse(input.value);
      } catch (error) {
        throw new Error(`${title}: not valid JSON`);
      }
    };
  }
  setInitial(input, typed, initial);
  const node = el('div', { class: 'field' }, el('label', { for: id, text: title }), hint, input, errorNode);
  return {
    node,
    read,
    clearErrors: ownErrors.clear,
    showErrors: (tree) => {
      if (tree && tree.errors && tree.errors.length) {
        ownErrors.show(tree.errors);
        return true;
      }
      return false;
    },
  };
}

// Shows `initial` (the value as displayed) in a new input.
function setInitial(input, typed, initial) {
  if (initial === undefined || initial === null) return;
  if (typed.type === 'enum') {
    const index = typed.values.findIndex((v) => JSON.stringify(v) === JSON.stringify(initial));
    if (index >= 0) input.value = String(index);
  } else if (input.type === 'checkbox') {
    input.checked = initial === true;
  } else if (input.tagName === 'SELECT') {
    input.value = String(initial);
  } else {
    input.value = typeof initial === 'string' ? initial : JSON.stringify(initial);
  }
}

// `oneOf` / `anyOf` of several variants: a select of the variants (by
// title, description or type), and the field of the one chosen, built anew
// when the choice changes; it starts on the variant `initial` fits.
function choiceField(variants, field, initial, ctx) {
  const { title, path, id, describedBy, errorNode, hint, ownErrors, optional } = field;
  const fieldset = el('fieldset', { class: 'choice' }, el('legend', { text: title }), hint);
  const select = el('select', { id, name: `${path.join('.') || title}:variant`, 'aria-describedby': describedBy });
  if (optional) select.append(el('option', { value: '', text: '(not set)' }));
  variants.forEach((variant, index) => {
    const [shown] = resolved(variant, ctx);
    const type = Array.isArray(shown.type) ? shown.type.join(' or ') : shown.type;
    select.append(el('option', { value: String(index), text: shown.title || shown.description || type || `Variant ${index + 1}` }));
  });
  const slot = el('div', { class: 'variant' });
  let current = null;
  const show = (choice, start) => {
    slot.replaceChildren();
    current = choice === '' ? null : schemaField(variants[Number(choice)], title, path, true, start, ctx);
    if (current) slot.append(current.node);
  };
  select.addEventListener('change', () => show(select.value, undefined));
  let chosen = optional ? '' : '0';
  if (initial !== undefined && initial !== null) {
    const fit = variants.findIndex((variant) => fits(resolved(variant, ctx)[0], initial));
    if (fit >= 0) chosen = String(fit);
  }
  select.value = chosen;
  show(chosen, chosen === '' ? undefined : initial);
  fieldset.append(el('label', { for: id, text: 'Which one' }), select, slot, errorNode);
  return {
    node: fieldset,
    read: () => (current ? current.read() : undefined),
    clearErrors: () => {
      ownErrors.clear();
      if (current) current.clearErrors();
    },
    showErrors: (tree) => {
      let shown = false;
      if (tree && tree.errors && tree.errors.length) {
        ownErrors.show(tree.errors);
        shown = true;
      }
      if (current) shown = current.showErrors(tree) || shown;
      return shown;
    },
  };
}

// Whether `value` is of the kind `schema` describes (its const, its type,
// an object's required and known properties): which variant a value fits.
function fits(schema, value) {
  if ('const' in schema) return JSON.stringify(schema.const) === JSON.stringify(value);
  const kind = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
  if (kind === 'object' && schema.properties && typeof schema.properties === 'object') {
    const required = Array.isArray(schema.required) ? schema.required : [];
    return required.every((key) => Object.prototype.hasOwnProperty.call(value, key))
      && Object.keys(value).every((key) => Object.prototype.hasOwnProperty.call(schema.properties, key));
  }
  const declared = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (kind === 'number') return declared.includes('number') || (declared.includes('integer') && Number.isInteger(value));
  return declared.includes(kind);
}

function objectField(schema, title, path, errorNode, hint, ownErrors, initial, ctx) {
  const fieldset = el('fieldset', { class: 'object' }, el('legend', { text: title }), hint);
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const children = Object.entries(schema.properties || {}).map(([key, child]) => {
    const start = initial && typeof initial === 'object' && Object.prototype.hasOwnProperty.call(initial, key) ? initial[key] : undefined;
    const field = schemaField(child, key, path.concat(key), required.has(key), start, ctx);
    fieldset.append(field.node);
    return [key, field];
  });
  fieldset.append(errorNode);
  return {
    node: fieldset,
    read: () => {
      const value = {};
      for (const [key, field] of children) {
        const child = field.read();
        if (child !== undefined) setOwn(value, key, child);
      }
      return value;
    },
    clearErrors: () => {
      ownErrors.clear();
      children.forEach(([, field]) => field.clearErrors());
    },
    showErrors: (tree) => {
      let shown = false;
      if (tree && tree.errors && tree.errors.length) {
        ownErrors.show(tree.errors);
        shown = true;
      }
      for (const [key, field] of children) {
        if (tree && tree.fields && tree.fields[key]) shown = field.showErrors(tree.fields[key]) || shown;
      }
      return shown;
    },
  };
}

function arrayField(schema, title, path, errorNode, hint, ownErrors, ctx) {
  const fieldset = el('fieldset', { class: 'array' }, el('legend', { text: title }), hint);
  const list = el('ol');
  const entries = [];
  const itemSchema = schema.items;
  const add = () => {
    const entry = { field: schemaField(itemSchema, `Item ${entries.length + 1}`, path.concat(String(entries.length)), true, undefined, ctx) };
    entry.node = el('li', {}, entry.field.node, el('button', {
      type: 'button', text: 'Remove',
      onclick: () => {
        entries.splice(entries.indexOf(entry), 1);
        entry.node.remove();
      },
    }));
    entries.push(entry);
    list.append(entry.node);
  };
  fieldset.append(list, el('button', { type: 'button', text: 'Add an item', onclick: add }), errorNode);
  return {
    node: fieldset,
    read: () => entries.map((entry) => entry.field.read()).filter((v) => v !== undefined),
    clearErrors: () => {
      ownErrors.clear();
      entries.forEach((entry) => entry.field.clearErrors());
    },
    showErrors: (tree) => {
      let shown = false;
      if (tree && tree.errors && tree.errors.length) {
        ownErrors.show(tree.errors);
        shown = true;
      }
      entries.forEach((entry, index) => {
        if (tree && tree.fields && tree.fields[String(index)]) shown = entry.field.showErrors(tree.fields[String(index)]) || shown;
      });
      return shown;
    },
  };
}

// --- start -------------------------------------------------------------------------

function open() {
  document.getElementById('login').hidden = true;
  document.getElementById('inbox').hidden = false;
  document.getElementById('sign-out').hidden = false;
  setStatus('Connecting…');
  follow();
}

// A search waits for the typing to pause.
let searching = null;
// Typing waits for a pause; a choice (kind, order) loads at once.
document.getElementById('search').addEventListener('input', (event) => {
  if (event.target.tagName === 'SELECT') return;
  clearTimeout(searching);
  searching = setTimeout(() => loadPage(true), 250);
});
document.getElementById('search').addEventListener('change', (event) => {
  if (event.target.tagName !== 'SELECT') return;
  clearTimeout(searching);
  loadPage(true);
});
document.getElementById('search').addEventListener('submit', (event) => {
  event.preventDefault();
  clearTimeout(searching);
  loadPage(true);
});
document.getElementById('more').addEventListener('click', () => loadPage(false));
// The list loads on as its end scrolls into view.
new IntersectionObserver((entries) => {
  if (entries.some((entry) => entry.isIntersecting) && list.next !== null && !document.getElementById('inbox').hidden) loadPage(false);
}).observe(document.getElementById('more'));
document.getElementById('batch-approve').addEventListener('click', () => decideBatch('approve'));
document.getElementById('batch-decline').addEventListener('click', () => decideBatch('decline'));
document.getElementById('batch-clear').addEventListener('click', () => {
  selected.clear();
  for (const box of document.querySelectorAll('#items input.select')) box.checked = false;
  renderBatch();
});
setInterval(tick, 1000);

document.getElementById('login').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = document.getElementById('token').value.trim();
  if (!value) return;
  sessionStorage.setItem(TOKEN_KEY, value);
  document.getElementById('token').value = '';
  open();
});

document.getElementById('sign-out').addEventListener('click', () => showLogin(''));

if (token()) open();
else showLogin('');
