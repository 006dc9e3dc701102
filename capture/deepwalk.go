package capture

// deepJS walks the page's scroller a viewport at a time, merges the rendered items of its
// list into one ordered, de-duplicated sequence, then puts that sequence in the list in
// place of what is rendered and scrolls back to the top. Items are keyed by a stable
// attribute (data-post-id, data-key, …, or their own id), else a hash of their outer HTML;
// an item first seen after an already-known one is placed right after it.
const deepJS = `(async (maxItems, maxBytes, maxMs, idleSteps, delay) => {
	const t0 = Date.now(), sleep = ms => new Promise(r => setTimeout(r, ms));
	const frame = () => new Promise(r => requestAnimationFrame(() => r()));
	const doc = document.scrollingElement || document.documentElement;
	const describe = el => el === doc ? "document" :
		el.localName + (el.id ? "#" + el.id : "") + (el.classList.length ? "." + Array.from(el.classList).slice(0, 2).join(".") : "");
	const range = el => el.scrollHeight - el.clientHeight;
	const scroller = (() => {
		let best = doc, bestRange = range(doc);
		for (const el of document.body ? document.body.querySelectorAll("*") : []) {
			if (el.clientHeight < innerHeight / 3 || range(el) <= bestRange) continue;
			const oy = getComputedStyle(el).overflowY;
			if (oy === "auto" || oy === "scroll" || oy === "overlay") { best = el; bestRange = range(el); }
		}
		return best;
	})();
	const root = scroller === doc ? document.body : scroller;
	const content = el => (el.textContent || "").trim() !== "" || el.querySelector("img, video, svg, canvas, picture") !== null;
	const sig = el => el.localName + "." + Array.from(el.classList).filter(c => !/\d/.test(c)).sort().join(".");
	// The list is the element whose largest group of alike children (same tag and classes)
	// with content holds the most text, at least three of them.
	const pickList = () => {
		let best = null, bestScore = 0;
		for (const el of root ? [root, ...root.querySelectorAll("*")] : []) {
			if (el.childElementCount < 3) continue;
			const groups = new Map();
			for (const c of el.children) {
				if (!content(c)) continue;
				const k = sig(c), g = groups.get(k) || {n: 0, text: 0};
				g.n++; g.text += (c.textContent || "").length; groups.set(k, g);
			}
			for (const g of groups.values()) if (g.n >= 3 && g.text > bestScore) { best = el; bestScore = g.text; }
		}
		return best;
	};
	const keySel = "[data-post-id],[data-key],[data-id],[data-item-id],[data-post-number],[data-row-key],[data-index]";
	const attrs = ["data-post-id", "data-key", "data-id", "data-item-id", "data-post-number", "data-row-key", "data-index"];
	const hash = s => { let h = 0x811c9dc5; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193); } return (h >>> 0).toString(16) + ":" + s.length; };
	const keyOf = (el, html) => {
		const k = el.matches(keySel) ? el : el.querySelector(keySel);
		if (k) for (const a of attrs) if (k.hasAttribute(a)) return a + "=" + k.getAttribute(a);
		if (el.id) return "id=" + el.id;
		return "h=" + hash(html);
	};
	const order = [], nodes = new Map();
	let list = null, bytes = 0, steps = 0, idle = 0, stopped = "";
	const snapshot = () => {
		if (!list || !list.isConnected) list = pickList();
		if (!list) return false;
		let anchor = -1, added = false;
		for (const c of list.children) {
			if (!content(c)) continue;
			const html = c.outerHTML, k = keyOf(c, html);
			if (nodes.has(k)) { anchor = order.indexOf(k); continue; }
			if (order.length >= maxItems) { stopped = "max_items"; return added; }
			if (bytes + html.length > maxBytes) { stopped = "max_bytes"; return added; }
			nodes.set(k, c.cloneNode(true)); bytes += html.length;
			order.splice(++anchor, 0, k); added = true;
		}
		return added;
	};
	const atBottom = () => scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1;
	const step = Math.max(1, Math.floor((scroller === doc ? innerHeight : scroller.clientHeight) * 0.85));
	scroller.scrollTop = 0;
	await frame(); await sleep(delay);
	snapshot();
	while (!stopped) {
		if (Date.now() - t0 >= maxMs) { stopped = "max_ms"; break; }
		scroller.scrollTop = scroller.scrollTop + step; steps++;
		await frame(); await sleep(delay);
		idle = snapshot() ? 0 : idle + 1;
		if (!stopped && idle >= idleSteps) stopped = atBottom() ? "end" : "idle";
	}
	scroller.scrollTop = 0;
	await frame(); await frame();
	const target = (list && list.isConnected) ? list : pickList();
	if (target && order.length) target.replaceChildren(...order.map(k => nodes.get(k)));
	return {items: order.length, steps, bytes, stopped, scroller: describe(scroller), list: target ? describe(target) : ""};
})`
