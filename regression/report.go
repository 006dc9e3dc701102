package regression

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/vcs"
)

// VCSStore is what Reporter reads and writes.
type VCSStore interface {
	GetSuite(ctx context.Context, id string) (*Suite, error)
	// GetRun returns a run with its counts.
	GetRun(ctx context.Context, id string) (*Run, error)
	// VCSComment is the id of the comment a suite's runs edit on pull
	// request pr ("" before the first); SetVCSComment keeps it.
	VCSComment(ctx context.Context, suiteID string, pr int) (string, error)
	SetVCSComment(ctx context.Context, suiteID string, pr int, id string) error
	// WithCheckRun calls fn with the run's GitHub check run id ("" before
	// the first) and keeps the id fn returns; calls for one run are
	// serialized, so a run gets one check run however its reports race.
	WithCheckRun(ctx context.Context, runID string, fn func(id string) (string, error)) error
}

// Reporter runs vcs:report tasks: it reports a run, as it is now, to its
// suite's code host: a commit status (pending while it runs; success when
// it passed or was approved; failure when it failed or needs review) with
// the counts and a link to the run, and, for a finished run with a pull
// request, the pull request's one snapq comment, edited in place.
type Reporter struct {
	Repo VCSStore
	// HTTP sends the requests (the worker's: through the egress guard).
	HTTP   *http.Client
	Logger *slog.Logger
}

// Run is the asynq handler of jobs.KindVCSReport.
func (rp *Reporter) Run(ctx context.Context, p jobs.VCSReportPayload) error {
	r, err := rp.Repo.GetRun(ctx, p.RunID)
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("run %s: %w: %w", p.RunID, err, jobs.ErrNoRetry)
	}
	if err != nil {
		return err
	}
	s, err := rp.Repo.GetSuite(ctx, r.SuiteID)
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("suite %s: %w: %w", r.SuiteID, err, jobs.ErrNoRetry)
	}
	if err != nil {
		return err
	}
	if s.VCS == nil || r.Commit == "" {
		return nil // the suite's vcs was removed since
	}
	if s.VCS.Token == "" && s.SecretsErr != nil {
		return fmt.Errorf("suite %s: the vcs token cannot be read: %w: %w", s.ID, s.SecretsErr, jobs.ErrNoRetry)
	}
	c := &vcs.Client{HTTP: rp.HTTP, Config: vcs.Config{Provider: s.VCS.Provider, APIURL: s.VCS.APIURL, Repo: s.VCS.Repo,
		Token: s.VCS.Token, Context: s.VCS.Context}}
	state, desc := StatusOf(r)
	link := ReviewURL(r.DashboardURL, r.ID)
	if s.VCS.Provider == vcs.GitHub && s.VCS.GitHubMode == vcs.ModeCheck {
		ch := CheckOf(r, s.Name, link)
		err := rp.Repo.WithCheckRun(ctx, r.ID, func(id string) (string, error) {
			if id == "" {
				return c.CreateCheckRun(ctx, ch)
			}
			return id, c.UpdateCheckRun(ctx, id, ch)
		})
		if err != nil {
			return permanent(err)
		}
	} else if err := c.SetStatus(ctx, vcs.Status{SHA: r.Commit, State: state, Description: desc, TargetURL: link}); err != nil {
		return permanent(err)
	}
	jobs.Log(rp.Logger).Info("run reported", "run_id", r.ID, "state", state, "provider", s.VCS.Provider)
	if r.PullRequest == 0 || r.Status == RunRunning {
		return nil
	}
	id, err := rp.Repo.VCSComment(ctx, s.ID, r.PullRequest)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("### snapq · %s\n\n**%s** — %s\n\nCommit `%s`", s.Name, r.Status, desc, r.Commit)
	if r.Branch != "" {
		body += fmt.Sprintf(" on `%s` (baselines: `%s`, else `%s`)", r.Branch, r.Branch, r.BaseBranch)
	}
	if link != "" {
		body += fmt.Sprintf("\n\n[Review the run](%s)", link)
	}
	newID, err := c.UpsertComment(ctx, r.PullRequest, id, body)
	if err != nil {
		return permanent(err)
	}
	if newID != id {
		return rp.Repo.SetVCSComment(ctx, s.ID, r.PullRequest, newID)
	}
	return nil
}

// StatusOf is a run's commit status and its description ("3 changed, 1
// new, 120 passed").
func StatusOf(r *Run) (state, description string) {
	c := r.Counts
	summary := vcs.Summary(c.Failed, c.New, c.Passed, c.Missing, c.Error)
	switch r.Status {
	case RunRunning:
		return vcs.Pending, fmt.Sprintf("comparing %d captures", c.Pending+c.Total)
	case RunPassed:
		return vcs.Success, summary
	case RunApproved:
		return vcs.Success, "approved: " + summary
	case RunError:
		return vcs.Error, summary
	default:
		return vcs.Failure, summary
	}
}

// CheckOf is a run's GitHub check run as it is now: in progress while it
// runs; then completed — success when it passed or was approved,
// action_required when it needs review (with a link to review it), failure
// otherwise — with the counts as the title and a summary linking the run.
func CheckOf(r *Run, suite, link string) vcs.Check {
	state, desc := StatusOf(r)
	ch := vcs.Check{SHA: r.Commit, Status: vcs.CheckCompleted, DetailsURL: link, ExternalID: r.ID, At: time.Now()}
	switch {
	case r.Status == RunRunning:
		ch.Status, ch.At = vcs.CheckInProgress, r.CreatedAt
	case state == vcs.Success:
		ch.Conclusion = vcs.ConclusionSuccess
	case r.Status == RunNeedsReview && link != "":
		ch.Conclusion = vcs.ConclusionActionRequired
	default:
		ch.Conclusion = vcs.ConclusionFailure
	}
	ch.Title = desc
	ch.Summary = fmt.Sprintf("**%s** — %s\n\nsnapq suite %s, run `%s`", r.Status, desc, suite, r.ID)
	if r.CompareTo != "" {
		ch.Summary += fmt.Sprintf(", compared with %s", r.CompareTo)
	}
	if link != "" {
		ch.Summary += fmt.Sprintf("\n\n[Review the run](%s)", link)
	}
	return ch
}

func permanent(err error) error {
	if errors.Is(err, vcs.ErrRejected) {
		return fmt.Errorf("%w: %w", err, jobs.ErrNoRetry)
	}
	return err
}

// Submitter puts a task on the queue (queue.AsynqQueue).
type Submitter interface {
	Submit(ctx context.Context, p jobs.Payload, timeout time.Duration) error
}

// ReportRun returns a hook that enqueues a report of a run whose suite has
// a code host; it needs the run's commit. Failures are logged.
func ReportRun(q Submitter, log *slog.Logger) func(ctx context.Context, r *Run) {
	return func(ctx context.Context, r *Run) {
		if r.Commit == "" {
			return
		}
		if err := q.Submit(ctx, jobs.VCSReportPayload{ReportID: jobs.NewID(), RunID: r.ID}, 0); err != nil {
			jobs.Log(log).Warn("enqueue the run's report to its code host", "run_id", r.ID, "err", err)
		}
	}
}
