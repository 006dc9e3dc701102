package capture

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-rod/rod"

	"github.com/snapq/snapq/internal/redact"
)

// SecretOriginRefused is the Error code of a type action carrying a secret (Action.Secret)
// that found its element in a document whose origin is not one of Action.Origins, and typed
// nothing. Not retryable. Only a login recipe types secrets, so it is never a job's failure
// code: the jobs that needed the login fail auth_failed with it in their message.
const SecretOriginRefused = "secret_origin_refused"

// checkSecretOrigin refuses to type a secret into el unless the document holding it is on
// one of the action's origins. It runs right before typing, in the element's own document
// (a frame's, when the element is in one), after the element has focus: a secret action
// without origins is always refused.
func checkSecretOrigin(env *actionEnv, el *rod.Element) error {
	if !env.a.Secret {
		return nil
	}
	obj, err := el.Eval(`function () {
		const d = this.ownerDocument, a = d && d.activeElement;
		return {origin: d && d.location ? d.location.origin : "", focused: a === this};
	}`)
	if err != nil {
		return fmt.Errorf("check the origin of %q: %w", env.a.Selector, err)
	}
	origin := obj.Value.Get("origin").Str()
	if origin == "" || origin == "null" || !slices.Contains(env.a.Origins, origin) {
		return newError(SecretOriginRefused, false, nil,
			"refused to type a secret into %q on %s: not one of the auth profile's origins", env.a.Selector, redact.URL(origin))
	}
	if !obj.Value.Get("focused").Bool() {
		return errors.New("the element did not keep the focus: the secret was not typed")
	}
	return nil
}

// maskedError is a secret action's error with every encoding of the secret masked; the
// original stays reachable for errors.Is/As (codes, context errors) but never prints.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

func maskSecretError(a Action, err error) error {
	if err == nil || !a.Secret {
		return err
	}
	return &maskedError{msg: redact.Secrets(err.Error(), a.Text), err: err}
}
