// Batch detail: live progress (live events until the batch completes; polls
// every 2 s if the event stream is unavailable), the
// job table with a status filter, first-segment thumbnails and cancel.
import { api, artifactURL } from './api.js';
import { h, fill, badge, progress, legend, time, labelChips, errorBox, filterLinks, shortID, retryingImage, donePercent } from './ui.js';

const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'canceled'];
const POLL_MS = 2000;

// thumbs caches one thumbnail <img> per finished job, so polling and filter
// changes move the loaded image instead of downloading it again.
const thumbs = new Map();

export async function batchView(ctx) {
  const [id] = ctx.params;
  const status = JOB_STATES.includes(ctx.query.get('status')) ? ctx.query.get('status') : '';
  const summary = h('section', { class: 'panel stack', 'aria-label': 'Batch summary', id: 'batch-summary' });
  const filters = h('div');
  const tbody = h('tbody', { id: 'job-rows' });
  const jobsMsg = h('div');
  const more = h('div', { class: 'row' });
  const live = h('p', { class: 'small muted', 'aria-live': 'polite', id: 'live-status' });
  ctx.main.append(
    h('div', { class: 'page-head' },
      h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Batches'), ' / ', shortID(id)),
      h('h1', {}, 'Batch ', h('span', { class: 'mono' }, shortID(id)))),
    summary,
    h('div', { class: 'spread', style: 'margin:20px 0 10px' }, h('h2', {}, 'Jobs'), filters),
    jobsMsg,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'responsive', id: 'job-table' },
        h('thead', {}, h('tr', {},
          h('th', { scope: 'col' }, 'Preview'), h('th', { scope: 'col' }, 'Job'), h('th', { scope: 'col' }, 'Status'),
          h('th', { scope: 'col' }, 'Attempts'), h('th', { scope: 'col' }, 'Result'))),
        tbody)),
    more, live);

  const parts = summaryParts(summary, () => refresh());
  const rows = new Map(); // job id -> {key, tr}
  let shownCounts = '';
  let loaded = 0; // rows shown; polling refetches that many
  let cursor = null;
  const jobsQuery = (limit, after) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (status) q.set('status', status);
    if (after) q.set('cursor', after);
    return api('GET', `/v1/batches/${encodeURIComponent(id)}/jobs?${q}`, undefined, { signal: ctx.signal });
  };
  const drawMore = () => {
    fill(more);
    if (!cursor) return;
    more.append(h('button', {
      type: 'button', class: 'btn', onclick: async () => {
        try {
          const page = await jobsQuery(100, cursor);
          for (const j of page.jobs) {
            const r = { key: JSON.stringify(j), tr: jobRow(j), id: j.id };
            rows.set(j.id, r);
            tbody.append(r.tr);
          }
          loaded += page.jobs.length;
          cursor = page.next_cursor;
          drawMore();
        } catch (err) { fill(more, errorBox(err)); }
      },
    }, 'Load more jobs'));
  };
  const refresh = async () => {
    const [b, page] = await Promise.all([
      api('GET', `/v1/batches/${encodeURIComponent(id)}`, undefined, { signal: ctx.signal }),
      jobsQuery(Math.min(Math.max(loaded, 100), 1000), null),
    ]);
    drawSummary(parts, b);
    const countsKey = JSON.stringify(b.counts);
    if (countsKey !== shownCounts) { // redraw only on change, so a focused link keeps its focus
      shownCounts = countsKey;
      fill(filters, filterLinks(`#/batches/${id}`, status, JOB_STATES, 'Filter jobs by status', b.counts));
    }
    drawRows(tbody, page.jobs, rows);
    loaded = page.jobs.length;
    cursor = page.next_cursor;
    fill(jobsMsg);
    if (!page.jobs.length) jobsMsg.append(h('p', { class: 'notice' }, status ? `No ${status} jobs.` : 'No jobs.'));
    drawMore();
    const complete = b.status === 'completed';
    live.textContent = complete ? `Completed ${new Date(b.finished_at).toLocaleTimeString()}.`
      : mode === 'polling' ? `Updating every ${POLL_MS / 1000} s…` : 'Live: updating as jobs change…';
    return !complete;
  };
  let mode = 'live';
  try {
    if (!(await refresh())) return;
  } catch (err) {
    if (err.name === 'AbortError') return;
    fill(summary, errorBox(err, 'Could not load the batch'));
    return;
  }
  ctx.follow(`/v1/batches/${encodeURIComponent(id)}/events`, async () => {
    try {
      return await refresh();
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      live.textContent = `Update failed (${err.code}: ${err.message}); retrying.`;
      return true;
    }
  }, { pollMs: POLL_MS, onState: (m) => { mode = m; } });
}

// summaryParts builds the summary's containers once; updates replace their
// contents but keep the cancel button, so polling never steals its focus.
function summaryParts(el, refresh) {
  const parts = {
    head: h('div', { class: 'row' }),
    bar: h('div'),
    legend: h('div'),
    meta: h('div'),
    error: h('div'),
    batch: null,
  };
  parts.cancel = h('button', {
    type: 'button', class: 'btn btn-danger', id: 'cancel-batch', onclick: async () => {
      if (!window.confirm('Cancel every job of this batch that has not started?')) return;
      parts.cancel.disabled = true;
      fill(parts.error);
      try {
        await api('POST', `/v1/batches/${encodeURIComponent(parts.batch.id)}/cancel`);
        await refresh();
      } catch (err) {
        fill(parts.error, errorBox(err, 'Cancel failed'));
      } finally {
        parts.cancel.disabled = false;
      }
    },
  }, 'Cancel batch');
  fill(el, h('div', { class: 'spread' }, parts.head, parts.cancel), parts.bar, parts.legend, parts.error, parts.meta);
  return parts;
}

function drawSummary(parts, b) {
  parts.batch = b;
  parts.cancel.hidden = b.status === 'completed';
  const pct = donePercent(b.counts, b.total);
  fill(parts.head, badge(b.status), h('strong', { id: 'batch-percent' }, `${pct}%`),
    h('span', { class: 'muted' }, `of ${b.total} jobs finished`));
  fill(parts.bar, progress(b.counts, b.total, true));
  fill(parts.legend, legend(b.counts));
  fill(parts.meta, h('dl', { class: 'meta' },
    h('dt', {}, 'ID'), h('dd', { class: 'mono' }, b.id),
    h('dt', {}, 'Created'), h('dd', {}, time(b.created_at)),
    h('dt', {}, 'Finished'), h('dd', {}, time(b.finished_at)),
    Object.keys(b.labels || {}).length ? [h('dt', {}, 'Labels'), h('dd', {}, labelChips(b.labels))] : null));
}

// drawRows updates the table in place: unchanged rows stay (with their focus
// and loaded thumbnails), changed rows are swapped one by one.
function drawRows(tbody, jobs, rows) {
  const next = jobs.map((j) => {
    const key = JSON.stringify(j);
    const old = rows.get(j.id);
    return old && old.key === key ? old : { key, tr: jobRow(j), id: j.id };
  });
  const sameOrder = next.length === tbody.children.length &&
    next.every((r, i) => tbody.children[i].dataset.job === r.id);
  if (sameOrder) {
    next.forEach((r, i) => { if (tbody.children[i] !== r.tr) tbody.children[i].replaceWith(r.tr); });
  } else {
    fill(tbody, ...next.map((r) => r.tr));
  }
  rows.clear();
  next.forEach((r) => rows.set(r.id, r));
}

function jobRow(j) {
  const link = `#/jobs/${j.id}`;
  const r = j.result;
  let result;
  if (j.error) {
    result = h('div', { class: 'wrap' }, h('span', { class: 'err-code' }, j.error.code), ' ', j.error.message,
      j.status === 'queued' ? h('div', { class: 'small muted' }, 'last attempt; a retry is waiting') : null);
  } else if (r) {
    const seg = r.segments || {};
    result = h('div', { class: 'small' },
      `HTTP ${r.http_status}`, seg.captured ? ` · ${seg.captured} segment${seg.captured === 1 ? '' : 's'}` : '',
      seg.truncated ? ` (of ${seg.total}, truncated)` : '',
      r.timings_ms && r.timings_ms.total !== undefined ? ` · ${r.timings_ms.total} ms` : '');
  } else {
    result = h('span', { class: 'muted' }, '—');
  }
  return h('tr', { 'data-job': j.id, 'data-status': j.status },
    h('td', { class: 'thumb', 'data-label': 'Preview' }, thumbnail(j)),
    h('td', { 'data-label': 'Job', class: 'wrap' },
      h('a', { href: link, class: 'job-link', 'data-url': j.url }, j.name || shortID(j.id)),
      h('div', { class: 'small muted' }, j.url)),
    h('td', { 'data-label': 'Status' }, badge(j.status)),
    h('td', { 'data-label': 'Attempts' }, String(j.attempts)),
    h('td', { 'data-label': 'Result' }, result));
}

// Thumbnails need the job's artifact list (GET /v1/jobs/:id); they are fetched
// two at a time so a long batch does not run into the API's rate limit.
const queue = [];
let active = 0;
function enqueue(task) {
  queue.push(task);
  pump();
}
function pump() {
  while (active < 2 && queue.length) {
    const task = queue.shift();
    active++;
    task().finally(() => { active--; pump(); });
  }
}

function thumbnail(j) {
  const box = h('a', { class: 'thumb-box', href: `#/jobs/${j.id}`, tabindex: '-1', 'aria-hidden': 'true' });
  if (j.status !== 'succeeded') {
    box.textContent = j.status === 'failed' ? 'failed' : '';
    return box;
  }
  let entry = thumbs.get(j.id);
  if (!entry && j.preview) {
    // The job list names each job's first screenshot: no request per job.
    entry = { img: retryingImage(j.preview.thumbnail ? `${artifactURL(j.preview.artifact_id)}/thumbnail` : artifactURL(j.preview.artifact_id), { alt: `first segment of ${j.name}`, loading: 'lazy', decoding: 'async', width: 112, height: 70 }), boxes: new Set() };
    thumbs.set(j.id, entry);
  }
  if (!entry) {
    entry = { img: null, boxes: new Set() };
    thumbs.set(j.id, entry);
    enqueue(async () => {
      try {
        const full = await api('GET', `/v1/jobs/${encodeURIComponent(j.id)}`);
        const first = (full.artifacts || []).find((a) => a.kind === 'screenshot');
        if (!first) { entry.img = h('span', {}, 'no image'); } else {
          entry.img = retryingImage(artifactURL(first.id), { alt: `first segment of ${j.name}`, loading: 'lazy', decoding: 'async', width: 112, height: 70 });
        }
      } catch {
        entry.img = h('span', {}, 'unavailable');
        thumbs.delete(j.id); // try again on the next refresh
      }
      for (const b of entry.boxes) if (b.isConnected) { fill(b, entry.img); break; }
      entry.boxes.clear();
    });
  }
  if (entry.img) box.append(entry.img);
  else entry.boxes.add(box);
  return box;
}
