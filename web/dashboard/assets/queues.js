// Queues: the counts of each kind of queue (capture, regression, webhooks, reports),
// summed over its shards, from GET /v1/queues. Any API key may read them; the
// task lists (asynqmon at /admin/queues) need the admin token.
import { api } from './api.js';
import { h, fill, errorBox } from './ui.js';

const COLUMNS = ['pending', 'active', 'scheduled', 'retry', 'archived'];

/** queuesView shows the queue counts and refreshes them every 5 s. */
export async function queuesView(ctx) {
  const tbody = h('tbody', { id: 'queue-rows' });
  const msg = h('div');
  ctx.main.append(
    h('div', { class: 'spread page-head' }, h('h1', {}, 'Queues')),
    h('p', { class: 'muted' }, 'Tasks waiting and running in each queue, for every API key together. ',
      'Task lists: ', h('a', { href: '/admin/queues' }, 'queue UI'), ' (admin token).'),
    msg,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'responsive', id: 'queue-table' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Queue'), h('th', { scope: 'col' }, 'Shards'),
          ...COLUMNS.map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, 'Oldest waiting'))),
        tbody)));
  const draw = (data) => {
    fill(msg);
    fill(tbody, ...data.queues.map((q) => h('tr', { 'data-queue': q.name },
      h('td', {}, q.name), h('td', {}, String(q.shards)),
      ...COLUMNS.map((c) => h('td', { 'data-state': c }, String(q[c]))),
      h('td', {}, q.latency_seconds > 0 ? `${Math.round(q.latency_seconds)} s` : '—'))));
  };
  const load = async () => {
    try {
      draw(await api('GET', '/v1/queues', undefined, { signal: ctx.signal }));
    } catch (err) {
      if (!ctx.signal.aborted) fill(msg, errorBox(err, 'Could not load the queues'));
    }
    return true;
  };
  await load();
  ctx.every(5000, load);
}
