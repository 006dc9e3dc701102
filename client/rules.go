package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Changes explained by elements and suite rules (docs/api/diffs.md "Changes explained by elements").

// Rect is a box in pixels.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// ElementState is an element as one capture saw it (box in segment image pixels).
type ElementState struct {
	Box Rect `json:"box"`
	// Container is the box of the element's parent (nil: not recorded).
	Container *Rect             `json:"container,omitempty"`
	Text      string            `json:"text,omitempty"`
	Style     map[string]string `json:"style,omitempty"`
}

// Change is one explained difference of a comparison.
type Change struct {
	// Kind is text_changed, style_changed, moved, added, removed, image_changed, frame_changed or unattributed.
	Kind       string        `json:"kind"`
	Selector   string        `json:"selector,omitempty"`
	Tag        string        `json:"tag,omitempty"`
	Box        Rect          `json:"box"`
	Before     *ElementState `json:"before,omitempty"`
	After      *ElementState `json:"after,omitempty"`
	Properties []string      `json:"properties,omitempty"`
	DX         int           `json:"dx,omitempty"`
	DY         int           `json:"dy,omitempty"`
	// SuppressedBy is the id of the rule that suppressed the change.
	SuppressedBy string `json:"suppressed_by,omitempty"`
}

// ComparisonChanges is GET /v1/comparisons/:id/changes.
type ComparisonChanges struct {
	ComparisonID string   `json:"comparison_id"`
	RunID        string   `json:"run_id"`
	SuiteID      string   `json:"suite_id"`
	Target       string   `json:"target"`
	Viewport     string   `json:"viewport"`
	Checkpoint   string   `json:"checkpoint,omitempty"`
	Segment      int      `json:"segment"`
	Status       string   `json:"status"`
	Changes      []Change `json:"changes"`
}

// RuleInput is the body of a new rule (or its preview).
type RuleInput struct {
	// Kind is ignore_element or dynamic_text.
	Kind     string `json:"kind"`
	Selector string `json:"selector"`
	// Target limits the rule to one target; empty: the whole suite.
	Target string `json:"target,omitempty"`
	// Pattern is dynamic_text's RE2 regular expression.
	Pattern   string     `json:"pattern,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Rule is a suite rule.
type Rule struct {
	ID        string     `json:"id"`
	SuiteID   string     `json:"suite_id"`
	Kind      string     `json:"kind"`
	Selector  string     `json:"selector"`
	Target    string     `json:"target,omitempty"`
	Pattern   string     `json:"pattern,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	Active    bool       `json:"active"`
	// Suppressed counts the changes the rule suppressed in the suite's last runs.
	Suppressed int `json:"suppressed"`
}

// RulePreview is what a rule would have suppressed in the suite's last runs.
type RulePreview struct {
	Runs          int `json:"runs"`
	Changes       int `json:"changes"`
	WouldSuppress int `json:"would_suppress"`
}

// ComparisonChanges returns a comparison's changes (GET /v1/comparisons/:id/changes).
func (c *Client) ComparisonChanges(ctx context.Context, comparisonID string) (*ComparisonChanges, error) {
	var out ComparisonChanges
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/comparisons/" + escape(comparisonID) + "/changes"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateRule adds a rule to a suite (POST /v1/suites/:id/rules).
func (c *Client) CreateRule(ctx context.Context, suiteID string, in RuleInput) (*Rule, error) {
	var r Rule
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/suites/" + escape(suiteID) + "/rules", body: in, want: http.StatusCreated}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PreviewRule counts the changes of the suite's last runs a rule would
// suppress, storing nothing (POST /v1/suites/:id/rules/preview).
func (c *Client) PreviewRule(ctx context.Context, suiteID string, in RuleInput) (*RulePreview, error) {
	var p RulePreview
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/suites/" + escape(suiteID) + "/rules/preview", body: in}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListRules returns a suite's rules with their suppressed counts (GET /v1/suites/:id/rules).
func (c *Client) ListRules(ctx context.Context, suiteID string) ([]Rule, error) {
	var out struct {
		Rules []Rule `json:"rules"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/suites/" + escape(suiteID) + "/rules"}, &out); err != nil {
		return nil, err
	}
	return out.Rules, nil
}

// DeleteRule deletes a rule (DELETE /v1/rules/:id).
func (c *Client) DeleteRule(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/rules/" + escape(id), want: http.StatusNoContent}, nil)
}

// VolatilityOptions ask GET /v1/suites/:id/volatility; zero fields take the
// server's defaults (10 runs, min 5, threshold 0.5).
type VolatilityOptions struct {
	Runs      int
	MinRuns   int
	Threshold float64
}

// Volatility is where a suite's pages change by themselves, and the rules
// that would quiet them.
type Volatility struct {
	SuiteID     string           `json:"suite_id"`
	Runs        int              `json:"runs"`
	MinRuns     int              `json:"min_runs"`
	Threshold   float64          `json:"threshold"`
	Regions     []VolatileRegion `json:"regions"`
	Suggestions []struct {
		Rule    RuleInput   `json:"rule"`
		Preview RulePreview `json:"preview"`
	} `json:"suggestions"`
}

// VolatileRegion is one element of a target at a viewport and how often it
// changed in place over the runs.
type VolatileRegion struct {
	Target      string `json:"target"`
	Viewport    string `json:"viewport"`
	Selector    string `json:"selector"`
	ChangedRuns int    `json:"changed_runs"`
	// ApprovedRuns counts runs in which a human approved a change of it: never volatile.
	ApprovedRuns int      `json:"approved_runs"`
	Share        float64  `json:"share"`
	Volatile     bool     `json:"volatile"`
	Kinds        []string `json:"kinds"`
}

// SuiteVolatility learns a suite's volatility (GET /v1/suites/:id/volatility).
// Accept a suggestion with CreateRule(ctx, suiteID, s.Rule).
func (c *Client) SuiteVolatility(ctx context.Context, suiteID string, o VolatilityOptions) (*Volatility, error) {
	q := url.Values{}
	if o.Runs > 0 {
		q.Set("runs", strconv.Itoa(o.Runs))
	}
	if o.MinRuns > 0 {
		q.Set("min_runs", strconv.Itoa(o.MinRuns))
	}
	if o.Threshold > 0 {
		q.Set("threshold", strconv.FormatFloat(o.Threshold, 'g', -1, 64))
	}
	var out Volatility
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/suites/" + escape(suiteID) + "/volatility", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
