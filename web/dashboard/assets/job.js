// Job detail: every segment in order at readable size, the other outputs as
// links (text-like ones can be previewed), result metadata and attempts.
import { api, artifactURL } from './api.js';
import { h, fill, badge, time, bytes, errorBox, shortID, retryingImage } from './ui.js';

const TERMINAL = ['succeeded', 'failed', 'canceled'];
const PREVIEWABLE = ['markdown', 'text', 'links', 'metadata', 'html'];
const PREVIEW_LIMIT = 200 * 1024;

export async function jobView(ctx) {
  const [id] = ctx.params;
  const load = () => api('GET', `/v1/jobs/${encodeURIComponent(id)}`, undefined, { signal: ctx.signal });
  let j;
  try {
    j = await load();
  } catch (err) {
    ctx.main.append(errorBox(err, 'Could not load the job'));
    return;
  }
  draw(ctx.main, j);
  if (TERMINAL.includes(j.status)) return;
  let last = JSON.stringify(j);
  ctx.every(2000, async () => {
    const next = await load();
    const key = JSON.stringify(next);
    if (key !== last) { // artifact URLs are stable; redraw only when something changed
      last = key;
      draw(ctx.main, next);
    }
    return !TERMINAL.includes(next.status);
  });
}

function draw(main, j) {
  const shots = (j.artifacts || []).filter((a) => a.kind === 'screenshot');
  const others = (j.artifacts || []).filter((a) => a.kind !== 'screenshot');
  fill(main,
    h('div', { class: 'page-head stack' },
      h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Batches'), ' / ',
        h('a', { href: `#/batches/${j.batch_id}` }, shortID(j.batch_id)), ' / ', j.name),
      h('div', { class: 'row' }, h('h1', { class: 'wrap' }, j.name), badge(j.status)),
      h('a', { href: j.url, class: 'wrap', rel: 'noopener noreferrer', target: '_blank' }, j.url)),
    j.error ? h('div', { class: 'error-box', role: 'alert', id: 'job-error' },
      j.status === 'queued' ? 'Last attempt failed (a retry is waiting): ' : null,
      h('code', {}, j.error.code), ' ', j.error.message) : null,
    h('div', { class: 'cards', style: 'margin-top:16px' }, resultPanel(j), timingPanel(j)),
    shots.length ? gallery(j, shots) : null,
    others.length ? outputsPanel(others) : null,
    logPanel(j));
}

function resultPanel(j) {
  const r = j.result;
  const rows = [];
  const add = (k, v) => rows.push(h('dt', {}, k), h('dd', {}, v));
  if (r) {
    add('HTTP status', String(r.http_status));
    add('Final URL', r.final_url ? h('a', { href: r.final_url, rel: 'noopener noreferrer', target: '_blank' }, r.final_url) : '—');
    add('Title', r.title || '—');
    add('Page height', `${r.page_height} px`);
    const seg = r.segments || {};
    add('Segments', seg.truncated
      ? h('span', {}, `${seg.captured} of ${seg.total} `, h('strong', {}, 'truncated'), ' (max_segments reached)')
      : String(seg.captured ?? 0));
    add('Blocked requests', String(r.blocked_requests || 0));
    if (r.text_chars) add('Text', `${r.text_chars} characters`);
    if (r.markdown_chars) add('Markdown', `${r.markdown_chars} characters${r.markdown_truncated ? ' (truncated)' : ''}`);
    if (r.wait_errors && r.wait_errors.length) add('Wait errors', h('ul', {}, r.wait_errors.map((e) => h('li', {}, e))));
  }
  add('Attempts', String(j.attempts));
  add('Created', time(j.created_at));
  add('Started', time(j.started_at));
  add('Finished', time(j.finished_at));
  return h('section', { class: 'panel', 'aria-labelledby': 'result-h' },
    h('h2', { id: 'result-h' }, 'Result'), h('dl', { class: 'meta', id: 'job-meta' }, rows));
}

function timingPanel(j) {
  const t = (j.result && j.result.timings_ms) || {};
  const order = ['navigate', 'wait', 'capture', 'encode', 'upload', 'total'];
  const keys = Object.keys(t).sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  return h('section', { class: 'panel', 'aria-labelledby': 'timing-h' },
    h('h2', { id: 'timing-h' }, 'Timings'),
    keys.length
      ? h('table', {}, h('tbody', {}, keys.map((k) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, `${t[k]} ms`)))))
      : h('p', { class: 'muted' }, 'No timings yet.'));
}

function gallery(j, shots) {
  return h('section', { style: 'margin-top:24px', 'aria-labelledby': 'shots-h' },
    h('h2', { id: 'shots-h' }, `Screenshots (${shots.length})`),
    h('div', { class: 'gallery', id: 'segments' }, shots.map((a, i) =>
      h('figure', { 'data-artifact': a.id },
        retryingImage(artifactURL(a.id), {
          alt: `${j.name}: segment ${i + 1} of ${shots.length}`, width: a.width, height: a.height, decoding: 'async', class: 'segment',
          // The first screens load at once; the rest as they scroll near, which keeps a
          // 50-segment job inside the API's rate limit.
          loading: i < 6 ? 'eager' : 'lazy',
        }),
        h('figcaption', {},
          shots.length > 1 ? `Segment ${i + 1} of ${shots.length} · ` : '',
          h('a', { href: artifactURL(a.id) }, a.name), ` · ${a.width} × ${a.height} px · ${bytes(a.bytes)}`)))));
}

function outputsPanel(others) {
  return h('section', { class: 'panel stack', style: 'margin-top:24px', 'aria-labelledby': 'outputs-h' },
    h('h2', { id: 'outputs-h' }, 'Other outputs'),
    h('ul', { class: 'stack', style: 'list-style:none;padding:0;margin:0', id: 'outputs' }, others.map((a) => {
      const preview = h('div');
      const btn = PREVIEWABLE.includes(a.kind) ? h('button', {
        type: 'button', class: 'btn btn-small', 'aria-expanded': 'false', onclick: () => togglePreview(a, btn, preview),
      }, 'Preview') : null;
      return h('li', { 'data-kind': a.kind },
        h('div', { class: 'row' },
          h('strong', {}, a.kind),
          h('a', { href: artifactURL(a.id) }, a.name),
          h('span', { class: 'muted small' }, `${a.content_type} · ${bytes(a.bytes)}`),
          btn),
        preview);
    })));
}

// togglePreview fetches a text artifact through its presigned URL. The storage
// is another origin: this works only when it answers CORS requests (MinIO does
// by default); otherwise the link above still downloads the file.
async function togglePreview(a, btn, box) {
  if (btn.getAttribute('aria-expanded') === 'true') {
    fill(box);
    btn.setAttribute('aria-expanded', 'false');
    btn.textContent = 'Preview';
    return;
  }
  btn.setAttribute('aria-expanded', 'true');
  btn.textContent = 'Hide preview';
  fill(box, h('p', { class: 'muted small' }, 'Loading…'));
  try {
    const res = await fetch(artifactURL(a.id), { credentials: 'same-origin' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    let text = await res.text();
    const cut = text.length > PREVIEW_LIMIT;
    if (cut) text = text.slice(0, PREVIEW_LIMIT);
    if (a.content_type.startsWith('application/json')) {
      try { text = JSON.stringify(JSON.parse(text), null, 2); } catch { /* show as is */ }
    }
    fill(box, h('pre', { class: 'preview', style: 'max-height:420px', 'data-preview': a.kind }, text),
      cut ? h('p', { class: 'small muted' }, `Showing the first ${bytes(PREVIEW_LIMIT)}; download the file for the rest.`) : null);
  } catch (err) {
    fill(box, h('p', { class: 'small muted' },
      `Preview unavailable (${err.message}): the storage may not allow this page to read it. Use the link to open the file.`));
  }
}

function logPanel(j) {
  const log = (j.result && j.result.log) || [];
  if (!log.length) return null;
  return h('details', { class: 'panel', style: 'margin-top:24px' },
    h('summary', {}, `Page log (${log.length} steps${j.result.log_truncated ? ', oldest dropped' : ''})`),
    h('table', {},
      h('thead', {}, h('tr', {}, ['#', 'step', 'target', 'ok', 'ms', 'error / excerpt'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, log.map((e) => h('tr', {},
        h('td', {}, String(e.index ?? '')), h('td', {}, e.type), h('td', { class: 'wrap mono' }, e.target || ''),
        h('td', {}, e.ok ? 'yes' : 'no'), h('td', {}, String(e.ms ?? '')),
        h('td', { class: 'wrap' }, e.error || e.excerpt || ''))))));
}
