package capture

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/proto"
)

// Pointer and keyboard actions of a session, on an element given by ref or CSS selector.
// Each runs as real input events; an action that starts a navigation returns once the new
// document has loaded (bounded), so the next snapshot reads the new page.

// act runs do on the current page, then waits for a navigation it started.
func (s *Session) act(ctx context.Context, do func(ctx context.Context, p *rod.Page) error) error {
	return s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		before, _ := s.t.state()
		if err := do(ctx, p); err != nil {
			return err
		}
		s.settle(ctx, p, before.docRequestID)
		return nil
	})
}

// settle gives an action navigationGrace to start a navigation of the tab's page and, when
// one started, waits for its document to load.
func (s *Session) settle(ctx context.Context, p *rod.Page, before proto.NetworkRequestID) {
	if s.cur != "" {
		_ = sleep(ctx, navigationGrace/2)
		waitLoaded(ctx, p)
		return
	}
	deadline := time.Now().Add(navigationGrace)
	for time.Now().Before(deadline) {
		if st, _ := s.t.state(); st.docRequestID != before {
			s.refs.clear()
			waitLoaded(ctx, p)
			return
		}
		if sleep(ctx, 10*time.Millisecond) != nil {
			return
		}
	}
}

// Click clicks target (twice with double).
func (s *Session) Click(ctx context.Context, target string, double bool) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		el, err := s.element(ctx, p, target)
		if err != nil {
			return err
		}
		if err := mouseAt(p, el, true); err != nil {
			return err
		}
		if !double {
			return nil
		}
		return dblclickAt(p, el)
	})
}

// dblclickAt sends the second press of a double click (click count 2).
func dblclickAt(p *rod.Page, el *rod.Element) error {
	shape, err := el.Shape()
	if err != nil {
		return fmt.Errorf("element box: %w", err)
	}
	pt := shape.OnePointInside()
	if pt == nil {
		return errors.New("the element has no visible box to point at")
	}
	ev := proto.InputDispatchMouseEvent{X: pt.X, Y: pt.Y, Button: proto.InputMouseButtonLeft, ClickCount: 2}
	for _, typ := range []proto.InputDispatchMouseEventType{proto.InputDispatchMouseEventTypeMousePressed, proto.InputDispatchMouseEventTypeMouseReleased} {
		ev.Type = typ
		if err := ev.Call(p); err != nil {
			return fmt.Errorf("double click: %w", err)
		}
	}
	return nil
}

// Hover moves the mouse over target.
func (s *Session) Hover(ctx context.Context, target string) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		el, err := s.element(ctx, p, target)
		if err != nil {
			return err
		}
		return mouseAt(p, el, false)
	})
}

// Fill replaces target's value with text (input and change events fire).
func (s *Session) Fill(ctx context.Context, target, text string) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		el, err := s.element(ctx, p, target)
		if err != nil {
			return err
		}
		if _, err := el.Eval(`function () { this.focus(); if ("value" in this) { this.value = ""; } else if (this.isContentEditable) { this.textContent = ""; } }`); err != nil {
			return fmt.Errorf("focus: %w", err)
		}
		if err := (proto.InputInsertText{Text: text}).Call(p); err != nil {
			return fmt.Errorf("insert text: %w", err)
		}
		_, err = el.Eval(`function () { this.dispatchEvent(new Event("change", {bubbles: true})); }`)
		return err
	})
}

// Type types text key by key into target, or into the focused element when target is "".
func (s *Session) Type(ctx context.Context, target, text string) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		if target != "" {
			el, err := s.element(ctx, p, target)
			if err != nil {
				return err
			}
			if _, err := el.Eval(`function () { this.focus(); }`); err != nil {
				return fmt.Errorf("focus: %w", err)
			}
		}
		for _, r := range text {
			if err := typeRune(p, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Press presses a named key (Enter, Tab, Escape, …) or one printable character.
func (s *Session) Press(ctx context.Context, key string) error {
	k, ok := pressKeys[key]
	if !ok {
		if !ValidKey(key) {
			return newError(CodeActionFailed, false, nil, "unknown key %q; keys: %s or one printable character", key, strings.Join(PressKeys(), ", "))
		}
		k = input.Key(key[0])
	}
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error { return pressKey(p, k) })
}

// Select picks the option of the <select> target whose value or text is choice.
func (s *Session) Select(ctx context.Context, target, choice string) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		el, err := s.element(ctx, p, target)
		if err != nil {
			return err
		}
		obj, err := el.Eval(`function (v) {
			if (this.tagName !== "SELECT") return "not a <select> element";
			const o = Array.from(this.options).find(o => o.value === v) || Array.from(this.options).find(o => o.text.trim() === v);
			if (!o) return "no option with value or text " + JSON.stringify(v);
			this.value = o.value;
			this.dispatchEvent(new Event("input", {bubbles: true}));
			this.dispatchEvent(new Event("change", {bubbles: true}));
			return "";
		}`, choice)
		if err != nil {
			return err
		}
		if msg := obj.Value.Str(); msg != "" {
			return newError(CodeActionFailed, false, nil, "%s", msg)
		}
		return nil
	})
}

// Check clicks the checkbox or radio target unless it already is in the state on.
func (s *Session) Check(ctx context.Context, target string, on bool) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		el, err := s.element(ctx, p, target)
		if err != nil {
			return err
		}
		obj, err := el.Eval(`function () { return "checked" in this ? this.checked : this.getAttribute("aria-checked") === "true"; }`)
		if err != nil {
			return err
		}
		if obj.Value.Bool() == on {
			return nil
		}
		return mouseAt(p, el, true)
	})
}

// Scroll scrolls: "down"/"up" by a screen, "top", "bottom", a number of pixels, or a target
// into view.
func (s *Session) Scroll(ctx context.Context, how string) error {
	return s.act(ctx, func(ctx context.Context, p *rod.Page) error {
		js := ""
		switch how {
		case "", "down":
			js = `scrollBy(0, innerHeight)`
		case "up":
			js = `scrollBy(0, -innerHeight)`
		case "top":
			js = `scrollTo(0, 0)`
		case "bottom":
			js = `scrollTo(0, (document.scrollingElement || document.documentElement).scrollHeight)`
		default:
			if n, err := strconv.Atoi(how); err == nil {
				js = fmt.Sprintf("scrollBy(0, %d)", n)
				break
			}
			el, err := s.element(ctx, p, how)
			if err != nil {
				return err
			}
			return proto.DOMScrollIntoViewIfNeeded{ObjectID: el.Object.ObjectID}.Call(p)
		}
		var ok bool
		return evalJSON(p, "(() => { "+js+"; return true; })()", &ok)
	})
}

// WaitFor waits up to timeout for text to appear (kind "text"), selector to be visible
// ("selector"), or for timeout itself ("time").
func (s *Session) WaitFor(ctx context.Context, kind, arg string, timeout time.Duration) error {
	return s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		switch kind {
		case "time":
			return sleep(ctx, timeout)
		case "selector":
			return waitSelectorState(ctx, p, arg, false, timeout)
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		js := fmt.Sprintf(`(document.body ? document.body.innerText : "").includes(%q)`, arg)
		err := poll(wctx, 50*time.Millisecond, func() (bool, error) {
			var found bool
			err := evalJSON(p.Context(wctx), js, &found)
			if err != nil && (navigatingError(err) || transientEvalError(err)) {
				return false, nil
			}
			return found, err
		})
		if err != nil && ctx.Err() == nil {
			return newError(CodeSelectorTimeout, false, nil, "the text %q did not appear within %s", arg, timeout)
		}
		return err
	})
}
