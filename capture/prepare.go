package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-rod/rod"
)

// Failure codes of page preparation. They are part of the public API.
const (
	// CodeScriptFailed: Prepare.Script threw or did not run and Prepare.ScriptRequired is
	// set (not retryable).
	CodeScriptFailed = "script_failed"
	// CodeSelectorNotFound: Screenshot.Selector matched no element (not retryable).
	CodeSelectorNotFound = "selector_not_found"
)

// Lazy-load scroll defaults.
const (
	DefaultScrollDelay = 100 * time.Millisecond
	DefaultScrollMax   = 5 * time.Second
)

// Scroll walks the page down to its bottom before capture so lazy content loads, then back
// to the top. The capture itself never scrolls.
type Scroll struct {
	Enabled bool
	Step    int           // CSS px per step; 0 = the viewport height
	Delay   time.Duration // pause after each step; 0 = DefaultScrollDelay
	Max     time.Duration // bound of the walk down; 0 = DefaultScrollMax
}

// Prepare edits the page after the waits, before any output is taken.
type Prepare struct {
	HideSelectors     []string `json:"hide_selectors,omitempty"`     // visibility: hidden !important
	RemoveSelectors   []string `json:"remove_selectors,omitempty"`   // removed from the DOM
	CSS               string   `json:"css,omitempty"`                // injected in a <style>
	DisableAnimations bool     `json:"disable_animations,omitempty"` // animations and transitions off, carets transparent, videos paused
	// Script is JavaScript (an expression or statements; a returned promise is awaited) run
	// last. Its failure is logged and ignored unless ScriptRequired is set.
	Script         string `json:"script,omitempty"`
	ScriptRequired bool   `json:"script_required,omitempty"`
	// Consent is what to do with cookie/consent banners (consent.go): ConsentHide,
	// ConsentAccept, or ConsentOff ("" too). It runs first, before the other edits.
	Consent string `json:"consent,omitempty"`
	// DeepCapture walks a virtualised list after the screenshots (deep.go).
	DeepCapture DeepCapture `json:"deep_capture,omitzero"`
}

// jsString returns s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a valid JS string literal
	return string(b)
}

// readyWaits runs the waits of req.Wait that come after the load state, network idle and the
// selector: fonts, images and hidden_selector. Each is bounded by ctx; messages of waits that
// timed out under BestAttempt are returned.
func readyWaits(ctx context.Context, p *rod.Page, w Wait, res *Result) ([]string, error) {
	var waitErrs []string
	if w.Fonts {
		start := time.Now()
		var ok bool
		err := evalJSON(p, `document.fonts ? document.fonts.ready.then(() => true) : true`, &ok)
		logStep(res, "wait.fonts", "", start, err, "")
		if err != nil {
			return nil, fmt.Errorf("wait for fonts: %w", err)
		}
	}
	if w.Images {
		start := time.Now()
		n, err := waitImages(p, false)
		logStep(res, "wait.images", "", start, err, fmt.Sprintf("%d images", n))
		if err != nil {
			return nil, fmt.Errorf("wait for images: %w", err)
		}
	}
	if w.HiddenSelector != "" {
		start := time.Now()
		msg, err := waitSelector(ctx, p, w.HiddenSelector, true, w.SelectorTimeout)
		lerr := err
		if lerr == nil && msg != "" {
			lerr = errors.New(msg)
		}
		logStep(res, "wait.hidden_selector", w.HiddenSelector, start, lerr, "")
		if err == nil {
			err = selectorTimedOut(msg, w.BestAttempt, &waitErrs)
		}
		if err != nil {
			return nil, err
		}
	}
	return waitErrs, nil
}

// waitImages waits until every image that has started loading is loaded and decoded. Images
// with loading="lazy" that have not started (they are far from the viewport) are skipped
// unless all is set, since nothing would ever load them. It returns how many it waited for.
func waitImages(p *rod.Page, all bool) (int, error) {
	js := `(async (all) => {
		const imgs = Array.from(document.images).filter(i =>
			all || i.complete || i.loading !== "lazy" || (() => {
				const r = i.getBoundingClientRect();
				return r.bottom > -innerHeight && r.top < 2 * innerHeight;
			})());
		await Promise.all(imgs.map(i => (i.complete ? Promise.resolve() :
			new Promise(res => { i.addEventListener("load", res, {once: true}); i.addEventListener("error", res, {once: true}); }))
			.then(() => i.naturalWidth > 0 ? i.decode().catch(() => {}) : null)));
		return imgs.length;
	})(` + fmt.Sprint(all) + `)`
	var n int
	err := evalJSON(p, js, &n)
	return n, err
}

// scrollPage walks the page down in steps until its (growing) bottom or s.Max, back to the
// top, then waits for the images the walk started.
func scrollPage(p *rod.Page, s Scroll, viewportHeight int, res *Result) error {
	if !s.Enabled {
		return nil
	}
	step, delay, maxD := s.Step, s.Delay, s.Max
	if step <= 0 {
		step = viewportHeight
	}
	if delay <= 0 {
		delay = DefaultScrollDelay
	}
	if maxD <= 0 {
		maxD = DefaultScrollMax
	}
	start := time.Now()
	js := fmt.Sprintf(`(async (step, delay, maxMs) => {
		const t0 = Date.now(), sleep = ms => new Promise(r => setTimeout(r, ms));
		const height = () => Math.max(document.documentElement ? document.documentElement.scrollHeight : 0,
			document.body ? document.body.scrollHeight : 0);
		let steps = 0;
		while (Date.now() - t0 < maxMs && scrollY + innerHeight < height()) {
			scrollBy(0, step); steps++;
			await sleep(delay);
		}
		const reached = scrollY + innerHeight >= height();
		scrollTo(0, 0);
		await sleep(0);
		return {steps, reached, height: height()};
	})(%d, %d, %d)`, step, delay.Milliseconds(), maxD.Milliseconds())
	var out struct {
		Steps   int  `json:"steps"`
		Reached bool `json:"reached"`
		Height  int  `json:"height"`
	}
	err := evalJSON(p, js, &out)
	excerpt := fmt.Sprintf("%d steps, height %d px", out.Steps, out.Height)
	if err == nil && !out.Reached {
		excerpt += ", stopped at max_ms"
	}
	logStep(res, "scroll", "", start, err, excerpt)
	if err != nil {
		return fmt.Errorf("scroll: %w", err)
	}
	start = time.Now()
	n, err := waitImages(p, true)
	logStep(res, "wait.images", "after scroll", start, err, fmt.Sprintf("%d images", n))
	if err != nil {
		return fmt.Errorf("wait for images after scroll: %w", err)
	}
	return nil
}

// disableAnimationsCSS stops what would make two captures of one page differ.
const disableAnimationsCSS = `*, *::before, *::after {
	animation: none !important; transition: none !important; caret-color: transparent !important;
}`

// editPage applies req.Prepare: one injected style (hide, animations, css), removals, then the
// script.
func editPage(p *rod.Page, pr Prepare, res *Result) error {
	if err := dismissConsent(p, pr.Consent, res); err != nil {
		return err
	}
	for _, sel := range pr.HideSelectors {
		// One rule per selector, so an invalid one does not void the others.
		if err := injectStyle(p, res, "edit.hide", sel, sel+" { visibility: hidden !important; }"); err != nil {
			return err
		}
	}
	for _, sel := range pr.RemoveSelectors {
		if err := removeElements(p, res, sel); err != nil {
			return err
		}
	}
	if pr.DisableAnimations {
		if err := disableAnimations(p, res); err != nil {
			return err
		}
	}
	if pr.CSS != "" {
		if err := injectStyle(p, res, "edit.css", "", pr.CSS); err != nil {
			return err
		}
	}
	if pr.Script != "" {
		return runPrepareScript(p, pr, res)
	}
	return nil
}

// injectStyle adds a style element of css to the page, logged as typ on target.
func injectStyle(p *rod.Page, res *Result, typ, target, css string) error {
	start := time.Now()
	err := evalJSON(p, `(() => {
		const s = document.createElement("style");
		s.setAttribute("data-snapq", "");
		s.textContent = `+jsString(css)+`;
		(document.head || document.documentElement).appendChild(s);
		return true;
	})()`, new(bool))
	logStep(res, typ, target, start, err, "")
	if err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	return nil
}

// removeElements removes the elements matching sel; an invalid selector is
// CodeInvalidSelector.
func removeElements(p *rod.Page, res *Result, sel string) error {
	start := time.Now()
	var n int
	err := evalJSON(p, `(() => { let els; try { els = document.querySelectorAll(`+jsString(sel)+`); } catch (e) { return -1; }
		els.forEach(e => e.remove()); return els.length; })()`, &n)
	if err == nil && n < 0 {
		err = newError(CodeInvalidSelector, false, nil, "%q is not a valid CSS selector", sel)
	}
	logStep(res, "edit.remove", sel, start, err, fmt.Sprintf("%d removed", n))
	return err
}

// disableAnimations stops animations, transitions and the caret, pauses videos and finishes
// the running animations.
func disableAnimations(p *rod.Page, res *Result) error {
	if err := injectStyle(p, res, "edit.disable_animations", "", disableAnimationsCSS); err != nil {
		return err
	}
	start := time.Now()
	err := evalJSON(p, `(() => { document.querySelectorAll("video").forEach(v => v.pause());
		if (document.getAnimations) document.getAnimations().forEach(a => { try { a.finish(); } catch (e) { a.cancel(); } });
		return true; })()`, new(bool))
	logStep(res, "edit.pause_media", "", start, err, "")
	if err != nil {
		return fmt.Errorf("pause media: %w", err)
	}
	return nil
}

// runPrepareScript runs the prepare script; its failure fails the job only when
// ScriptRequired.
func runPrepareScript(p *rod.Page, pr Prepare, res *Result) error {
	start := time.Now()
	var out any
	// The script is the body of an async function when it is not a single expression.
	js := `(async () => { return await (0, eval)(` + jsString(pr.Script) + `); })()`
	err := evalJSON(p, js, &out)
	excerpt := ""
	if err == nil && out != nil {
		b, _ := json.Marshal(out)
		excerpt = string(b) // cut by the log (MaxLogExcerpt)
	}
	logStep(res, "edit.script", "", start, err, excerpt)
	if err != nil && p.GetContext().Err() != nil {
		return err // the job ended: not the script's failure
	}
	if err != nil && pr.ScriptRequired {
		return newError(CodeScriptFailed, false, err, "the prepare script failed: %v", err)
	}
	return nil
}
