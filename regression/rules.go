package regression

import (
	"context"
	"fmt"
	"image"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Rules are a reviewer's answers to recurring changes, made from a change in
// one action. An ignore_element rule masks the boxes of the elements its
// selector matches, in both captures, as the suite's ignore.selectors do. A
// dynamic_text rule suppresses a text change of a matching element when the
// text differs only where its pattern matches and the element's box kept its
// size and place: only layout changes count. A rule applies to one target or,
// without one, the whole suite, until it expires.
//
// Selectors are matched against the box trees the captures recorded (the
// element and its recorded ancestors: tag, id, classes, data-testid, role),
// so a rule also applies to captures taken before it existed. Structural
// pseudo-classes (:nth-of-type) see only recorded, visible siblings; a
// change's own selector always matches it.

// Rule kinds.
const (
	RuleIgnoreElement = "ignore_element"
	RuleDynamicText   = "dynamic_text"
)

const (
	// MaxRulePattern bounds a dynamic_text pattern (RE2, linear time).
	MaxRulePattern = 200
	// MaxSuiteRules bounds the rules of one suite.
	MaxSuiteRules = 200
	// RuleStatsRuns is how many of a suite's last runs rule counts and previews cover.
	RuleStatsRuns = 10
	// dynamicPlaceholder stands for a pattern's match when texts are compared.
	dynamicPlaceholder = "\x00"
)

// Rule is one suite rule.
type Rule struct {
	ID        string     `json:"id"`
	SuiteID   string     `json:"suite_id"`
	Kind      string     `json:"kind"`
	Selector  string     `json:"selector"`
	Target    string     `json:"target,omitempty"`
	Pattern   string     `json:"pattern,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	// Suppressed counts the changes the rule suppressed in the suite's last
	// RuleStatsRuns runs (read side).
	Suppressed int `json:"suppressed"`

	re *regexp.Regexp
}

// RuleInput is the body of POST /v1/suites/:id/rules (and its preview).
type RuleInput struct {
	Kind      string     `json:"kind"`
	Selector  string     `json:"selector"`
	Target    string     `json:"target"`
	Pattern   string     `json:"pattern"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// NewRule validates in for suite s; the error is a *jobs.ValidationError
// naming each bad field.
func NewRule(s *Suite, in RuleInput, now time.Time) (*Rule, error) {
	var errs jobs.FieldErrors
	r := &Rule{ID: jobs.NewID(), SuiteID: s.ID, Kind: in.Kind, Selector: strings.TrimSpace(in.Selector),
		Target: strings.TrimSpace(in.Target), Pattern: in.Pattern, CreatedAt: now}
	switch in.Kind {
	case RuleIgnoreElement:
		if in.Pattern != "" {
			errs.Add("invalid_option", "pattern", "only a dynamic_text rule has a pattern")
		}
	case RuleDynamicText:
		if in.Pattern == "" || len(in.Pattern) > MaxRulePattern {
			errs.Add("invalid_option", "pattern", fmt.Sprintf("must be a regular expression of 1-%d characters", MaxRulePattern))
		} else if re, err := regexp.Compile(in.Pattern); err != nil {
			errs.Add("invalid_option", "pattern", "not a valid RE2 regular expression: "+err.Error())
		} else if re.MatchString("") {
			errs.Add("invalid_option", "pattern", "must not match the empty text")
		} else {
			r.re = re
		}
	default:
		errs.Add("invalid_option", "kind", "must be ignore_element or dynamic_text")
	}
	if r.Selector == "" || len(r.Selector) > jobs.MaxSelectorLength {
		errs.Add("invalid_option", "selector", fmt.Sprintf("must be a selector of 1-%d characters", jobs.MaxSelectorLength))
	} else if _, err := compileSelector(r.Selector); err != nil {
		errs.Add("invalid_option", "selector", err.Error())
	}
	if r.Target != "" && !s.hasTarget(r.Target) {
		errs.Add("invalid_option", "target", fmt.Sprintf("the suite has no target %q", r.Target))
	}
	if in.ExpiresAt != nil {
		if !in.ExpiresAt.After(now) {
			errs.Add("invalid_option", "expires_at", "must be in the future")
		}
		t := in.ExpiresAt.UTC()
		r.ExpiresAt = &t
	}
	if len(errs) > 0 {
		return nil, &jobs.ValidationError{Fields: errs}
	}
	return r, nil
}

func (s *Suite) hasTarget(name string) bool {
	for _, t := range s.Spec.Targets {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Active reports whether the rule applies to target at now.
func (r *Rule) Active(target string, now time.Time) bool {
	return (r.ExpiresAt == nil || now.Before(*r.ExpiresAt)) && (r.Target == "" || r.Target == target)
}

// pattern is the compiled dynamic_text pattern (nil when it does not compile).
func (r *Rule) pattern() *regexp.Regexp {
	if r.re == nil && r.Pattern != "" {
		r.re, _ = regexp.Compile(r.Pattern)
	}
	return r.re
}

// Suppresses reports whether the rule suppresses a change (its target apart).
func (r *Rule) Suppresses(ch Change) bool {
	if ch.Kind == ChangeUnattributed || len(ch.Ancestry) == 0 {
		return false
	}
	switch r.Kind {
	case RuleIgnoreElement:
		// the element or an ancestor is ignored
		for i := range ch.Ancestry {
			if matchNodes(r.Selector, ch.Ancestry[:i+1]) {
				return true
			}
		}
		return false
	case RuleDynamicText:
		re := r.pattern()
		if re == nil || ch.Kind != ChangeText || ch.Before == nil || ch.After == nil || !matchNodes(r.Selector, ch.Ancestry) {
			return false
		}
		b, a := ch.Before, ch.After
		if b.Box != a.Box { // its size or place changed: a layout change counts
			return false
		}
		return b.Text != a.Text && re.ReplaceAllString(b.Text, dynamicPlaceholder) == re.ReplaceAllString(a.Text, dynamicPlaceholder)
	}
	return false
}

// ignoreBoxes returns the boxes (page CSS px) of the tree's elements an
// ignore_element rule matches.
func ignoreBoxes(rules []*Rule, t *capture.BoxTree) []Rect {
	if t == nil {
		return nil
	}
	var out []Rect
	for _, r := range rules {
		if r.Kind != RuleIgnoreElement {
			continue
		}
		for i, e := range t.Elements {
			if e.Selector == r.Selector || e.Path == r.Selector || matchNodes(r.Selector, ancestry(t, i)) {
				out = append(out, Rect{X: e.X, Y: e.Y, Width: e.Width, Height: e.Height})
				if len(out) >= maxMaskBoxesPerCapture {
					return out
				}
			}
		}
	}
	return out
}

// maxMaskBoxesPerCapture bounds the boxes rules mask in one capture.
const maxMaskBoxesPerCapture = 1000

// applyRules marks the changes the rules suppress and returns the image
// rectangles their pixels occupy.
func applyRules(rules []*Rule, changes []Change) []image.Rectangle {
	var mask []image.Rectangle
	for i := range changes {
		for _, r := range rules {
			if r.Suppresses(changes[i]) {
				changes[i].SuppressedBy = r.ID
				b := changes[i].Box
				mask = append(mask, image.Rect(b.X, b.Y, b.X+b.Width, b.Y+b.Height))
				break
			}
		}
	}
	return mask
}

// matchNodes reports whether selector matches the last of nodes, the others
// being its ancestors, root first. role=<role>[name="<name>"] matches an
// element's role and accessible name; a node's own stable selector matches it.
func matchNodes(selector string, nodes []Node) bool {
	if len(nodes) == 0 {
		return false
	}
	last := nodes[len(nodes)-1]
	if last.Selector == selector || last.Path == selector {
		return true
	}
	m, err := compileSelector(selector)
	if err != nil {
		return false
	}
	if m.role != "" {
		return last.Role == m.role && (m.name == "" || last.Name == m.name)
	}
	return m.css.Match(synthetic(nodes))
}

// synthetic builds an html > body > … chain of the nodes, returning the last.
func synthetic(nodes []Node) *html.Node {
	root := &html.Node{Type: html.DocumentNode}
	parent := &html.Node{Type: html.ElementNode, Data: "html", DataAtom: atom.Html}
	root.AppendChild(parent)
	if nodes[0].Tag != "body" && nodes[0].Tag != "html" {
		body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
		parent.AppendChild(body)
		parent = body
	}
	var n *html.Node
	for _, nd := range nodes {
		if nd.Tag == "html" {
			continue
		}
		n = &html.Node{Type: html.ElementNode, Data: nd.Tag, DataAtom: atom.Lookup([]byte(nd.Tag))}
		for _, kv := range [][2]string{{"id", nd.ID}, {"class", nd.Classes}, {"data-testid", nd.TestID}, {"role", nd.Role}, {"aria-label", nd.Name}} {
			if kv[1] != "" {
				n.Attr = append(n.Attr, html.Attribute{Key: kv[0], Val: kv[1]})
			}
		}
		parent.AppendChild(n)
		parent = n
	}
	if n == nil {
		return parent
	}
	return n
}

// compiled is a parsed rule selector.
type compiled struct {
	css        cascadia.Matcher
	role, name string
}

var roleSelector = regexp.MustCompile(`^role=([a-z]+)(?:\[name="((?:[^"\\]|\\.)*)"\])?$`)

// selectorCache holds parsed selectors, at most maxCachedSelectors.
var selectorCache = struct {
	sync.Mutex
	m map[string]compiled
}{m: map[string]compiled{}}

const maxCachedSelectors = 10000

func compileSelector(s string) (compiled, error) {
	selectorCache.Lock()
	c, ok := selectorCache.m[s]
	selectorCache.Unlock()
	if ok {
		return c, nil
	}
	if strings.HasPrefix(s, "role=") {
		m := roleSelector.FindStringSubmatch(s)
		if m == nil {
			return c, fmt.Errorf(`a role selector is role=<role>[name="<accessible name>"]`)
		}
		c.role, c.name = m[1], strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
	} else {
		sel, err := cascadia.ParseGroup(s)
		if err != nil {
			return c, fmt.Errorf("not a CSS selector: %v", err)
		}
		c.css = sel
	}
	selectorCache.Lock()
	if len(selectorCache.m) < maxCachedSelectors {
		selectorCache.m[s] = c
	}
	selectorCache.Unlock()
	return c, nil
}

// RuleStore is what the API needs of rules and changes. store.Store implements it.
type RuleStore interface {
	RuleSource
	CreateRule(ctx context.Context, r *Rule) error
	GetRule(ctx context.Context, id string) (*Rule, error)
	DeleteRule(ctx context.Context, id string) error
	// SuppressedCounts counts per rule id the changes suppressed in the suite's last runs.
	SuppressedCounts(ctx context.Context, suiteID string, runs int) (map[string]int, error)
	// RecentChanges returns at most limit changes of the suite's last runs.
	RecentChanges(ctx context.Context, suiteID string, runs, limit int) ([]TargetChange, error)
	// ComparisonChanges returns a comparison (no artifacts) with its changes.
	ComparisonChanges(ctx context.Context, id string) (*Comparison, error)
}

// TargetChange is a stored change and the target its comparison showed.
type TargetChange struct {
	Target string
	Change Change
}

// maxPreviewChanges bounds the changes a preview reads.
const maxPreviewChanges = 50_000

// ParseRule decodes and validates a rule's body for suite s.
func ParseRule(s *Suite, body []byte, now time.Time) (*Rule, error) {
	var in RuleInput
	if errs, ok := jobs.DecodeStrict(body, &in, ""); !ok || len(errs) > 0 {
		return nil, jobs.ValidationErrors(errs)
	}
	return NewRule(s, in, now)
}

// Preview is what a rule would have done over the suite's last runs.
type Preview struct {
	Runs int `json:"runs"`
	// Changes counts the changes of those runs no rule suppressed.
	Changes int `json:"changes"`
	// WouldSuppress counts those the rule would suppress.
	WouldSuppress int `json:"would_suppress"`
}

// PreviewRule counts the changes of the suite's last RuleStatsRuns runs that
// r would suppress, among those no rule suppressed.
func PreviewRule(ctx context.Context, st RuleStore, r *Rule) (Preview, error) {
	p := Preview{Runs: RuleStatsRuns}
	tcs, err := st.RecentChanges(ctx, r.SuiteID, RuleStatsRuns, maxPreviewChanges)
	if err != nil {
		return p, err
	}
	for _, tc := range tcs {
		if tc.Change.SuppressedBy != "" {
			continue
		}
		p.Changes++
		if (r.Target == "" || r.Target == tc.Target) && r.Suppresses(tc.Change) {
			p.WouldSuppress++
		}
	}
	return p, nil
}
