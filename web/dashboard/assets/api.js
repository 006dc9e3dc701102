// Calls to snapq's public JSON API. The API key (when the server has keys on)
// lives in localStorage and goes out as a Bearer token; a copy in a same-site
// cookie lets <img> tags and links reach /v1/artifacts/:id, which browsers
// cannot send headers to.

const KEY_STORE = 'snapq.key';
const KEY_COOKIE = 'snapq_key';

export function getKey() {
  try { return localStorage.getItem(KEY_STORE) || ''; } catch { return ''; }
}

/** setKey stores the key (or forgets it when empty) and mirrors it in the cookie. */
export function setKey(key) {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  if (key) {
    localStorage.setItem(KEY_STORE, key);
    document.cookie = `${KEY_COOKIE}=${encodeURIComponent(key)}; Path=/; SameSite=Strict${secure}`;
  } else {
    localStorage.removeItem(KEY_STORE);
    document.cookie = `${KEY_COOKIE}=; Path=/; Max-Age=0; SameSite=Strict${secure}`;
  }
}

/** APIError carries the API's error body: {code, message, field, fields}. */
export class APIError extends Error {
  constructor(status, body, fallback) {
    const e = (body && body.error) || {};
    super(e.message || fallback || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || (status ? `http_${status}` : 'network');
    this.field = e.field || '';
    this.fields = Array.isArray(e.fields) && e.fields.length ? e.fields
      : (e.field ? [{ field: e.field, code: this.code, message: e.message }] : []);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * api sends one request and returns the decoded JSON. A 429 is retried after
 * Retry-After (at most 3 times); a 401 also fires the "snapq:unauthorized"
 * event so the key prompt comes back. Any other non-2xx throws an APIError.
 */
export async function api(method, path, body, { signal } = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: 'application/json' };
    const key = getKey();
    if (key) headers.Authorization = `Bearer ${key}`;
    const init = { method, headers, signal };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      throw new APIError(0, null, `cannot reach the API: ${err.message}`);
    }
    if (res.status === 429 && attempt < 3) {
      const wait = Math.min(Number(res.headers.get('Retry-After')) || 1, 10);
      await sleep(wait * 1000);
      continue;
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    if (res.status === 401) {
      window.dispatchEvent(new CustomEvent('snapq:unauthorized', { detail: new APIError(401, data) }));
    }
    if (!res.ok) throw new APIError(res.status, data, text.slice(0, 200));
    return data;
  }
}

/** artifactURL is the same-origin download link of an artifact (302 to storage). */
export function artifactURL(id) {
  return `/v1/artifacts/${encodeURIComponent(id)}`;
}
