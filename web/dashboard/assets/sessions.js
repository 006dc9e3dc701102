// Sessions: the key's interactive browser sessions, and one session's live feed (each
// command as a row, running → ok/error with its excerpt; the open and the end) beside its
// latest screenshot. The feed is replayed from its start (last_event_id=0-0), so a reload
// shows the same rows.
import { api } from './api.js';
import { h, fill, badge, time, errorBox, shortID } from './ui.js';

const statusClass = { open: 'running', opening: 'queued', closed: 'succeeded', lost: 'failed', failed: 'failed' };

/** sessionsView lists the key's sessions, newest first. */
export async function sessionsView(ctx) {
  const body = h('tbody', { id: 'session-rows' });
  const msg = h('div');
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Sessions')),
    h('p', { class: 'muted' }, 'Browser tabs held for agents: open one with ', h('code', {}, 'POST /v1/sessions'),
      ' or ', h('code', {}, 'snapq session new'), '.'),
    msg,
    h('div', { class: 'table-wrap' }, h('table', { class: 'responsive', id: 'session-table' },
      h('thead', {}, h('tr', {}, ['Session', 'Status', 'Commands', 'Created', 'Ended'].map((c) => h('th', { scope: 'col' }, c)))),
      body)));
  let data;
  try {
    data = await api('GET', '/v1/sessions', undefined, { signal: ctx.signal });
  } catch (err) {
    fill(msg, errorBox(err, 'Could not load sessions'));
    return;
  }
  const list = data.sessions || [];
  if (!list.length) {
    fill(body, h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'No sessions yet.')));
    return;
  }
  for (const s of list) {
    body.append(h('tr', { 'data-session': s.id },
      h('td', { 'data-label': 'Session' }, h('a', { href: `#/sessions/${encodeURIComponent(s.id)}`, class: 'mono' }, shortID(s.id))),
      h('td', { 'data-label': 'Status' }, badge(statusClass[s.status] || 'queued', s.status)),
      h('td', { 'data-label': 'Commands' }, String(s.commands)),
      h('td', { 'data-label': 'Created' }, time(s.created_at)),
      h('td', { 'data-label': 'Ended', class: 'wrap' }, s.closed_at ? [time(s.closed_at), ' ', s.close_reason] : '—')));
  }
}

/** sessionView renders one session's feed and latest screenshot, live. */
export async function sessionView(ctx) {
  const id = ctx.params[0];
  const path = `/v1/sessions/${encodeURIComponent(id)}`;
  const head = h('p', { role: 'status', id: 'session-status' });
  const rows = h('tbody', { id: 'feed-rows' });
  const shot = h('div', { id: 'latest-shot', class: 'muted' }, 'No screenshot yet.');
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Session ', h('span', { class: 'mono' }, shortID(id)))),
    head,
    h('div', { class: 'table-wrap' }, h('table', { class: 'responsive step-log', id: 'feed' },
      h('thead', {}, h('tr', {}, ['#', 'Command', 'Status', 'Reply', 'Page', 'ms'].map((c) => h('th', { scope: 'col' }, c)))),
      rows)),
    h('h2', {}, 'Latest screenshot'), shot);
  const showStatus = (s) => fill(head, badge(statusClass[s.status] || 'queued', s.status),
    ' ', s.close_reason || '', ' · ', `${s.commands} commands`, ' · opened ', time(s.created_at));
  try {
    showStatus(await api('GET', path, undefined, { signal: ctx.signal }));
  } catch (err) {
    fill(head, errorBox(err, 'Could not load the session'));
    return;
  }
  const bySeq = new Map();
  const onCommand = (d) => {
    const tr = h('tr', { 'data-seq': d.seq, 'data-status': d.status },
      h('td', { 'data-label': '#' }, String(d.seq)),
      h('td', { 'data-label': 'Command', class: 'mono wrap' }, [d.command, ...(d.args || [])].join(' ')),
      h('td', { 'data-label': 'Status' }, badge(d.status === 'ok' ? 'succeeded' : d.status === 'error' ? 'failed' : 'running', d.status),
        d.error ? [' ', h('code', {}, d.error.code)] : null),
      h('td', { 'data-label': 'Reply', class: 'wrap' }, d.excerpt ? h('pre', { class: 'excerpt' }, d.excerpt) : ''),
      h('td', { 'data-label': 'Page', class: 'wrap small' }, d.title || '', d.url ? h('div', { class: 'mono' }, d.url) : null),
      h('td', { 'data-label': 'ms' }, d.ms ? String(d.ms) : ''));
    const old = bySeq.get(d.seq);
    if (old) old.replaceWith(tr); else rows.append(tr);
    bySeq.set(d.seq, tr);
    const img = (d.artifacts || []).find((a) => a.kind === 'screenshot');
    if (img) {
      fill(shot, h('img', { src: `${path}/artifacts/${encodeURIComponent(img.name)}`, alt: `screenshot of ${d.url || 'the page'}`,
        style: 'max-width:100%', 'data-name': img.name }));
    }
  };
  const onSession = (d) => rows.append(h('tr', { class: 'session-event' },
    h('td', { colspan: 6, class: 'muted' }, `session ${d.status}${d.reason ? ` (${d.reason})` : ''} · `, time(d.at))));
  if (typeof EventSource === 'undefined') return;
  const es = new EventSource(`${path}/events?last_event_id=0-0`);
  ctx.onCleanup(() => es.close());
  es.addEventListener('command', (e) => onCommand(JSON.parse(e.data)));
  es.addEventListener('session', (e) => onSession(JSON.parse(e.data)));
  es.addEventListener('done', (e) => { showStatus(JSON.parse(e.data)); es.close(); });
}
