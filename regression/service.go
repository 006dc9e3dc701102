package regression

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/jobs"
)

// ErrRunExists is CreateRun's answer for a schedule activation that already has a run.
var ErrRunExists = errors.New("a run for this schedule activation exists")

// ErrTooManySuites is CreateSuite's answer when the API key already holds
// MaxSuitesPerKey suites. The api answers 409 too_many_suites: waiting does
// not help, deleting a suite does.
var ErrTooManySuites = errors.New("too many suites for this API key")

// DefaultMaxSuitesPerKey is Service.MaxSuitesPerKey's default.
const DefaultMaxSuitesPerKey = 100

// RunStatusOf derives a finished run's status from its comparison counts:
// any failure fails it; otherwise an error makes it error; new or missing
// segments need review; all passed passes.
func RunStatusOf(c RunCounts) RunStatus {
	switch {
	case c.Failed > 0:
		return RunFailed
	case c.Error > 0:
		return RunError
	case c.New > 0 || c.Missing > 0:
		return RunNeedsReview
	default:
		return RunPassed
	}
}

// Service is what the API and the scheduler do with suites and runs.
type Service struct {
	Repo   SuiteStore
	Queue  jobs.Queue
	Logger *slog.Logger
	// MinScheduleInterval is the shortest time allowed between two
	// activations of a suite's schedule (0: DefaultMinScheduleInterval;
	// negative: no minimum).
	MinScheduleInterval time.Duration
	// MaxInFlight caps the owner key's queued and running jobs, batches' and
	// runs' together, as jobs.Service.MaxInFlight does (0:
	// jobs.DefaultMaxInFlight; negative: no cap). A run over it is
	// jobs.ErrTooManyInFlight and writes nothing.
	MaxInFlight int
	// MaxSuitesPerKey caps the suites one API key holds (0:
	// DefaultMaxSuitesPerKey; negative: no cap). Suites made without auth
	// have no owner and no cap.
	MaxSuitesPerKey int
	// Dispatch, when set, is kicked after a run's jobs are written (they
	// are held and dispatched fairly, as jobs.Service's); without it they
	// are enqueued at once.
	Dispatch jobs.Kicker
	// MaxHostConcurrency caps the host_concurrency option, as
	// jobs.Service's (0: jobs.DefaultHostConcurrencyMax).
	MaxHostConcurrency int
	// Report, when set, has a run reported to its suite's code host (a
	// vcs:report task); StartRun calls it for a run with a commit.
	Report func(ctx context.Context, run *Run)
	// ReportApproved, when set, has an approved run's new state reported to
	// its suite's code host (the api calls it after an approval).
	ReportApproved func(ctx context.Context, run *Run)
	// Sitemaps reads the sitemaps of discovering suites on every run (nil:
	// such a run is refused).
	Sitemaps discover.SitemapReader
	// MailDomains is the allowlist of email recipients' domains
	// (SNAPQ_SMTP_ALLOWED_DOMAINS); empty: a suite may not have an email
	// channel.
	MailDomains MailDomains
	// Pages fetches the pages of suites that discover by crawl on every run
	// (nil: such a run is refused).
	Pages discover.PageFetcher
	// Budget admits a run's discovery (jobs.WorkDiscover) per owner key before
	// the sitemap read or crawl starts; nil: no cap.
	Budget jobs.WorkBudget
}

// checkHostConcurrency names every host_concurrency of s above
// MaxHostConcurrency, and every email recipient MailDomains refuses.
func (g *Service) checkHostConcurrency(s *Suite) error {
	var errs jobs.FieldErrors
	jobs.CheckHostConcurrency(g.MaxHostConcurrency, s.Spec.Options, "options", &errs)
	g.MailDomains.CheckRecipients(s.Notify, &errs)
	for i, t := range s.Spec.Targets {
		jobs.CheckHostConcurrency(g.MaxHostConcurrency, t.Options, fmt.Sprintf("targets[%d].options", i), &errs)
	}
	return jobs.ValidationErrors(errs)
}

func (g *Service) maxSuitesPerKey() int { return cmp.Or(g.MaxSuitesPerKey, DefaultMaxSuitesPerKey) }

func (g *Service) maxInFlight() int { return cmp.Or(g.MaxInFlight, jobs.DefaultMaxInFlight) }

func (g *Service) minScheduleInterval() time.Duration {
	return cmp.Or(g.MinScheduleInterval, DefaultMinScheduleInterval)
}

// CreateSuite validates and stores a new suite; one more than
// MaxSuitesPerKey for owner is ErrTooManySuites.
func (g *Service) CreateSuite(ctx context.Context, owner string, body []byte) (*Suite, error) {
	s, err := parseSuite(body, g.minScheduleInterval())
	if err == nil {
		err = g.checkHostConcurrency(s)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	s.ID, s.OwnerKeyID, s.CreatedAt, s.UpdatedAt = jobs.NewID(), owner, now, now
	if err := g.Repo.CreateSuite(ctx, s, g.maxSuitesPerKey()); errors.Is(err, ErrTooManySuites) {
		return nil, err
	} else if errors.Is(err, ErrNoSecretKey) {
		return nil, noSecretKey(s)
	} else if err != nil {
		return nil, fmt.Errorf("store suite: %w", err)
	}
	return s, nil
}

// UpdateSuite applies a PATCH: the body's top-level fields replace the
// suite's (null removes an optional one), and the result is validated whole.
// A patch without "webhook" keeps the webhook and its secret.
func (g *Service) UpdateSuite(ctx context.Context, cur *Suite, body []byte) (*Suite, error) {
	var in SuiteInput
	var errs jobs.FieldErrors
	if decodeSuite(body, &in, &errs); len(errs) > 0 {
		return nil, jobs.ValidationErrors(errs)
	}
	patch, err := jobs.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	doc := cur.Input()
	_, webhookGiven := patch["webhook"]
	if cur.Webhook != nil && !webhookGiven {
		doc["webhook"] = jobs.WebhookInput{URL: cur.Webhook.URL, Secret: cur.Webhook.Secret}
	}
	if _, given := patch["vcs"]; cur.VCS != nil && !given {
		doc["vcs"] = cur.VCS // with its token: write-only, kept unless replaced
	}
	if _, given := patch["notify"]; given && in.Notify != nil {
		patch["notify"] = keepChannelSecrets(in.Notify, cur.Notify)
	} else if len(cur.Notify) > 0 && !given {
		doc["notify"] = cur.Notify // with their secrets, as vcs
	}
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		doc[k] = v
	}
	merged, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	s, err := parseSuite(merged, g.minScheduleInterval())
	if err == nil {
		err = g.checkHostConcurrency(s)
	}
	if err != nil {
		return nil, err
	}
	s.ID, s.OwnerKeyID, s.CreatedAt, s.UpdatedAt = cur.ID, cur.OwnerKeyID, cur.CreatedAt, time.Now().UTC()
	if err := g.Repo.UpdateSuite(ctx, s); errors.Is(err, ErrNoSecretKey) {
		return nil, noSecretKey(s)
	} else if err != nil {
		return nil, fmt.Errorf("update suite: %w", err)
	}
	s.LastRun = cur.LastRun
	return s, nil
}

// StartRun creates a run of the suite (a batch of capture jobs) and enqueues
// its jobs. scheduledFor is the schedule activation of a scheduled run. A run
// that would take the owner past MaxInFlight is jobs.ErrTooManyInFlight.
//
// opts put the run on a branch, name its commit and point it at another
// origin (RunOptions); a branch without a base branch falls back to the
// suite's main branch.
func (g *Service) StartRun(ctx context.Context, s *Suite, trigger string, scheduledFor *time.Time, opts RunOptions) (*Run, error) {
	spec := s.Spec
	spec.MainBranch = spec.MainBranchOf()
	if spec.Discover != nil {
		found, err := g.discoverAdmitted(ctx, s.OwnerKeyID, spec)
		if err != nil {
			return nil, err
		}
		spec.Targets = found
	}
	targets, err := WithBaseURL(spec.Targets, opts.BaseURL)
	if err != nil {
		return nil, err
	}
	spec.Targets = targets
	newJobs, keys, err := spec.Captures()
	if err != nil {
		return nil, err
	}
	var refJobs []jobs.NewJob
	if opts.CompareTo != "" {
		if refJobs, err = pairJobs(spec, s.Spec.Targets, opts.CompareTo); err != nil {
			return nil, err
		}
	}
	if opts.Branch != "" && opts.BaseBranch == "" {
		opts.BaseBranch = spec.MainBranch
	}
	now := time.Now().UTC()
	r, b := newRun(s, spec, trigger, scheduledFor, opts, now)
	b.Total = len(newJobs) + len(refJobs)
	if spec.Discover != nil {
		if r.Removed, err = g.removedComparisons(ctx, r, s.ID, keys); err != nil {
			return nil, err
		}
	}
	shared := spec.SharedOptions()
	b.JobOptions = &shared
	js := runJobs(b, newJobs, refJobs, keys, now)
	if err := g.Repo.CreateRun(ctx, r, b, js, keys, g.maxInFlight()); err != nil {
		return nil, err
	}
	jobs.EnqueueOrKick(ctx, g.Dispatch, g.Queue, js, g.logger())
	r.Counts = RunCounts{Pending: len(keys)}
	if g.Report != nil && s.VCS != nil && r.Commit != "" {
		g.Report(ctx, r)
	}
	return r, nil
}

// newRun is a new run of suite s with spec, and its batch (without jobs).
func newRun(s *Suite, spec SuiteSpec, trigger string, scheduledFor *time.Time, opts RunOptions, now time.Time) (*Run, *jobs.Batch) {
	r := &Run{ID: jobs.NewID(), SuiteID: s.ID, Trigger: trigger, ScheduledFor: scheduledFor, Status: RunRunning,
		Spec: spec, Branch: opts.Branch, BaseBranch: opts.BaseBranch, Commit: opts.Commit, BaseURL: opts.BaseURL,
		PullRequest: opts.PullRequest, DashboardURL: opts.DashboardURL, CompareTo: opts.CompareTo, CreatedAt: now}
	b := &jobs.Batch{ID: jobs.NewID(), OwnerKeyID: s.OwnerKeyID, CreatedAt: now,
		Labels: map[string]string{"snapq.suite": s.ID, "snapq.run": r.ID}}
	if s.Webhook != nil {
		b.Webhook = &jobs.Webhook{URL: s.Webhook.URL, Secret: s.Webhook.Secret, Event: EventRunCompleted}
	}
	r.BatchID = b.ID
	return r, b
}

// runJobs are the run's capture jobs in batch b, each key given its job
// (and, in a pair run, its reference job). A pair's two captures are next to
// each other, so they are dispatched (and taken) together.
func runJobs(b *jobs.Batch, newJobs, refJobs []jobs.NewJob, keys []CaptureKey, now time.Time) []*jobs.Job {
	js := make([]*jobs.Job, 0, len(newJobs)+len(refJobs))
	add := func(nj jobs.NewJob) *jobs.Job {
		j := &jobs.Job{ID: jobs.NewID(), BatchID: b.ID, Seq: len(js), URL: nj.URL, Name: nj.Name, Options: nj.Options,
			Status: jobs.StatusQueued, CreatedAt: now, UpdatedAt: now}
		js = append(js, j)
		return j
	}
	for i, nj := range newJobs {
		keys[i].JobID = add(nj).ID
		if refJobs != nil {
			keys[i].ReferenceJobID = add(refJobs[i]).ID
		}
	}
	return js
}

func (g *Service) logger() *slog.Logger { return jobs.Log(g.Logger) }

// discoverAdmitted runs a suite's discovery once its owner may add a job (the in-flight
// cap, checked before any fetch; the run's transaction checks it exactly) and the
// owner's budget admits the work.
func (g *Service) discoverAdmitted(ctx context.Context, owner string, spec SuiteSpec) ([]SuiteTarget, error) {
	if counter, ok := g.Repo.(interface {
		CountUnfinished(ctx context.Context, owner string) (int, error)
	}); ok {
		if err := jobs.CheckInFlight(ctx, counter, owner, 1, g.maxInFlight()); err != nil {
			return nil, err
		}
	}
	release, err := jobs.AcquireWork(ctx, g.Budget, owner, jobs.WorkDiscover)
	if err != nil {
		return nil, err
	}
	defer release()
	return g.discover(ctx, spec)
}

// noSecretKey is the field error of a suite whose secrets cannot be sealed.
func noSecretKey(s *Suite) error {
	field := "notify"
	if s.VCS != nil {
		field = "vcs"
	}
	var errs jobs.FieldErrors
	errs.Add("secret_key_required", field, ErrNoSecretKey.Error())
	return &jobs.ValidationError{Fields: errs}
}
