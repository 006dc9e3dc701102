package jobs

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/snapq/snapq/capture"
)

// Action limits. They are documented in docs/api/capture.md ("Actions").
const (
	MaxActions            = 50
	DefaultActionsTimeout = 30 * time.Second // never more than the job's timeout_ms
	MaxActionTimeout      = 120 * time.Second
	MaxActionWait         = 30 * time.Second
	MaxKeyDelay           = time.Second
	MaxActionText         = 10_000 // characters of type.text, select.value
	MaxExpressionLength   = 10_000
	MaxScrollPX           = 1_000_000
)

// actionNameRe keeps screenshot names apart from segment numbers and from each other's
// segment names: "results" gives <job>-results.png or <job>-results-001.png.
var actionNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// actionFields lists, per action type, the fields it accepts besides type and optional.
var actionFields = map[string][]string{
	capture.ActionClick:             {"selector", "timeout_ms"},
	capture.ActionType:              {"selector", "text", "delay_ms", "timeout_ms"},
	capture.ActionPress:             {"key"},
	capture.ActionHover:             {"selector", "timeout_ms"},
	capture.ActionSelect:            {"selector", "value", "timeout_ms"},
	capture.ActionScroll:            {"selector", "by_px", "to", "timeout_ms"},
	capture.ActionWait:              {"ms"},
	capture.ActionWaitForSelector:   {"selector", "state", "timeout_ms"},
	capture.ActionWaitForNavigation: {"timeout_ms"},
	capture.ActionEvaluate:          {"expression"},
	capture.ActionScreenshot:        {"name", "mode", "format", "max_segments"},
}

// actionTypes lists the action types in documentation order.
var actionTypes = []string{capture.ActionClick, capture.ActionType, capture.ActionPress, capture.ActionHover,
	capture.ActionSelect, capture.ActionScroll, capture.ActionWait, capture.ActionWaitForSelector,
	capture.ActionWaitForNavigation, capture.ActionEvaluate, capture.ActionScreenshot}

// ActionInput is the wire form of one action.
type ActionInput struct {
	Type        *string  `json:"type,omitempty"`
	Optional    *bool    `json:"optional,omitempty"`
	Selector    *string  `json:"selector,omitempty"`
	Text        *string  `json:"text,omitempty"`
	DelayMS     *float64 `json:"delay_ms,omitempty"`
	Key         *string  `json:"key,omitempty"`
	Value       *string  `json:"value,omitempty"`
	ByPX        *float64 `json:"by_px,omitempty"`
	To          *string  `json:"to,omitempty"`
	MS          *float64 `json:"ms,omitempty"`
	State       *string  `json:"state,omitempty"`
	TimeoutMS   *float64 `json:"timeout_ms,omitempty"`
	Expression  *string  `json:"expression,omitempty"`
	Name        *string  `json:"name,omitempty"`
	Mode        *string  `json:"mode,omitempty"`
	Format      *string  `json:"format,omitempty"`
	MaxSegments *float64 `json:"max_segments,omitempty"`

	given []string // keys present in the JSON object, sorted
}

// UnmarshalJSON records which keys were given, so validation can name unknown and
// inapplicable ones.
func (a *ActionInput) UnmarshalJSON(data []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return err
	}
	type plain ActionInput
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*a = ActionInput(p)
	a.given = make([]string, 0, len(keys))
	for k := range keys {
		a.given = append(a.given, k)
	}
	sort.Strings(a.given)
	return nil
}

// Action is a validated action as stored with the job; fields that do not apply are empty.
type Action struct {
	Type        string `json:"type"`
	Optional    bool   `json:"optional,omitempty"`
	Selector    string `json:"selector,omitempty"`
	Text        string `json:"text,omitempty"`
	DelayMS     int    `json:"delay_ms,omitempty"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value,omitempty"`
	ByPX        int    `json:"by_px,omitempty"`
	To          string `json:"to,omitempty"`
	MS          int    `json:"ms,omitempty"`
	State       string `json:"state,omitempty"`
	TimeoutMS   int    `json:"timeout_ms,omitempty"`
	Expression  string `json:"expression,omitempty"`
	Name        string `json:"name,omitempty"`
	Mode        string `json:"mode,omitempty"`
	Format      string `json:"format,omitempty"`
	MaxSegments int    `json:"max_segments,omitempty"`
}

// actions validates a list of actions; it replaces *dst as a whole when every entry is valid.
func (v *validator) actions(dst *[]Action, src []ActionInput, field string) {
	if len(src) > MaxActions {
		v.add(field, fmt.Sprintf("at most %d actions", MaxActions))
		return
	}
	n := len(*v.errs)
	out := make([]Action, 0, len(src))
	names := map[string]bool{}
	for i, in := range src {
		p := fmt.Sprintf("%s[%d]", field, i)
		a, ok := v.action(in, p)
		if ok && a.Type == capture.ActionScreenshot {
			if names[a.Name] {
				v.add(p+".name", fmt.Sprintf("%q names an earlier screenshot action", a.Name))
			}
			names[a.Name] = true
		}
		out = append(out, a)
	}
	if len(*v.errs) == n {
		*dst = out
	}
}

func (v *validator) action(in ActionInput, p string) (Action, bool) {
	n := len(*v.errs)
	var a Action
	if in.Type == nil {
		v.add(p+".type", "required: one of "+joinQuoted(actionTypes))
		return a, false
	}
	allowed, ok := actionFields[*in.Type]
	if !ok {
		v.add(p+".type", "must be one of "+joinQuoted(actionTypes))
		return a, false
	}
	a.Type = *in.Type
	v.actionFieldsGiven(in.given, allowed, a.Type, p)
	if in.Optional != nil {
		a.Optional = *in.Optional
	}
	needSelector := slices.Contains(allowed, "selector") && a.Type != capture.ActionScroll
	v.actionText(&a.Selector, in.Selector, p+".selector", needSelector, false, MaxSelectorLength)
	v.intIn(&a.TimeoutMS, in.TimeoutMS, p+".timeout_ms", 0, int(MaxActionTimeout/time.Millisecond))
	v.actionOfType(&a, in, p)
	return a, len(*v.errs) == n
}

// actionFieldsGiven names each given field that does not apply to an action of type t, or
// that no action has.
func (v *validator) actionFieldsGiven(given, allowed []string, t, p string) {
	for _, k := range given {
		switch {
		case k == "type" || k == "optional" || slices.Contains(allowed, k):
		case slices.ContainsFunc(actionTypes, func(t string) bool { return slices.Contains(actionFields[t], k) }):
			v.add(p+"."+k, fmt.Sprintf("does not apply to a %s action", t))
		default:
			v.errs.Add("unknown_field", p+"."+k, fmt.Sprintf("unknown field %q", k))
		}
	}
}

// actionOfType validates and copies the fields of a's type.
func (v *validator) actionOfType(a *Action, in ActionInput, p string) {
	switch a.Type {
	case capture.ActionType:
		v.actionText(&a.Text, in.Text, p+".text", true, true, MaxActionText)
		v.intIn(&a.DelayMS, in.DelayMS, p+".delay_ms", 0, int(MaxKeyDelay/time.Millisecond))
	case capture.ActionPress:
		v.pressKey(a, in.Key, p)
	case capture.ActionSelect:
		v.actionText(&a.Value, in.Value, p+".value", true, true, MaxActionText)
	case capture.ActionScroll:
		v.scroll(a, in, p)
	case capture.ActionWait:
		if in.MS == nil {
			v.add(p+".ms", "required")
		}
		v.intIn(&a.MS, in.MS, p+".ms", 0, int(MaxActionWait/time.Millisecond))
	case capture.ActionWaitForSelector:
		a.State = "visible"
		v.enum(&a.State, in.State, p+".state", "visible", "hidden")
	case capture.ActionEvaluate:
		v.actionText(&a.Expression, in.Expression, p+".expression", true, false, MaxExpressionLength)
	case capture.ActionScreenshot:
		v.actionScreenshot(a, in, p)
	}
}

// pressKey validates a press action's key.
func (v *validator) pressKey(a *Action, key *string, p string) {
	switch {
	case key == nil:
		v.add(p+".key", "required")
	case !capture.ValidKey(*key):
		v.add(p+".key", "must be one printable ASCII character or one of "+joinQuoted(capture.PressKeys()))
	default:
		a.Key = *key
	}
}

// scroll validates a scroll action: exactly one of selector, by_px and to.
func (v *validator) scroll(a *Action, in ActionInput, p string) {
	given := 0
	for _, g := range []bool{in.Selector != nil, in.ByPX != nil, in.To != nil} {
		if g {
			given++
		}
	}
	if given != 1 {
		v.add(p, "a scroll action takes exactly one of selector, by_px and to")
	}
	v.intIn(&a.ByPX, in.ByPX, p+".by_px", -MaxScrollPX, MaxScrollPX)
	v.enum(&a.To, in.To, p+".to", "bottom")
}

// actionScreenshot validates a screenshot action: its name and its screenshot options.
func (v *validator) actionScreenshot(a *Action, in ActionInput, p string) {
	switch {
	case in.Name == nil:
		v.add(p+".name", "required")
	case !actionNameRe.MatchString(*in.Name):
		v.add(p+".name", "must be 1 to 40 of a-z, 0-9 and _, starting with a letter")
	default:
		a.Name = *in.Name
	}
	a.Mode = capture.ModeViewport
	v.enum(&a.Mode, in.Mode, p+".mode", capture.ModeViewport, capture.ModeFull, capture.ModeSegments)
	v.enum(&a.Format, in.Format, p+".format", capture.FormatPNG, capture.FormatJPEG, capture.FormatWebP)
	v.intIn(&a.MaxSegments, in.MaxSegments, p+".max_segments", 1, capture.HardMaxSegments)
}

// actionText copies a string field of at most maxLen bytes; required fields must be given,
// and non-empty unless empty is allowed (type "" or select an option whose value is "").
func (v *validator) actionText(dst *string, src *string, field string, required, allowEmpty bool, maxLen int) {
	switch {
	case src == nil && required:
		v.add(field, "required")
	case src == nil:
	case *src == "" && !allowEmpty:
		v.add(field, "must not be empty")
	case len(*src) > maxLen:
		v.add(field, fmt.Sprintf("must be at most %d bytes", maxLen))
	default:
		*dst = *src
	}
}

// actionsTimeout is the actions' budget: actions_timeout_ms or the default, within the job's
// timeout.
func (o Options) actionsTimeout() time.Duration {
	d := DefaultActionsTimeout
	if o.ActionsTimeoutMS > 0 {
		d = time.Duration(o.ActionsTimeoutMS) * time.Millisecond
	}
	return min(d, o.JobTimeout())
}

// ResolveActions validates src as the actions of a job and converts them to the
// renderer's (an auth profile's login steps); errors, in errs, name fields under field.
func ResolveActions(src []ActionInput, field string, errs *FieldErrors) []capture.Action {
	v := validator{errs: errs}
	var as []Action
	v.actions(&as, src, field)
	return captureActions(as)
}

// captureActions converts stored actions to the renderer's.
func captureActions(as []Action) []capture.Action {
	if len(as) == 0 {
		return nil
	}
	out := make([]capture.Action, len(as))
	for i, a := range as {
		ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
		out[i] = capture.Action{
			Type: a.Type, Selector: a.Selector, Text: a.Text, KeyDelay: ms(a.DelayMS), Key: a.Key,
			Value: a.Value, ByPX: a.ByPX, To: a.To, Duration: ms(a.MS), State: a.State,
			Timeout: ms(a.TimeoutMS), Expression: a.Expression, Name: a.Name, Optional: a.Optional,
			Screenshot: capture.Screenshot{Mode: a.Mode, Format: a.Format, MaxSegments: a.MaxSegments},
		}
	}
	return out
}

// checkActionsTimeout refuses an actions_timeout_ms over the job's resolved timeout_ms.
func (o Options) checkActionsTimeout(batch *OptionsInput, batchPrefix string, target *OptionsInput, targetPrefix string, errs *FieldErrors) {
	if o.ActionsTimeoutMS <= o.TimeoutMS {
		return
	}
	field := targetPrefix + ".actions_timeout_ms"
	if target == nil || target.ActionsTimeoutMS == nil {
		field = batchPrefix + ".actions_timeout_ms"
	}
	errs.Add("invalid_option", field, fmt.Sprintf("must be at most the job's timeout_ms (%d)", o.TimeoutMS))
}
