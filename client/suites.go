package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// CreateSuite creates a visual-regression suite (POST /v1/suites).
func (c *Client) CreateSuite(ctx context.Context, in SuiteInput) (*Suite, error) {
	var s Suite
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/suites", body: in, want: http.StatusCreated}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSuite returns a suite (GET /v1/suites/:id).
func (c *Client) GetSuite(ctx context.Context, id string) (*Suite, error) {
	var s Suite
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/suites/" + escape(id)}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// UpdateSuite patches a suite (PATCH /v1/suites/:id): each top-level field of
// patch replaces the suite's, a nil value removes an optional one; without
// "webhook" the webhook is kept. patch is JSON-encoded: a map[string]any or
// a struct with omitempty fields.
func (c *Client) UpdateSuite(ctx context.Context, id string, patch any) (*Suite, error) {
	var s Suite
	if err := c.do(ctx, request{method: http.MethodPatch, path: "/v1/suites/" + escape(id), body: patch}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSuite deletes a suite with its runs and baselines (DELETE /v1/suites/:id).
func (c *Client) DeleteSuite(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/suites/" + escape(id), want: http.StatusNoContent}, nil)
}

// ListSuitesPage returns one page of the caller's suites.
func (c *Client) ListSuitesPage(ctx context.Context, opts ListOptions) (*Page[Suite], error) {
	var out struct {
		Suites     []Suite `json:"suites"`
		NextCursor *string `json:"next_cursor"`
	}
	opts.Status = "" // suites have no status filter
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/suites", query: opts.query()}, &out); err != nil {
		return nil, err
	}
	return &Page[Suite]{Items: out.Suites, NextCursor: deref(out.NextCursor)}, nil
}

// ListSuites iterates over the caller's suites.
func (c *Client) ListSuites(ctx context.Context, opts ListOptions) iter.Seq2[Suite, error] {
	return pages(ctx, opts, c.ListSuitesPage)
}

// StartRun captures a suite now and compares it with its baselines
// (POST /v1/suites/:id/runs); WaitRun follows it.
func (c *Client) StartRun(ctx context.Context, suiteID string) (*Run, error) {
	return c.StartRunWith(ctx, suiteID, RunOptions{})
}

// StartRunWith is StartRun on a branch, for a commit or against another
// origin (RunOptions).
func (c *Client) StartRunWith(ctx context.Context, suiteID string, opts RunOptions) (*Run, error) {
	var r Run
	req := request{method: http.MethodPost, path: "/v1/suites/" + escape(suiteID) + "/runs", want: http.StatusAccepted}
	if opts != (RunOptions{}) {
		req.body = opts
	}
	if err := c.do(ctx, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListRunsPage returns one page of a suite's runs, newest first.
func (c *Client) ListRunsPage(ctx context.Context, suiteID string, opts ListOptions) (*Page[Run], error) {
	var out struct {
		Runs       []Run   `json:"runs"`
		NextCursor *string `json:"next_cursor"`
	}
	opts.Status = ""
	path := "/v1/suites/" + escape(suiteID) + "/runs"
	if err := c.do(ctx, request{method: http.MethodGet, path: path, query: opts.query()}, &out); err != nil {
		return nil, err
	}
	return &Page[Run]{Items: out.Runs, NextCursor: deref(out.NextCursor)}, nil
}

// ListRuns iterates over a suite's runs, newest first (without comparisons).
func (c *Client) ListRuns(ctx context.Context, suiteID string, opts ListOptions) iter.Seq2[Run, error] {
	return pages(ctx, opts, func(ctx context.Context, o ListOptions) (*Page[Run], error) {
		return c.ListRunsPage(ctx, suiteID, o)
	})
}

// GetRun returns a run with its comparisons (GET /v1/runs/:id).
func (c *Client) GetRun(ctx context.Context, id string) (*Run, error) {
	var r Run
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/runs/" + escape(id)}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ApproveRun promotes a run's captures to baselines (POST /v1/runs/:id/approve).
func (c *Client) ApproveRun(ctx context.Context, id string, a Approval) (*Run, error) {
	var r Run
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/runs/" + escape(id) + "/approve", body: a}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListGroups returns a run's change groups, the largest first
// (GET /v1/runs/:id/groups).
func (c *Client) ListGroups(ctx context.Context, runID string) ([]Group, error) {
	var out struct {
		Groups []Group `json:"groups"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/runs/" + escape(runID) + "/groups"}, &out); err != nil {
		return nil, err
	}
	return out.Groups, nil
}

// ApproveGroup approves every member of a change group that waits for
// approval, a baseline version each (POST /v1/runs/:id/groups/:group/approve).
func (c *Client) ApproveGroup(ctx context.Context, runID, group string) (*GroupResult, error) {
	return c.groupAction(ctx, runID, group, "approve")
}

// RejectGroup marks every member of a change group that waits for review
// rejected; they stay failed (POST /v1/runs/:id/groups/:group/reject).
func (c *Client) RejectGroup(ctx context.Context, runID, group string) (*GroupResult, error) {
	return c.groupAction(ctx, runID, group, "reject")
}

func (c *Client) groupAction(ctx context.Context, runID, group, action string) (*GroupResult, error) {
	var out GroupResult
	path := "/v1/runs/" + escape(runID) + "/groups/" + escape(group) + "/" + action
	if err := c.do(ctx, request{method: http.MethodPost, path: path}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBaselines returns a suite's active baselines, or every version with
// history (GET /v1/suites/:id/baselines).
func (c *Client) ListBaselines(ctx context.Context, suiteID string, history bool) ([]Baseline, error) {
	return c.ListBranchBaselines(ctx, suiteID, "", history)
}

// ListBranchBaselines is ListBaselines of one branch ("": the suite's main
// branch).
func (c *Client) ListBranchBaselines(ctx context.Context, suiteID, branch string, history bool) ([]Baseline, error) {
	var out struct {
		Baselines []Baseline `json:"baselines"`
	}
	q := url.Values{}
	if history {
		q.Set("history", "true")
	}
	if branch != "" {
		q.Set("branch", branch)
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/suites/" + escape(suiteID) + "/baselines", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Baselines, nil
}

// FlakinessOptions selects what SuiteFlakiness reads: the newest Runs
// finished runs (0: the server's default, 20) of Branch ("": the main
// branch), at most Limit targets (0: every one).
type FlakinessOptions struct {
	Runs   int
	Branch string
	Limit  int
}

// SuiteFlakiness returns each target's recent history and flake score,
// flakiest first (GET /v1/suites/:id/flakiness).
func (c *Client) SuiteFlakiness(ctx context.Context, suiteID string, o FlakinessOptions) (*Flakiness, error) {
	q := url.Values{}
	if o.Runs > 0 {
		q.Set("runs", strconv.Itoa(o.Runs))
	}
	if o.Branch != "" {
		q.Set("branch", o.Branch)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out Flakiness
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/suites/" + escape(suiteID) + "/flakiness", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RestoreBaseline makes an earlier baseline version the active one again, as
// a new version (POST /v1/baselines/:id/restore).
func (c *Client) RestoreBaseline(ctx context.Context, id string) (*Baseline, error) {
	var b Baseline
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/baselines/" + escape(id) + "/restore"}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// MergeBranch promotes a branch's approved baselines to base ("": the
// suite's main branch) and removes them from the branch
// (POST /v1/suites/:id/branches/:branch/merge): a CI step's call when a
// pull request merges.
func (c *Client) MergeBranch(ctx context.Context, suiteID, branch, base string) (*MergeResult, error) {
	var out MergeResult
	req := request{method: http.MethodPost, path: "/v1/suites/" + escape(suiteID) + "/branches/" + escape(branch) + "/merge"}
	if base != "" {
		req.body = map[string]string{"base_branch": base}
	}
	if err := c.do(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ComparisonOptions filter and page a run's comparisons.
type ComparisonOptions struct {
	// Status keeps comparisons in one of these statuses (passed, failed,
	// new, missing, error); none keeps all.
	Status []string
	// Approved, when set, keeps only approved (true) or unapproved (false)
	// comparisons.
	Approved *bool
	// Limit is the page size, 1 to 1000 (the api's default is 100).
	Limit int
	// Cursor continues after the page whose NextCursor it is.
	Cursor string
}

// ListComparisonsPage returns one page of a run's comparisons in the run's
// order (GET /v1/runs/:id/comparisons): a run of thousands without loading
// them all, as GetRun does.
func (c *Client) ListComparisonsPage(ctx context.Context, runID string, o ComparisonOptions) (*Page[Comparison], error) {
	var out struct {
		Comparisons []Comparison `json:"comparisons"`
		NextCursor  *string      `json:"next_cursor"`
	}
	q := url.Values{}
	if len(o.Status) > 0 {
		q.Set("status", strings.Join(o.Status, ","))
	}
	if o.Approved != nil {
		q.Set("approved", strconv.FormatBool(*o.Approved))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	path := "/v1/runs/" + escape(runID) + "/comparisons"
	if err := c.do(ctx, request{method: http.MethodGet, path: path, query: q}, &out); err != nil {
		return nil, err
	}
	return &Page[Comparison]{Items: out.Comparisons, NextCursor: deref(out.NextCursor)}, nil
}

// ListComparisons iterates over a run's comparisons matching o, page by page.
func (c *Client) ListComparisons(ctx context.Context, runID string, o ComparisonOptions) iter.Seq2[Comparison, error] {
	return func(yield func(Comparison, error) bool) {
		for {
			p, err := c.ListComparisonsPage(ctx, runID, o)
			if err != nil {
				yield(Comparison{}, err)
				return
			}
			for _, cmp := range p.Items {
				if !yield(cmp, nil) {
					return
				}
			}
			if p.NextCursor == "" {
				return
			}
			o.Cursor = p.NextCursor
		}
	}
}
