package vcs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"cmp"
	"net/url"
)

// GitHub reporting modes (Config.GitHubMode).
const (
	// ModeStatus reports a commit status (the default).
	ModeStatus = "status"
	// ModeCheck reports a check run: it needs a GitHub App's token (an
	// installation token, or GITHUB_TOKEN in Actions with checks: write);
	// GitHub refuses check runs to personal tokens.
	ModeCheck = "check"
)

// Check run statuses and conclusions, GitHub's words.
const (
	CheckInProgress = "in_progress"
	CheckCompleted  = "completed"

	ConclusionSuccess        = "success"
	ConclusionFailure        = "failure"
	ConclusionActionRequired = "action_required"
	ConclusionNeutral        = "neutral"
)

// Check is one state of a GitHub check run.
type Check struct {
	SHA string
	// Status is CheckInProgress or CheckCompleted; Conclusion is set with
	// CheckCompleted only.
	Status     string
	Conclusion string
	// Title and Summary are the check's output (Summary is Markdown; cut
	// to GitHub's 65,535 characters).
	Title      string
	Summary    string
	DetailsURL string
	// ExternalID is snapq's run id.
	ExternalID string
	// At is when the check started (create) or completed.
	At time.Time
}

// maxSummary is GitHub's limit on output.summary.
const maxSummary = 65535

func (ch Check) body(create bool, name string) map[string]any {
	summary := ch.Summary
	if utf8.RuneCountInString(summary) > maxSummary {
		summary = string([]rune(summary)[:maxSummary-1]) + "…"
	}
	at := ch.At
	if at.IsZero() {
		at = time.Now()
	}
	b := map[string]any{"name": name, "status": ch.Status, "external_id": ch.ExternalID,
		"output": map[string]string{"title": ch.Title, "summary": summary}}
	if ch.DetailsURL != "" {
		b["details_url"] = ch.DetailsURL
	}
	if create {
		b["head_sha"] = ch.SHA
		b["started_at"] = at.UTC().Format(time.RFC3339)
	}
	if ch.Status == CheckCompleted {
		b["conclusion"] = ch.Conclusion
		b["completed_at"] = at.UTC().Format(time.RFC3339)
	}
	return b
}

// CreateCheckRun creates a check run on GitHub (POST
// /repos/{owner}/{repo}/check-runs {name, head_sha, status, started_at,
// details_url, external_id, output{title, summary}}, plus conclusion and
// completed_at when completed) and returns its id.
func (c *Client) CreateCheckRun(ctx context.Context, ch Check) (string, error) {
	if c.Config.Provider != GitHub {
		return "", fmt.Errorf("check runs are GitHub's; the provider is %q", c.Config.Provider)
	}
	var out struct {
		ID json.Number `json:"id"`
	}
	path := c.repoPath() + "/check-runs"
	if err := c.send(ctx, http.MethodPost, path, ch.body(true, cmp.Or(c.Config.Context, DefaultContext)), &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("POST %s: the answer has no check run id", path)
	}
	return out.ID.String(), nil
}

// UpdateCheckRun updates check run id (PATCH
// /repos/{owner}/{repo}/check-runs/{check_run_id} {name, status,
// details_url, external_id, output{title, summary}}, plus conclusion and
// completed_at when completed): a completed check run completes again with
// its new conclusion (an approval turns it to success).
func (c *Client) UpdateCheckRun(ctx context.Context, id string, ch Check) error {
	if c.Config.Provider != GitHub {
		return fmt.Errorf("check runs are GitHub's; the provider is %q", c.Config.Provider)
	}
	return c.send(ctx, http.MethodPatch, c.repoPath()+"/check-runs/"+url.PathEscape(id),
		ch.body(false, cmp.Or(c.Config.Context, DefaultContext)), nil)
}
