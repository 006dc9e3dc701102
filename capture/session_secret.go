package capture

import (
	"context"
	"time"

	"github.com/go-rod/rod"
)

// sensitiveWait bounds Sensitive's look for its element (the action itself looks again).
const sensitiveWait = 2 * time.Second

// sensitiveField is true for an element whose value is a secret: a password input, or a
// field its type, autocomplete, name, id, label or placeholder says holds a password, a
// one-time code, a PIN, a token, a key or a card's number or code.
const sensitiveField = `function () {
  const e = this;
  if (!e || e.nodeType !== 1) return false;
  if ((e.type || "").toLowerCase() === "password") return true;
  const ac = (e.getAttribute("autocomplete") || "").toLowerCase();
  if (/password|one-time-code|cc-number|cc-csc/.test(ac)) return true;
  const said = [e.name, e.id, e.getAttribute("aria-label"), e.getAttribute("placeholder"),
    e.labels && e.labels[0] && e.labels[0].textContent].join(" ");
  return /pass(word|code|phrase)?|secret|token|otp|\bpin\b|cvc|cvv|api[-_ ]?key|card.?number/i.test(said);
}`

// Sensitive reports whether target (a ref, a CSS selector, or "" for the focused element)
// is a field whose value is secret, so what is filled into it is masked where the session's
// commands are shown. An element that cannot be found or read counts as sensitive.
func (s *Session) Sensitive(ctx context.Context, target string) bool {
	ctx, cancel := context.WithTimeout(ctx, sensitiveWait)
	defer cancel()
	secret := true
	_ = s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		var el *rod.Element
		var err error
		if target == "" {
			el, err = p.ElementByJS(rod.Eval(`() => document.activeElement`))
		} else {
			el, err = s.element(ctx, p, target)
		}
		if err != nil {
			return err
		}
		v, err := el.Eval(sensitiveField)
		if err != nil {
			return err
		}
		secret = v.Value.Bool()
		return nil
	})
	return secret
}
