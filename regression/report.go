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
	// GetRunSummary returns a run with its counts (no comparisons).
	GetRunSummary(ctx context.Context, id string) (*Run, error)
	// VCSComment is the id of the comment a suite's runs edit on pull
	// request pr ("" before the first); SetVCSComment keeps it.
	VCSComment(ctx context.Context, suiteID string, pr int) (string, error)
	SetVCSComment(ctx context.Context, suiteID string, pr int, id string) error
	// WithVCSReport calls fn with what the run's reports delivered so far
	// and keeps the state fn returns, even when fn also returns an error
	// (what was delivered stays delivered); calls for one run are
	// serialized, so its reports never race.
	WithVCSReport(ctx context.Context, runID string, fn func(VCSReportState) (VCSReportState, error)) error
}

// Report sequence numbers of a run: its start, its end, then each approval
// (DecideApprovalReport counts from SeqEnd+1).
const (
	SeqStart = 1
	SeqEnd   = 2
)

// VCSReport is one report of a run to its code host, decided when its event
// happens (the run started, settled or was approved) and carried in the
// task's payload: a retry or a late task sends this, never the run as it is
// when the task runs.
type VCSReport struct {
	Seq         int
	RunStatus   RunStatus
	State       string
	Description string
}

// ReportOf is the report of run r as it is now, numbered seq.
func ReportOf(r *Run, seq int) VCSReport {
	state, desc := StatusOf(r)
	return VCSReport{Seq: seq, RunStatus: r.Status, State: state, Description: desc}
}

// VCSReportState is what a run's reports delivered so far: the sequence
// number of the last commit status (or check run state) and of the last
// pull request comment, and the GitHub check run's id.
type VCSReportState struct {
	Seq        int
	CommentSeq int
	CheckRunID string
}

// Reporter runs vcs:report tasks: it reports a run to its suite's code
// host: a commit status (pending while it runs; success when it passed or
// was approved; failure when it failed or needs review) with the counts and
// a link to the run, and, for a finished run with a pull request, the pull
// request's one snapq comment, edited in place.
//
// A run's reports arrive in order whatever the queue does: each carries its
// sequence number (start 1, end 2, approvals 3+); one older than the last
// delivered is dropped, and a later one that finds the start report not yet
// delivered sends it first. So a commit sees exactly one pending, then one
// final state (then one per approval), even when the start report's task
// runs after the run settled.
type Reporter struct {
	Repo VCSStore
	// HTTP sends the requests (the worker's: through the egress guard).
	HTTP   *http.Client
	Logger *slog.Logger
}

// Run is the asynq handler of KindVCSReport.
func (rp *Reporter) Run(ctx context.Context, p VCSReportPayload) error {
	r, err := rp.Repo.GetRunSummary(ctx, p.RunID)
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
	cfg := vcs.Config{Provider: s.VCS.Provider, APIURL: s.VCS.APIURL, Repo: s.VCS.Repo, Token: s.VCS.Token, Context: s.VCS.Context}
	if err := vcs.CheckAPIURL(cfg.APIURL); err != nil {
		return fmt.Errorf("suite %s: %w: %w", s.ID, err, jobs.ErrNoRetry)
	}
	rep := VCSReport{Seq: p.Seq, RunStatus: RunStatus(p.RunStatus), State: p.State, Description: p.Description}
	if p.Seq == 0 { // a task of an older version: the run as it is now
		rep = ReportOf(r, 0)
	}
	out := &reportSend{rp: rp, c: &vcs.Client{HTTP: rp.HTTP, Config: cfg}, s: s, r: r}
	return permanent(rp.Repo.WithVCSReport(ctx, r.ID, func(st VCSReportState) (VCSReportState, error) {
		return out.deliver(ctx, st, rep)
	}))
}

// reportSend sends one run's reports.
type reportSend struct {
	rp *Reporter
	c  *vcs.Client
	s  *Suite
	r  *Run
}

// deliver sends rep unless a newer report was delivered, the start report
// first when it was not, then the pull request's comment; st is what was
// delivered, updated step by step.
func (o *reportSend) deliver(ctx context.Context, st VCSReportState, rep VCSReport) (VCSReportState, error) {
	log := jobs.Log(o.rp.Logger).With("run_id", o.r.ID, "provider", o.s.VCS.Provider, "seq", rep.Seq)
	if rep.Seq == 0 || rep.Seq > st.Seq {
		if rep.Seq > SeqStart && st.Seq < SeqStart {
			if err := o.status(ctx, &st, o.startReport()); err != nil {
				return st, err
			}
			st.Seq = SeqStart
			log.Info("run's start reported before a later report")
		}
		if err := o.status(ctx, &st, rep); err != nil {
			return st, err
		}
		st.Seq = max(st.Seq, rep.Seq)
		log.Info("run reported", "state", rep.State)
	} else {
		log.Info("run report dropped: a later one was delivered", "delivered_seq", st.Seq)
	}
	if o.r.PullRequest == 0 || rep.RunStatus == RunRunning || (rep.Seq != 0 && rep.Seq <= st.CommentSeq) {
		return st, nil
	}
	if err := o.comment(ctx, rep); err != nil {
		return st, err
	}
	st.CommentSeq = max(st.CommentSeq, rep.Seq)
	return st, nil
}

// startReport is the run's start report, for a later report that finds it
// was not delivered yet: pending, "comparing N captures".
func (o *reportSend) startReport() VCSReport {
	n := o.r.Counts.Total + o.r.Counts.Pending
	if _, keys, err := o.r.Spec.Captures(); err == nil {
		n = len(keys)
	}
	return VCSReport{Seq: SeqStart, RunStatus: RunRunning, State: vcs.Pending, Description: fmt.Sprintf("comparing %d captures", n)}
}

// status sends rep as a commit status, or as the run's check run in
// GitHub's check mode (created by the first report, updated by the others).
func (o *reportSend) status(ctx context.Context, st *VCSReportState, rep VCSReport) error {
	link := ReviewURL(o.r.DashboardURL, o.r.ID)
	if o.s.VCS.Provider != vcs.GitHub || o.s.VCS.GitHubMode != vcs.ModeCheck {
		return o.c.SetStatus(ctx, vcs.Status{SHA: o.r.Commit, State: rep.State, Description: rep.Description, TargetURL: link})
	}
	ch := checkOf(o.r, rep, o.s.Name, link)
	if st.CheckRunID != "" {
		return o.c.UpdateCheckRun(ctx, st.CheckRunID, ch)
	}
	id, err := o.c.CreateCheckRun(ctx, ch)
	if err == nil {
		st.CheckRunID = id
	}
	return err
}

// comment writes the pull request's one snapq comment with rep.
func (o *reportSend) comment(ctx context.Context, rep VCSReport) error {
	s, r := o.s, o.r
	id, err := o.rp.Repo.VCSComment(ctx, s.ID, r.PullRequest)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("### snapq · %s\n\n**%s** — %s\n\nCommit `%s`", s.Name, rep.RunStatus, rep.Description, r.Commit)
	if r.Branch != "" {
		body += fmt.Sprintf(" on `%s` (baselines: `%s`, else `%s`)", r.Branch, r.Branch, r.BaseBranch)
	}
	if link := ReviewURL(r.DashboardURL, r.ID); link != "" {
		body += fmt.Sprintf("\n\n[Review the run](%s)", link)
	}
	newID, err := o.c.UpsertComment(ctx, r.PullRequest, id, body)
	if err != nil {
		return err
	}
	if newID != id {
		return o.rp.Repo.SetVCSComment(ctx, s.ID, r.PullRequest, newID)
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
	return checkOf(r, ReportOf(r, 0), suite, link)
}

// checkOf is the check run of report rep of run r.
func checkOf(r *Run, rep VCSReport, suite, link string) vcs.Check {
	ch := vcs.Check{SHA: r.Commit, Status: vcs.CheckCompleted, DetailsURL: link, ExternalID: r.ID, At: time.Now()}
	switch {
	case rep.RunStatus == RunRunning:
		ch.Status, ch.At = vcs.CheckInProgress, r.CreatedAt
	case rep.State == vcs.Success:
		ch.Conclusion = vcs.ConclusionSuccess
	case rep.RunStatus == RunNeedsReview && link != "":
		ch.Conclusion = vcs.ConclusionActionRequired
	default:
		ch.Conclusion = vcs.ConclusionFailure
	}
	ch.Title = rep.Description
	ch.Summary = fmt.Sprintf("**%s** — %s\n\nsnapq suite %s, run `%s`", rep.RunStatus, rep.Description, suite, r.ID)
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

// ApprovalReports decides an approval's report (store.Store).
type ApprovalReports interface {
	// DecideApprovalReport numbers an approval's report (SeqEnd+1, +2, …)
	// and reads the run under the same lock, so a higher number always
	// reports a newer state.
	DecideApprovalReport(ctx context.Context, runID string) (int, *Run, error)
}

// RunSummaries reads a run with its counts (store.Store).
type RunSummaries interface {
	GetRunSummary(ctx context.Context, id string) (*Run, error)
}

// ReportStart returns the regression service's Report hook: a run with a
// commit is reported pending (report SeqStart) as it starts.
func ReportStart(q Submitter, log *slog.Logger) func(ctx context.Context, r *Run) {
	return func(ctx context.Context, r *Run) {
		if r.Commit != "" {
			submitReport(ctx, q, log, r.ID, ReportOf(r, SeqStart))
		}
	}
}

// ReportEnd returns the comparer's run-finished hook: the settled run, read
// now, is reported (report SeqEnd).
func ReportEnd(repo RunSummaries, q Submitter, log *slog.Logger) func(ctx context.Context, r *Run) {
	return func(ctx context.Context, r *Run) {
		if r.Commit == "" {
			return
		}
		cur, err := repo.GetRunSummary(ctx, r.ID)
		if err != nil {
			jobs.Log(log).Warn("read the settled run to report it to its code host", "run_id", r.ID, "err", err)
			return
		}
		submitReport(ctx, q, log, r.ID, ReportOf(cur, SeqEnd))
	}
}

// ReportApproval returns the hook the api calls after an approval: a
// settled run's new state is reported with the next approval number. An
// approval of a run still running reports nothing (its end report will).
func ReportApproval(repo ApprovalReports, q Submitter, log *slog.Logger) func(ctx context.Context, r *Run) {
	return func(ctx context.Context, r *Run) {
		if r.Commit == "" || r.Status == RunRunning {
			return
		}
		seq, cur, err := repo.DecideApprovalReport(ctx, r.ID)
		if err != nil {
			jobs.Log(log).Warn("decide the approval's report to the code host", "run_id", r.ID, "err", err)
			return
		}
		if cur.Status != RunRunning {
			submitReport(ctx, q, log, r.ID, ReportOf(cur, seq))
		}
	}
}

func submitReport(ctx context.Context, q Submitter, log *slog.Logger, runID string, rep VCSReport) {
	p := VCSReportPayload{ReportID: jobs.NewID(), RunID: runID, Seq: rep.Seq, RunStatus: string(rep.RunStatus),
		State: rep.State, Description: rep.Description}
	if err := q.Submit(ctx, p, 0); err != nil {
		jobs.Log(log).Warn("enqueue the run's report to its code host", "run_id", runID, "seq", rep.Seq, "err", err)
	}
}
