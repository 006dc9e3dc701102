package capture

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-rod/rod"
)

// Consent banners (Prepare.Consent). A cookie banner covers the first screen of most real
// sites; a capture of what the visitor sees after dealing with it is usually what is wanted.
// The common consent-management platforms are recognised by their DOM (consentPlatformsJS);
// anything else is found by a generic rule: a visible fixed or sticky element that covers a
// large part of the first screen and speaks of cookies, consent or privacy in one of several
// languages. snapq never fills in a consent form: "accept" clicks the platform's own accept
// button, "hide" takes the banner (and its backdrop) out of the rendering.
const (
	ConsentOff    = "off"    // leave banners as they are (the default of batches)
	ConsentHide   = "hide"   // hide banners and their backdrops (the default of suites)
	ConsentAccept = "accept" // click the accept button; hide what does not go away
)

// ConsentModes are the values of Prepare.Consent ("" means ConsentOff).
var ConsentModes = []string{ConsentHide, ConsentAccept, ConsentOff}

// consentSettle is how long accept waits for banners to go away after the clicks.
const consentSettle = 600 * time.Millisecond

// ConsentFound is one banner the consent step found, and what it did with it.
type ConsentFound struct {
	Platform string `json:"platform"` // "onetrust", "cookiebot", ... or "generic"
	Action   string `json:"action"`   // "accepted", "hidden"
}

// consentJS finds the banners and acts on them. It is an expression of (mode, settleMs) that
// resolves to the list of ConsentFound. Hidden elements get display:none !important inline,
// their previous inline style kept in data-snapq-consent (not restored: the page is shown
// without its banner from here on).
const consentJS = `(async (mode, settleMs) => {
	const platforms = [
		{name: "onetrust", banner: ["#onetrust-banner-sdk", "#onetrust-consent-sdk .onetrust-pc-dark-filter", "#onetrust-pc-sdk"], accept: ["#onetrust-accept-btn-handler"]},
		{name: "cookiebot", banner: ["#CybotCookiebotDialog", "#CybotCookiebotDialogBodyUnderlay"], accept: ["#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll", "#CybotCookiebotDialogBodyButtonAccept", "#CybotCookiebotDialogBodyLevelButtonAccept"]},
		{name: "didomi", banner: ["#didomi-host", "#didomi-popup", "#didomi-notice"], accept: ["#didomi-notice-agree-button"]},
		{name: "quantcast", banner: [".qc-cmp2-container", "#qc-cmp2-container", "#qc-cmp2-ui"], accept: [".qc-cmp2-summary-buttons button[mode='primary']", "#qc-cmp2-ui button[mode='primary']"]},
		{name: "usercentrics", banner: ["#usercentrics-root", "#usercentrics-cmp-ui", "#uc-banner-modal"], accept: ["[data-testid='uc-accept-all-button']", "#accept"]},
		{name: "trustarc", banner: ["#truste-consent-track", "#consent_blackbar", ".truste_overlay", ".truste_box_overlay", "#truste-consent-content"], accept: ["#truste-consent-button"]},
		{name: "sourcepoint", banner: ["div[id^='sp_message_container']"], accept: []},
		{name: "cookieyes", banner: [".cky-consent-container", ".cky-overlay"], accept: [".cky-btn-accept"]},
		{name: "osano", banner: [".osano-cm-window", ".osano-cm-dialog"], accept: [".osano-cm-accept-all", ".osano-cm-accept"]},
		{name: "iubenda", banner: ["#iubenda-cs-banner"], accept: [".iubenda-cs-accept-btn"]},
		{name: "complianz", banner: ["#cmplz-cookiebanner-container", ".cmplz-cookiebanner"], accept: [".cmplz-accept"]},
		{name: "borlabs", banner: ["#BorlabsCookieBox"], accept: ["#BorlabsCookieBox a[data-cookie-accept-all]", "#BorlabsCookieBox [data-cookie-accept]"]},
		{name: "cookie-notice", banner: ["#cookie-notice"], accept: ["#cn-accept-cookie"]},
		{name: "termly", banner: ["#termly-code-snippet-support"], accept: ["[data-tid='banner-accept']"]},
	];
	const words = /cookie|consent|gdpr|privacy|datenschutz|einwilligung|zustimm|consentement|confidentialit|vie privée|privacidad|consentimiento|galletas|riservatezza|consenso|toestemming|privacybeleid|samtycke|integritet|prywatno|ciasteczk|souhlas|sütik|çerez|конфиденциальн|файлы cookie|クッキー|個人情報|쿠키|개인정보|隐私|隱私|同意/i;
	const acceptWords = /^(accept|accept all|accept cookies|allow|allow all|allow cookies|agree|i agree|agree and close|ok|okay|got it|i understand|alle akzeptieren|akzeptieren|zustimmen|einverstanden|tout accepter|accepter|j'accepte|aceptar|aceptar todo|aceitar|accetta|accetta tutti|accepteren|alles accepteren|godkänn|acceptera|zaakceptuj|同意|同意する|すべて同意|동의|모두 동의|接受|全部接受)(?=$|[^a-zà-ÿ])/i;
	const found = [];
	const hidden = new Set();
	const visible = el => {
		if (!el || !el.isConnected) return false;
		const cs = getComputedStyle(el);
		if (cs.display === "none" || cs.visibility === "hidden" || Number(cs.opacity) === 0) return false;
		const r = el.getBoundingClientRect();
		return r.width > 1 && r.height > 1;
	};
	const query = sel => { try { return Array.from(document.querySelectorAll(sel)); } catch (e) { return []; } };
	const hide = el => {
		if (hidden.has(el)) return;
		hidden.add(el);
		if (!el.hasAttribute("data-snapq-consent")) el.setAttribute("data-snapq-consent", el.getAttribute("style") || "");
		el.style.setProperty("display", "none", "important");
	};
	const shadowQuery = (host, sel) => { try { return host.shadowRoot ? host.shadowRoot.querySelector(sel) : null; } catch (e) { return null; } };
	const sleep = ms => new Promise(r => setTimeout(r, ms));
	// Platforms.
	const hits = [];
	for (const p of platforms) {
		const banners = p.banner.flatMap(query).filter(visible);
		if (!banners.length) continue;
		hits.push({p, banners});
	}
	// Generic: fixed or sticky, visible, over a large part of the first screen, consent words.
	const area = innerWidth * innerHeight;
	const generic = [];
	for (const el of document.body ? document.body.querySelectorAll("*") : []) {
		const cs = getComputedStyle(el);
		if (cs.position !== "fixed" && cs.position !== "sticky") continue;
		if (!visible(el) || hits.some(h => h.banners.some(b => b === el || b.contains(el) || el.contains(b)))) continue;
		if (generic.some(g => g.contains(el))) continue;
		const r = el.getBoundingClientRect();
		const w = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
		const h = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
		if (w * h < 0.08 * area || w < 0.3 * innerWidth) continue;
		const text = (el.innerText || "").slice(0, 4000);
		if (!words.test(text)) continue;
		generic.push(el);
	}
	const buttonsOf = el => Array.from(el.querySelectorAll("button, a, [role='button'], input[type='button'], input[type='submit']"))
		.filter(b => visible(b) && acceptWords.test(((b.innerText || b.value || "").trim())));
	if (mode === "accept") {
		let clicked = 0;
		for (const h of hits) {
			let btn = null;
			for (const sel of h.p.accept) {
				btn = query(sel).find(visible) || null;
				if (!btn) for (const b of h.banners) { btn = shadowQuery(b, sel); if (btn) break; }
				if (btn) break;
			}
			if (!btn) for (const b of h.banners) { btn = buttonsOf(b)[0] || null; if (btn) break; }
			h.accepted = !!btn;
			if (btn) { btn.click(); clicked++; }
		}
		for (const g of generic) {
			const btn = buttonsOf(g)[0];
			g.__snapqAccepted = !!btn;
			if (btn) { btn.click(); clicked++; }
		}
		if (clicked) await sleep(settleMs);
	}
	for (const h of hits) {
		const still = h.banners.filter(visible);
		still.forEach(hide);
		found.push({platform: h.p.name, action: h.accepted && !still.length ? "accepted" : (h.accepted ? "accepted, hidden" : "hidden")});
	}
	for (const g of generic) {
		const still = visible(g);
		if (still) hide(g);
		found.push({platform: "generic", action: g.__snapqAccepted && !still ? "accepted" : (g.__snapqAccepted ? "accepted, hidden" : "hidden")});
	}
	// A banner that locked the page's scrolling leaves it locked once hidden: unlock.
	if (hidden.size) for (const el of [document.documentElement, document.body]) {
		if (el && getComputedStyle(el).overflowY === "hidden") el.style.setProperty("overflow", "visible", "important");
	}
	return found;
})`

// dismissConsent runs the consent step of mode (ConsentHide or ConsentAccept; anything else
// does nothing) and logs what it found and did as "edit.consent".
func dismissConsent(p *rod.Page, mode string, res *Result) error {
	if mode != ConsentHide && mode != ConsentAccept {
		return nil
	}
	start := time.Now()
	var found []ConsentFound
	err := evalJSON(p, fmt.Sprintf("%s(%s, %d)", consentJS, jsString(mode), consentSettle.Milliseconds()), &found)
	if found == nil {
		found = []ConsentFound{}
	}
	res.Consent = found
	parts := make([]string, len(found))
	for i, f := range found {
		parts[i] = f.Platform + ": " + f.Action
	}
	msg := "no banner found"
	if len(parts) > 0 {
		msg = strings.Join(parts, "; ")
	}
	logStep(res, "edit.consent", mode, start, err, msg)
	if err != nil && p.GetContext().Err() != nil {
		return fmt.Errorf("consent: %w", err) // the job ended; a page's own failure is only logged
	}
	return nil
}
