package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/proto"

	"github.com/snapq/snapq/internal/redact"
)

// Action types.
const (
	ActionClick             = "click"
	ActionType              = "type"
	ActionPress             = "press"
	ActionHover             = "hover"
	ActionSelect            = "select"
	ActionScroll            = "scroll"
	ActionWait              = "wait"
	ActionWaitForSelector   = "wait_for_selector"
	ActionWaitForNavigation = "wait_for_navigation"
	ActionEvaluate          = "evaluate"
	ActionScreenshot        = "screenshot"
)

// Action limits and defaults.
const (
	// DefaultActionsTimeout bounds all actions of a job together when Request.ActionsTimeout
	// is zero.
	DefaultActionsTimeout = 30 * time.Second
	// DefaultActionTimeout is how long an action waits for its selector (or a navigation)
	// when Action.Timeout is zero.
	DefaultActionTimeout = 5 * time.Second
	// MaxEvaluationBytes caps one evaluate value as stored in Result.Evaluations.
	MaxEvaluationBytes = 64 << 10
)

// Action is one scripted step on the page. The caller has validated it; fields that do not
// apply to Type are ignored.
type Action struct {
	Type       string
	Selector   string        // click, type, hover, select, scroll, wait_for_selector
	Text       string        // type
	KeyDelay   time.Duration // type: pause after each key
	Key        string        // press: a PressKeys name or one printable ASCII character
	Value      string        // select: the option's value
	ByPX       int           // scroll: vertical distance when Selector and To are empty
	To         string        // scroll: "bottom"
	Duration   time.Duration // wait
	State      string        // wait_for_selector: visible (default) | hidden
	Timeout    time.Duration // selector and navigation waits; 0 = DefaultActionTimeout
	Expression string        // evaluate
	Name       string        // screenshot: the images are <Request.Name>-<Name>.<ext>
	Screenshot Screenshot    // screenshot: zero fields take Request.Screenshot's, Mode viewport
	Optional   bool          // a failure is logged and the sequence goes on
	// Secret: Text is a secret (an auth profile's password); the log shows •••• for it and
	// no error quotes it, in any encoding. It is typed only into a document whose origin is
	// one of Origins ("scheme://host[:port]"), checked in the page right before typing;
	// otherwise the action fails with SecretOriginRefused.
	Secret  bool
	Origins []string
}

// SecretMask is what logs show in place of a secret.
const SecretMask = redact.Mask

// Evaluation is the JSON value of an evaluate action. A value over MaxEvaluationBytes is cut
// and becomes a string ending in "…[truncated N bytes]".
type Evaluation struct {
	Index     int             `json:"index"`
	Value     json.RawMessage `json:"value"`
	Truncated bool            `json:"truncated,omitempty"`
}

// pressKeys are the named keys an action may press.
var pressKeys = map[string]input.Key{
	"Enter": input.Enter, "Tab": input.Tab, "Escape": input.Escape, "Backspace": input.Backspace,
	"Delete": input.Delete, "Space": input.Space, "ArrowUp": input.ArrowUp, "ArrowDown": input.ArrowDown,
	"ArrowLeft": input.ArrowLeft, "ArrowRight": input.ArrowRight, "Home": input.Home, "End": input.End,
	"PageUp": input.PageUp, "PageDown": input.PageDown,
}

// PressKeys lists the named keys of the press action; one printable ASCII character is
// accepted too.
func PressKeys() []string {
	return []string{"Enter", "Tab", "Escape", "Backspace", "Delete", "Space", "ArrowUp", "ArrowDown",
		"ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown"}
}

// ValidKey reports whether the press action accepts key.
func ValidKey(key string) bool {
	if _, ok := pressKeys[key]; ok {
		return true
	}
	return len(key) == 1 && key[0] >= 0x20 && key[0] <= 0x7e
}

// actionFailure is a required action's failure, already logged.
type actionFailure struct {
	index int
	typ   string
	err   error
}

func (f *actionFailure) Error() string {
	return fmt.Sprintf("action %d (%s) failed: %v", f.index, f.typ, f.err)
}

func (f *actionFailure) Unwrap() error { return f.err }

// runActions performs req.Actions in order within the actions budget, logging each one.
// Named screenshots go to res.Images, evaluate values to res.Evaluations. A failing required
// action returns an *actionFailure (a required screenshot over the job's budget: an *Error
// with CodeTooLargeCapture); ctx ending returns ctx's error.
func (t *tab) runActions(ctx context.Context, req Request, cfg Config, res *Result) error {
	if len(req.Actions) == 0 {
		return nil
	}
	budget := req.ActionsTimeout
	if budget <= 0 {
		budget = DefaultActionsTimeout
	}
	actx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	p := t.page.Context(actx)
	// The marker tells wait_for_navigation that the document was replaced.
	if err := markDocument(p); err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	for i, a := range req.Actions {
		start := time.Now()
		entry := LogEntry{Index: i, Type: a.Type, Target: actionTarget(a)}
		var err error
		if actx.Err() != nil {
			err = fmt.Errorf("the actions' time budget of %s is spent", budget)
		} else {
			env := &actionEnv{ctx: actx, p: p, index: i, a: a, req: req, cfg: cfg, res: res, timeout: actionTimeout(a)}
			entry.Excerpt, err = runAction(env)
			err = maskSecretError(a, err)
			if err != nil && actx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("the actions' time budget of %s ran out: %w", budget, err)
			}
		}
		entry.MS = time.Since(start).Milliseconds()
		entry.OK = err == nil
		if err != nil {
			entry.Error = err.Error()
		}
		if a.Secret {
			entry.Excerpt = SecretMask
		}
		actionLog{res}.add(entry)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !a.Optional {
			var ce *Error
			if errors.As(err, &ce) && (ce.Code == CodeTooLargeCapture || ce.Code == SecretOriginRefused) {
				// A required screenshot over the budget fails the job with the budget's code, a
				// secret refused on a foreign origin with its own.
				return newError(ce.Code, false, nil, "action %d (%s): %s", i, a.Type, ce.Message)
			}
			return &actionFailure{index: i, typ: a.Type, err: err}
		}
	}
	return nil
}

// actionTarget is what a log entry names: the selector, key, expression or name.
func actionTarget(a Action) string {
	switch a.Type {
	case ActionPress:
		return a.Key
	case ActionEvaluate:
		return excerpt(a.Expression, 200)
	case ActionScreenshot:
		return a.Name
	case ActionWait:
		return a.Duration.String()
	case ActionScroll:
		switch {
		case a.Selector != "":
			return a.Selector
		case a.To != "":
			return a.To
		}
		return fmt.Sprintf("%d px", a.ByPX)
	}
	return a.Selector
}

// actionEnv is what one action works on: the page bound to the actions' budget, the action
// and its index, the job's request, config and result.
type actionEnv struct {
	ctx     context.Context // the actions' budget
	p       *rod.Page       // bound to ctx
	index   int             // in Request.Actions
	a       Action
	req     Request
	cfg     Config
	res     *Result
	timeout time.Duration // for selector and navigation waits: a.Timeout or DefaultActionTimeout
}

// actionFunc performs one action and returns its log excerpt.
type actionFunc func(env *actionEnv) (string, error)

// actionFuncs maps each action type to its implementation.
var actionFuncs = map[string]actionFunc{
	ActionClick:             clickAction,
	ActionHover:             hoverAction,
	ActionType:              typeAction,
	ActionPress:             pressAction,
	ActionSelect:            selectAction,
	ActionScroll:            scrollAction,
	ActionWait:              waitAction,
	ActionWaitForSelector:   waitForSelectorAction,
	ActionWaitForNavigation: waitForNavigationAction,
	ActionEvaluate:          evaluateAction,
	ActionScreenshot:        screenshotAction,
}

// actionTimeout is how long a's selector or navigation wait may take.
func actionTimeout(a Action) time.Duration {
	if a.Timeout <= 0 {
		return DefaultActionTimeout
	}
	return a.Timeout
}

// runAction performs env's action and returns its log excerpt.
func runAction(env *actionEnv) (string, error) {
	do, ok := actionFuncs[env.a.Type]
	if !ok {
		return "", fmt.Errorf("unknown action type %q", env.a.Type)
	}
	return do(env)
}

// element waits up to env.timeout for the action's selector to match.
func (env *actionEnv) element() (*rod.Element, error) {
	return findElement(env.ctx, env.p, env.a.Selector, env.timeout)
}

func clickAction(env *actionEnv) (string, error) {
	el, err := env.element()
	if err != nil {
		return "", err
	}
	return "", mouseAt(env.p, el, true)
}

func hoverAction(env *actionEnv) (string, error) {
	el, err := env.element()
	if err != nil {
		return "", err
	}
	return "", mouseAt(env.p, el, false)
}

// typeAction focuses the element and types Text, pausing KeyDelay after each key.
func typeAction(env *actionEnv) (string, error) {
	el, err := env.element()
	if err != nil {
		return "", err
	}
	if _, err := el.Eval(`function () { this.focus(); }`); err != nil {
		return "", fmt.Errorf("focus %q: %w", env.a.Selector, err)
	}
	if err := checkSecretOrigin(env, el); err != nil {
		return "", err
	}
	for _, r := range env.a.Text {
		if err := typeRune(env.p, r); err != nil {
			return "", err
		}
		if env.a.KeyDelay > 0 {
			if err := sleep(env.ctx, env.a.KeyDelay); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// pressAction presses a named key (pressKeys) or one printable ASCII character.
func pressAction(env *actionEnv) (string, error) {
	k, ok := pressKeys[env.a.Key]
	if !ok {
		if !ValidKey(env.a.Key) {
			return "", fmt.Errorf("unknown key %q", env.a.Key)
		}
		k = input.Key(env.a.Key[0])
	}
	return "", pressKey(env.p, k)
}

// selectAction picks the <select>'s option with Value and fires input and change.
func selectAction(env *actionEnv) (string, error) {
	el, err := env.element()
	if err != nil {
		return "", err
	}
	obj, err := el.Eval(`function (v) {
		if (this.tagName !== "SELECT") return "not a <select> element";
		const o = Array.from(this.options).find(o => o.value === v);
		if (!o) return "no option with value " + JSON.stringify(v);
		this.value = v;
		this.dispatchEvent(new Event("input", {bubbles: true}));
		this.dispatchEvent(new Event("change", {bubbles: true}));
		return "";
	}`, env.a.Value)
	if err != nil {
		return "", err
	}
	if msg := obj.Value.Str(); msg != "" {
		return "", errors.New(msg)
	}
	return "", nil
}

// scrollAction scrolls the element into view, to the bottom, or by ByPX.
func scrollAction(env *actionEnv) (string, error) {
	a := env.a
	if a.Selector != "" {
		el, err := env.element()
		if err != nil {
			return "", err
		}
		return "", proto.DOMScrollIntoViewIfNeeded{ObjectID: el.Object.ObjectID}.Call(env.p)
	}
	js := fmt.Sprintf("(() => { scrollBy(0, %d); return true; })()", a.ByPX)
	if a.To == "bottom" {
		js = `(() => { const e = document.scrollingElement || document.documentElement; scrollTo(0, e.scrollHeight); return true; })()`
	}
	var ok bool
	return "", evalJSON(env.p, js, &ok)
}

func waitAction(env *actionEnv) (string, error) {
	return "", sleep(env.ctx, env.a.Duration)
}

func waitForSelectorAction(env *actionEnv) (string, error) {
	return "", waitSelectorState(env.ctx, env.p, env.a.Selector, env.a.State == "hidden", env.timeout)
}

func waitForNavigationAction(env *actionEnv) (string, error) {
	return "", waitNavigation(env.ctx, env.p, env.timeout)
}

// evaluateAction stores the expression's value in Result.Evaluations (capped) and logs it.
func evaluateAction(env *actionEnv) (string, error) {
	raw, err := evalRaw(env.p, env.a.Expression)
	if err != nil {
		return "", err
	}
	ev := capEvaluation(env.index, raw, MaxEvaluationBytes)
	env.res.Evaluations = append(env.res.Evaluations, ev)
	return string(ev.Value), nil
}

// findElement waits up to timeout for selector to match, then returns the element bound to
// ctx (not to the lookup's timeout).
func findElement(ctx context.Context, p *rod.Page, selector string, timeout time.Duration) (*rod.Element, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	el, err := p.Context(lctx).Element(selector)
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("no element matches %q after %s", selector, timeout)
	case err != nil:
		return nil, fmt.Errorf("find %q: %w", selector, err)
	}
	// Rebind to a page on ctx: the element's methods also use its page (mouse, keyboard).
	return p.Context(ctx).ElementFromObject(el.Object)
}

// mouseAt scrolls el into view and moves the mouse to its centre, then clicks with the left
// button when click is set: real input events, so the page sees hover, mousedown, mouseup and
// click in order. rod's Element.Click/Hover are not used: their repaint waits evaluate on the
// tab's root page, outside the job's context.
func mouseAt(p *rod.Page, el *rod.Element, click bool) error {
	if err := (proto.DOMScrollIntoViewIfNeeded{ObjectID: el.Object.ObjectID}).Call(p); err != nil {
		return fmt.Errorf("scroll into view: %w", err)
	}
	shape, err := el.Shape()
	if err != nil {
		return fmt.Errorf("element box: %w", err)
	}
	pt := shape.OnePointInside()
	if pt == nil {
		return errors.New("the element has no visible box to point at")
	}
	ev := proto.InputDispatchMouseEvent{Type: proto.InputDispatchMouseEventTypeMouseMoved, X: pt.X, Y: pt.Y}
	if err := ev.Call(p); err != nil {
		return fmt.Errorf("move mouse: %w", err)
	}
	if !click {
		return nil
	}
	ev.Button, ev.ClickCount = proto.InputMouseButtonLeft, 1
	for _, typ := range []proto.InputDispatchMouseEventType{proto.InputDispatchMouseEventTypeMousePressed, proto.InputDispatchMouseEventTypeMouseReleased} {
		ev.Type = typ
		if err := ev.Call(p); err != nil {
			return fmt.Errorf("click: %w", err)
		}
	}
	return nil
}

// pressKey sends a key down and up as real input events.
func pressKey(p *rod.Page, k input.Key) error {
	if err := k.Encode(proto.InputDispatchKeyEventTypeKeyDown, 0).Call(p); err != nil {
		return fmt.Errorf("key down: %w", err)
	}
	if err := k.Encode(proto.InputDispatchKeyEventTypeKeyUp, 0).Call(p); err != nil {
		return fmt.Errorf("key up: %w", err)
	}
	return nil
}

// typeRune types one character: a key press for printable ASCII, inserted text otherwise.
func typeRune(p *rod.Page, r rune) error {
	if r >= 0x20 && r <= 0x7e {
		return pressKey(p, input.Key(r))
	}
	if err := (proto.InputInsertText{Text: string(r)}).Call(p); err != nil {
		return fmt.Errorf("insert text: %w", err)
	}
	return nil
}

// waitSelectorState waits until selector matches a visible element, or, with hidden, until
// none is visible; a timeout is an error.
func waitSelectorState(ctx context.Context, p *rod.Page, selector string, hidden bool, timeout time.Duration) error {
	msg, err := waitSelector(ctx, p, selector, hidden, timeout)
	if err == nil && msg != "" {
		err = errors.New(msg)
	}
	return err
}

const docMarker = "__snapqActionsDoc"

// markDocument tags the current document so waitNavigation sees it replaced.
func markDocument(p *rod.Page) error {
	var ok bool
	return evalJSON(p, `(() => { globalThis.`+docMarker+` = true; return true; })()`, &ok)
}

// waitNavigation waits until the document marked by markDocument (or the last navigation
// wait) has been replaced and the new one has loaded, then marks the new one.
func waitNavigation(ctx context.Context, p *rod.Page, timeout time.Duration) error {
	nctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	js := `(() => !globalThis.` + docMarker + ` && document.readyState === "complete")()`
	err := poll(nctx, pollInterval, func() (bool, error) {
		var done bool
		err := evalJSON(p.Context(nctx), js, &done)
		if navigatingError(err) {
			return false, nil
		}
		return done, err
	})
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no navigation finished within %s", timeout)
		}
		return fmt.Errorf("wait for navigation: %w", err)
	}
	return markDocument(p)
}

// evalRaw evaluates expr (awaiting a promise) and returns its JSON value; undefined and
// values JSON cannot hold are null.
func evalRaw(p *rod.Page, expr string) (json.RawMessage, error) {
	res, err := proto.RuntimeEvaluate{Expression: expr, ReturnByValue: true, AwaitPromise: true}.Call(p)
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, exceptionError(exceptionText(res.ExceptionDetails))
	}
	data, err := json.Marshal(res.Result.Value)
	if err != nil || len(data) == 0 {
		return json.RawMessage("null"), nil
	}
	return data, nil
}

// capEvaluation keeps raw when it fits in limit bytes; otherwise the value becomes a string
// (the string itself, or the JSON text of another value) cut to fit with the marker
// "…[truncated N bytes]", N counting the bytes of the original dropped.
func capEvaluation(index int, raw json.RawMessage, limit int) Evaluation {
	if len(raw) <= limit {
		return Evaluation{Index: index, Value: raw}
	}
	text := string(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text = s
	}
	keep := limit - 64
	for {
		cut := min(max(keep, 0), len(text))
		for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut--
		}
		v := text[:cut] + fmt.Sprintf("…[truncated %d bytes]", len(text)-cut)
		data, _ := json.Marshal(v)
		if len(data) <= limit || cut == 0 {
			return Evaluation{Index: index, Value: data, Truncated: true}
		}
		keep = cut - (len(data) - limit)
	}
}

// screenshotAction captures the page as it is now into images named <Request.Name>-<a.Name>.
func screenshotAction(env *actionEnv) (string, error) {
	r := namedShotRequest(env.a, env.req)
	var m struct {
		Height float64 `json:"height"`
	}
	if err := evalJSON(env.p, measureJS, &m); err != nil {
		return "", fmt.Errorf("measure page: %w", err)
	}
	shots, err := shoot(env.ctx, env.p, r, int(m.Height), newBudget(r.Limits, env.res), env.cfg.CallTimeout)
	if err != nil {
		return "", err
	}
	names := make([]string, len(shots.images))
	for i, img := range shots.images {
		names[i] = img.Name
	}
	env.res.Images = append(env.res.Images, shots.images...)
	return strings.Join(names, ", "), nil
}

// namedShotRequest is req as a screenshot action takes it: named <Request.Name>-<a.Name>,
// with a.Screenshot whose zero fields come from req.Screenshot, except Mode (viewport).
func namedShotRequest(a Action, req Request) Request {
	r := req
	r.Name = req.Name + "-" + a.Name
	sc := a.Screenshot
	if sc.Mode == "" {
		sc.Mode = ModeViewport
	}
	if sc.Format == "" {
		sc.Format = req.Screenshot.Format
	}
	if sc.Format == req.Screenshot.Format && sc.Quality == 0 {
		sc.Quality = req.Screenshot.Quality
	}
	if sc.Format == FormatJPEG && sc.Quality <= 0 {
		sc.Quality = DefaultJPEGQuality
	}
	if sc.Format == FormatPNG {
		sc.Quality = 0
	}
	if sc.MaxSegments < 1 || sc.MaxSegments > HardMaxSegments {
		sc.MaxSegments = NormalizeMaxSegments(float64(sc.MaxSegments))
	}
	r.Screenshot = sc
	return r
}
