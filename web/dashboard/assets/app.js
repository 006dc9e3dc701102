// snapq dashboard: hash routing (#/batches/ID), the API-key prompt, and the
// lifecycle of views (each view gets an AbortSignal and cleanup hooks, so
// polling stops when the user navigates away).
import { getKey, setKey } from './api.js';
import { h, fill } from './ui.js';
import { batchesView, submitView } from './batches.js';
import { batchView } from './batch.js';
import { jobView } from './job.js';
import { suitesView, suiteView } from './regression.js';
import { runView } from './run.js';
import { queuesView } from './queues.js';
import { authProfilesView } from './authprofiles.js';
import { sessionsView, sessionView } from './sessions.js';

const routes = [
  [/^\/?$/, batchesView, 'batches'],
  [/^\/batches\/?$/, batchesView, 'batches'],
  [/^\/submit\/?$/, submitView, 'submit'],
  [/^\/batches\/([^/]+)\/?$/, batchView, 'batches'],
  [/^\/jobs\/([^/]+)\/?$/, jobView, 'batches'],
  [/^\/suites\/?$/, suitesView, 'suites'],
  [/^\/suites\/([^/]+)\/?$/, suiteView, 'suites'],
  [/^\/runs\/([^/]+)\/?$/, runView, 'suites'],
  [/^\/queues\/?$/, queuesView, 'queues'],
  [/^\/auth-profiles\/?$/, authProfilesView, 'auth-profiles'],
  [/^\/sessions\/?$/, sessionsView, 'sessions'],
  [/^\/sessions\/([^/]+)\/?$/, sessionView, 'sessions'],
];

let current = null; // {controller, cleanups}

/** parseHash splits "#/batches/ID?status=failed" into a path and its query. */
function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, q = ''] = raw.split('?');
  return { path, query: new URLSearchParams(q) };
}

async function render() {
  if (current) {
    current.controller.abort();
    current.cleanups.forEach((fn) => fn());
  }
  const main = document.getElementById('main');
  const { path, query } = parseHash();
  const controller = new AbortController();
  const cleanups = [];
  current = { controller, cleanups };
  fill(main);
  const match = routes.map(([re, view, nav]) => [path.match(re), view, nav]).find(([m]) => m);
  document.querySelectorAll('[data-nav]').forEach((a) => {
    a.toggleAttribute('aria-current', false);
    if (match && a.dataset.nav === match[2]) a.setAttribute('aria-current', 'page');
  });
  if (!match) {
    main.append(h('div', { class: 'notice' }, 'No such page. ', h('a', { href: '#/' }, 'Back to batches')));
    return;
  }
  const [m, view] = match;
  const ctx = {
    main, query, params: m.slice(1).map(decodeURIComponent), signal: controller.signal,
    onCleanup: (fn) => cleanups.push(fn),
    /** every runs fn every ms until the view goes away or fn returns false. */
    every(ms, fn) {
      let timer = null;
      const tick = async () => {
        if (controller.signal.aborted) return;
        let again = true;
        try { again = await fn(); } catch (err) { if (err.name === 'AbortError') return; }
        if (again !== false && !controller.signal.aborted) timer = setTimeout(tick, ms);
      };
      timer = setTimeout(tick, ms);
      cleanups.push(() => clearTimeout(timer));
    },
    /**
     * follow keeps a view live over Server-Sent Events (GET path, the key
     * cookie authenticates): onChange runs (at most every 250 ms) after each
     * change, and once more at "done", when the stream ends. If the event
     * stream keeps failing (3 errors without an event between them, or no
     * EventSource), it falls back to polling: onChange every pollMs until it
     * returns false. onState reports 'live', 'polling' or 'done'.
     */
    follow(path, onChange, { pollMs = 2000, onState = () => {} } = {}) {
      const poll = () => { onState('polling'); this.every(pollMs, onChange); };
      if (typeof EventSource === 'undefined') { poll(); return; }
      const es = new EventSource(path);
      let errors = 0;
      let timer = null;
      let closed = false;
      const stop = () => { closed = true; es.close(); clearTimeout(timer); };
      cleanups.push(stop);
      const changed = () => {
        if (timer || closed) return;
        timer = setTimeout(async () => {
          timer = null;
          if (controller.signal.aborted) return;
          try { await onChange(); } catch (err) { if (err.name !== 'AbortError') console.error(err); }
        }, 250);
      };
      es.addEventListener('open', () => { errors = 0; onState('live'); });
      for (const type of ['snapshot', 'job', 'batch', 'comparison', 'run']) {
        es.addEventListener(type, () => { errors = 0; changed(); });
      }
      es.addEventListener('done', async () => {
        stop();
        onState('done');
        try { await onChange(); } catch (err) { if (err.name !== 'AbortError') console.error(err); }
      });
      es.addEventListener('error', () => {
        if (closed) return;
        errors++;
        // EventSource reconnects by itself (with Last-Event-ID); past three
        // failures in a row, or once it gave up (a 4xx/5xx), poll instead.
        if (errors >= 3 || es.readyState === EventSource.CLOSED) {
          stop();
          if (!controller.signal.aborted) poll();
        }
      });
    },
  };
  try {
    await view(ctx);
  } catch (err) {
    if (err.name !== 'AbortError') {
      console.error(err);
      main.append(h('div', { class: 'error-box', role: 'alert' }, String(err.message || err)));
    }
  }
}

function setupKeyDialog() {
  const dialog = document.getElementById('key-dialog');
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  const reason = document.getElementById('key-reason');
  const defaultReason = reason.textContent;
  const open = (why) => {
    reason.textContent = why || defaultReason;
    if (dialog.open) return; // a poll's 401 must not wipe what the user is typing
    input.value = '';
    dialog.showModal();
    input.focus();
  };
  document.getElementById('key-button').addEventListener('click', () => open());
  document.getElementById('key-cancel').addEventListener('click', () => dialog.close());
  document.getElementById('key-forget').addEventListener('click', () => {
    setKey('');
    dialog.close();
    render();
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    setKey(key);
    dialog.close();
    render();
  });
  window.addEventListener('snapq:unauthorized', (ev) => {
    const had = getKey();
    open(had
      ? `The API refused the stored key (${ev.detail.message}). Enter a valid key.`
      : 'This snapq requires an API key. It is kept in this browser only (localStorage, and a same-site cookie so images load).');
  });
}

// A key saved by an earlier visit: refresh its cookie (it may have been cleared).
if (getKey()) setKey(getKey());
setupKeyDialog();
window.addEventListener('hashchange', () => {
  render();
  document.getElementById('main').focus({ preventScroll: true });
});
render();
