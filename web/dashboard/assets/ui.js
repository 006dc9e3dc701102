// Small DOM helpers shared by the views.

/**
 * h builds an element: h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child, [more]).
 * Attributes set to null, undefined or false are skipped; true sets an empty attribute.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v; // CSSOM: allowed by the page's CSP, a style attribute is not
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string' && typeof v !== 'number') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** fill replaces el's children, skipping null/false like h() does. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** badge is a status pill: succeeded, failed, needs_review, … */
export function badge(status, label) {
  return h('span', { class: `badge badge-${status}`, 'data-status': status }, label || status.replace('_', ' '));
}

export const STATES = ['succeeded', 'failed', 'canceled', 'running', 'queued'];
const COLORS = { succeeded: 'p-succeeded', failed: 'p-failed', canceled: 'p-canceled', running: 'p-running', queued: 'p-queued' };

/** donePercent is the share of a batch's jobs that reached a final status. */
export function donePercent(counts, total) {
  if (!total) return 100;
  const done = (counts.succeeded || 0) + (counts.failed || 0) + (counts.canceled || 0);
  return Math.floor((done * 100) / total);
}

/** progress draws a batch's jobs by status as one bar, with its done percentage for assistive tech. */
export function progress(counts, total, big) {
  const pct = donePercent(counts, total);
  const bar = h('div', {
    class: big ? 'progress progress-big' : 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100,
    'aria-valuenow': pct, 'aria-label': `${pct}% of ${total} jobs finished`, 'data-testid': 'progress',
  });
  for (const s of STATES) {
    const n = counts[s] || 0;
    if (n > 0 && total > 0) bar.append(h('span', { class: COLORS[s], style: `width:${(n * 100) / total}%`, title: `${n} ${s}` }));
  }
  return bar;
}

/** legend names the bar's colours with their counts. */
export function legend(counts) {
  return h('div', { class: 'legend' }, STATES.map((s) =>
    h('span', {}, h('i', { class: COLORS[s] }), `${counts[s] || 0} ${s}`)));
}

/** time shows a timestamp in the user's locale, the ISO value as its title. */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  return h('time', { datetime: iso, title: iso }, `${d.toLocaleString()} (${ago(d)})`);
}

/** ago is a short relative time: "12 s ago", "3 min ago". */
export function ago(d) {
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// shortID is the last 8 hex digits of an id: ids are UUIDv7, whose first digits are a
// timestamp shared by everything created in the same minute.
export function shortID(id) { return String(id || '').slice(-8); }

/** errorBox shows an API error with its code, as the API gave it. */
export function errorBox(err, prefix) {
  const code = err.code || 'error';
  return h('div', { class: 'error-box', role: 'alert' },
    prefix ? `${prefix}: ` : null, h('code', {}, code), ' ', err.message || String(err));
}

/** labels shows a batch's labels as key=value chips. */
export function labelChips(labels) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return null;
  return h('div', { class: 'chips' }, entries.map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`)));
}

/** filterLinks is a row of links that select a status filter (aria-current marks the chosen one). */
export function filterLinks(base, current, values, label, counts) {
  return h('nav', { class: 'filters', 'aria-label': label },
    ['', ...values].map((v) => {
      const href = v ? `${base}?status=${v}` : base;
      const n = counts && v ? ` (${counts[v] || 0})` : '';
      return h('a', { href, 'aria-current': v === current ? 'true' : null, 'data-filter': v || 'all' }, (v || 'all') + n);
    }));
}

/**
 * previewImage is a list's small picture of an artifact: its thumbnail
 * (GET /v1/artifacts/:id/thumbnail), or, for an image without one (a
 * baseline's later segments), the image itself.
 */
export function previewImage(artifactID, attrs) {
  const full = `/v1/artifacts/${encodeURIComponent(artifactID)}`;
  const img = h('img', { ...attrs, src: `${full}/thumbnail` });
  img.addEventListener('error', () => { img.src = full; }, { once: true });
  return img;
}

/** retryingImage makes an <img> that retries a failed load (e.g. a 429) a few times. */
export function retryingImage(src, attrs) {
  let tries = 0;
  const img = h('img', { ...attrs, src });
  img.addEventListener('error', () => {
    if (tries >= 3) return;
    tries++;
    setTimeout(() => { img.src = `${src}?retry=${tries}`; }, 800 * tries);
  });
  return img;
}
