// Change groups (review at scale): comparisons of a run that show the same
// change — the same changed pixels at the same place in their segment —
// across targets, viewports and segments, reviewed with one click each
// ("the same change on 48 comparisons" · Approve group · Reject group).
// The run view calls changeGroups(runID, container, { onChange }).
import { api } from './api.js';
import { h, fill, badge, errorBox } from './ui.js';

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function counts(c) {
  return ['failed', 'new', 'missing', 'passed', 'error', 'approved', 'rejected']
    .filter((k) => c && c[k]).map((k) => `${c[k]} ${k}`).join(' · ');
}

function thumb(cmp) {
  const d = cmp && cmp.diff;
  if (!d) return h('div', { class: 'placeholder' }, 'no diff');
  const t = d.thumbnail || d;
  return h('a', { href: d.url, title: 'diff of the representative comparison' },
    h('img', { src: t.url, alt: `diff of ${cmp.target} ${cmp.viewport}`, width: t.width, height: t.height, loading: 'lazy' }));
}

function group(g, act) {
  const rep = g.representative || {};
  const pages = (g.targets || []).length;
  const vps = (g.viewports || []).length;
  return h('article', { class: 'panel cmp', 'data-group': g.id },
    h('div', { class: 'spread' },
      h('div', { class: 'stack' },
        h('strong', {}, `The same change on ${plural(g.size, 'comparison', 'comparisons')}`),
        h('span', { class: 'small muted' },
          `${plural(pages, 'page', 'pages')} × ${plural(vps, 'viewport', 'viewports')} · ${counts(g.counts)}`),
        h('span', { class: 'small' }, `e.g. ${rep.target} · ${rep.viewport} · segment ${rep.segment}`,
          rep.message ? ` — ${rep.message}` : ''),
        g.needs_review ? null : badge('approved', 'reviewed')),
      h('div', { class: 'row' },
        h('button', { type: 'button', class: 'btn btn-primary btn-small', disabled: g.needs_review === 0,
          onclick: (ev) => act(ev.currentTarget, g, 'approve') }, `Approve group (${g.needs_review})`),
        h('button', { type: 'button', class: 'btn btn-small', disabled: g.needs_review === 0,
          onclick: (ev) => act(ev.currentTarget, g, 'reject') }, 'Reject group'))),
    h('div', { class: 'cmp-images' }, h('figure', {}, thumb(rep), h('figcaption', {}, 'diff'))));
}

/**
 * changeGroups renders the "Change groups" block of run runID into el: each
 * group with its size, status counts, a representative diff thumbnail, and
 * Approve group / Reject group buttons (one API call each). onChange runs
 * after a group was approved or rejected, to redraw the rest of the page.
 */
export async function changeGroups(runID, el, { onChange } = {}) {
  const path = `/v1/runs/${encodeURIComponent(runID)}/groups`;
  const msg = h('div', { role: 'status' });
  const draw = async () => {
    let data;
    try {
      data = await api('GET', path);
    } catch (err) {
      fill(el, errorBox(err, 'Could not load the change groups'));
      return;
    }
    // A group of one is just a comparison; the list below shows it.
    const gs = (data.groups || []).filter((g) => g.size > 1);
    if (!gs.length) {
      fill(el);
      return;
    }
    fill(el, h('section', { class: 'stack', id: 'change-groups', style: 'margin-top:16px' },
      h('h2', {}, 'Change groups'), msg, gs.map((g) => group(g, act))));
  };
  const act = async (btn, g, verb) => {
    btn.disabled = true;
    fill(msg);
    try {
      const res = await api('POST', `${path}/${encodeURIComponent(g.id)}/${verb}`);
      const n = verb === 'approve' ? res.approved : res.rejected;
      await draw();
      fill(msg, h('p', { class: 'notice' }, `${verb === 'approve' ? 'Approved' : 'Rejected'} ${plural(n, 'comparison', 'comparisons')}. The run is now ${String(res.run_status).replace('_', ' ')}.`));
      if (onChange) await onChange();
    } catch (err) {
      fill(msg, errorBox(err, `${verb} failed`));
      btn.disabled = false;
    }
  };
  await draw();
}
