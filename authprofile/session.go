package authprofile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Renderer runs a login recipe in a fresh browser context. capture.Browser
// implements it.
type Renderer interface {
	Capture(ctx context.Context, req capture.Request) (*capture.Result, error)
}

// Locker is a lock shared by every worker (ratelimit.Flight on Redis): one
// holder per key at a time, given back by release, or by its TTL when the
// holder dies.
type Locker interface {
	TryLock(ctx context.Context, key string, ttl time.Duration) (release func(), ok bool, err error)
}

// EventFailed is the webhook event a batch's webhook receives when a job of
// the batch found its auth profile's recipe failing (once per batch).
const EventFailed = "auth_profile.failed"

// FailedEvent is the data of an auth_profile.failed event: no secret, no
// login, the failure's message masked.
type FailedEvent struct {
	AuthProfile struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"auth_profile"`
	BatchID string    `json:"batch_id"`
	JobID   string    `json:"job_id"`
	Message string    `json:"message"`
	At      time.Time `json:"failed_at"`
}

// NewFailedEvent is the event of p's failed login during job.
func NewFailedEvent(p *Profile, job *jobs.Job, message string) FailedEvent {
	var e FailedEvent
	e.AuthProfile.ID, e.AuthProfile.Name = p.ID, p.Name
	e.BatchID, e.JobID, e.Message, e.At = job.BatchID, job.ID, message, time.Now().UTC()
	return e
}

// Defaults of Sessions.
const (
	DefaultLoginTimeout = 60 * time.Second
	// DefaultLoginWait bounds how long a job waits for another worker's login.
	DefaultLoginWait = 90 * time.Second
	lockPoll         = 150 * time.Millisecond
)

// Sessions is the worker's side: it seeds jobs with their profile's login
// and logs in again, once fleet-wide, when a page shows it is logged out. It
// implements jobs.Authenticator.
type Sessions struct {
	Repo     Repository
	Sealer   *Sealer
	Renderer Renderer
	Lock     Locker
	Logger   *slog.Logger
	// OnFailure runs after a recipe failed (the auth_profile.failed webhook);
	// nil: nothing.
	OnFailure func(ctx context.Context, p *Profile, job *jobs.Job, message string)
	// LoginTimeout bounds one run of a recipe (default DefaultLoginTimeout).
	LoginTimeout time.Duration
}

var _ jobs.Authenticator = (*Sessions)(nil)

// authFailure is an error that fails the job with auth_failed: its message
// is the reason alone (the code says "auth failed" already).
type authFailure struct{ msg string }

func (e *authFailure) Error() string { return e.msg }
func (e *authFailure) Unwrap() error { return jobs.ErrAuthFailed }

func failed(format string, args ...any) error {
	return &authFailure{msg: fmt.Sprintf(format, args...)}
}

// profile loads job's profile and checks the job's URL is on its origins.
func (s *Sessions) profile(ctx context.Context, job *jobs.Job) (*Profile, error) {
	if s.Sealer == nil {
		return nil, failed("auth profiles are off on this worker (SNAPQ_SECRET_KEY is not set)")
	}
	name := job.Options.AuthProfile
	p, err := s.Repo.AuthProfileOfBatch(ctx, job.BatchID, name)
	if errors.Is(err, jobs.ErrNotFound) {
		return nil, failed("the batch's API key has no auth profile named %q", name)
	}
	if err != nil {
		return nil, err
	}
	if o, ok := originOf(job.URL); !ok || !slices.Contains(p.Origins, o) {
		return nil, failed("the target's origin is not one of auth profile %q's origins (%s)", name, strings.Join(p.Origins, ", "))
	}
	return p, nil
}

// Seed implements jobs.Authenticator.
func (s *Sessions) Seed(ctx context.Context, job *jobs.Job, req *capture.Request) (int, error) {
	p, err := s.profile(ctx, job)
	if err != nil {
		return 0, err
	}
	version, sealed, created, err := s.Repo.AuthState(ctx, p.ID)
	if err != nil {
		return 0, err
	}
	stale := p.Spec.RefreshEveryS > 0 && p.HasRecipe() && time.Since(created) > time.Duration(p.Spec.RefreshEveryS)*time.Second
	if version == 0 || stale {
		return s.relogin(ctx, p, job, version, req)
	}
	return version, s.seed(p, sealed, req)
}

func (s *Sessions) seed(p *Profile, sealed []byte, req *capture.Request) error {
	st, err := openState(s.Sealer, p.ID, sealed)
	if err != nil {
		return failed("%v", err)
	}
	req.State, req.LoggedOut = st, p.Spec.LoggedOut.capture()
	return nil
}

// Relogin implements jobs.Authenticator.
func (s *Sessions) Relogin(ctx context.Context, job *jobs.Job, version int, req *capture.Request) (int, error) {
	p, err := s.profile(ctx, job)
	if err != nil {
		return 0, err
	}
	return s.relogin(ctx, p, job, version, req)
}

// relogin returns a login newer than version: one another worker made while
// this one waited, or one this worker made holding the profile's lock.
func (s *Sessions) relogin(ctx context.Context, p *Profile, job *jobs.Job, version int, req *capture.Request) (int, error) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, DefaultLoginWait)
	defer cancel()
	for {
		cur, sealed, _, err := s.Repo.AuthState(wctx, p.ID)
		if err != nil {
			return 0, err
		}
		if cur > version {
			return cur, s.seed(p, sealed, req)
		}
		if !p.HasRecipe() {
			return 0, failed("auth profile %q is logged out and has no recipe: upload a new storage_state", p.Name)
		}
		// Another worker's login that failed since this one started waiting is
		// this job's answer too: a broken recipe runs once, not once per job.
		if fresh, err := s.Repo.GetAuthProfile(wctx, p.ID); err == nil && fresh.LastFailureAt != nil &&
			fresh.LastFailureAt.After(start) && fresh.Version <= version {
			return 0, failed("auth profile %q could not log in: %s", p.Name, fresh.LastFailure)
		}
		release, ok, err := s.Lock.TryLock(wctx, lockKey(p.ID), DefaultLoginTimeout+30*time.Second)
		if err != nil {
			return 0, fmt.Errorf("auth profile lock: %w", err)
		}
		if ok {
			v, err := s.loginLocked(wctx, p, job, version, req)
			release()
			return v, err
		}
		select {
		case <-wctx.Done():
			return 0, fmt.Errorf("waiting for auth profile %q's login: %w", p.Name, wctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// lockKey is the Redis key of a profile's login lock.
func lockKey(id string) string { return "snapq:{auth:" + id + "}:login" }

// loginLocked runs the recipe unless, now that the lock is held, a newer
// login is already there.
func (s *Sessions) loginLocked(ctx context.Context, p *Profile, job *jobs.Job, version int, req *capture.Request) (int, error) {
	cur, sealed, _, err := s.Repo.AuthState(ctx, p.ID)
	if err != nil {
		return 0, err
	}
	if cur > version {
		return cur, s.seed(p, sealed, req)
	}
	st, log, err := s.Login(ctx, p)
	if errors.Is(err, errLoginBrowser) {
		// The browser, not the recipe, failed (a crash, no slot on a loaded
		// machine): no failure is recorded or announced, and the job is
		// retried like any transient failure instead of failing auth_failed.
		s.logger().Warn("auth profile login interrupted by the browser; the job will retry", "auth_profile", p.Name,
			"profile_id", p.ID, "err", err.Error())
		return 0, fmt.Errorf("auth profile %q: %w", p.Name, err)
	}
	if err != nil {
		msg := err.Error()
		s.logger().Warn("auth profile login failed", "auth_profile", p.Name, "profile_id", p.ID, "err", msg)
		rctx, rcancel := jobs.Bookkeeping(ctx)
		defer rcancel()
		if rerr := s.Repo.RecordAuthFailure(rctx, p.ID, msg, log); rerr != nil {
			s.logger().Warn("record an auth profile's failed login", "profile_id", p.ID, "err", rerr)
		}
		if s.OnFailure != nil && job != nil {
			s.OnFailure(rctx, p, job, msg)
		}
		return 0, failed("auth profile %q could not log in: %s", p.Name, msg)
	}
	sealedNew, err := sealState(s.Sealer, p.ID, st)
	if err != nil {
		return 0, err
	}
	v, _, err := s.Repo.AddAuthState(ctx, p.ID, cur, sealedNew, SourceRecipe, log)
	if err != nil {
		return 0, err
	}
	s.logger().Info("auth profile logged in", "auth_profile", p.Name, "profile_id", p.ID, "version", v)
	req.State, req.LoggedOut = st, p.Spec.LoggedOut.capture()
	return v, nil
}

// Login runs p's recipe in a fresh browser context and returns the login it
// made and its action log (secrets masked). It runs only on the profile's
// origins: the login URL is one of them, and a recipe that ends on another
// origin fails. Every request goes through the worker's egress guard, as a
// job's do.
func (s *Sessions) Login(ctx context.Context, p *Profile) (*capture.StorageState, []capture.LogEntry, error) {
	if !p.HasRecipe() {
		return nil, nil, errors.New("the profile has no recipe")
	}
	secrets, err := openSecrets(s.Sealer, p)
	if err != nil {
		return nil, nil, err
	}
	mask := newMasker(secrets)
	var ferrs jobs.FieldErrors
	actions := recipeActions(p.Spec.Steps, secrets, p.Origins, true, &ferrs)
	if len(ferrs) > 0 {
		return nil, nil, fmt.Errorf("the recipe's steps are not valid: %s", ferrs[0].Field+": "+ferrs[0].Message)
	}
	if sel := p.Spec.Success.Selector; sel != "" {
		actions = append(actions, capture.Action{Type: capture.ActionWaitForSelector, Selector: sel, State: "visible",
			Timeout: 10 * time.Second})
	}
	timeout := s.LoginTimeout
	if timeout <= 0 {
		timeout = DefaultLoginTimeout
	}
	req := capture.Request{
		URL: p.Spec.LoginURL, Name: "login", Timeout: timeout,
		Viewport:   capture.Viewport{Width: jobs.DefaultViewportWidth, Height: jobs.DefaultViewportHeight, DeviceScaleFactor: 1},
		Screenshot: capture.Screenshot{Mode: capture.ModeViewport, Format: capture.FormatPNG, MaxSegments: 1},
		Wait:       capture.Wait{Until: capture.UntilLoad},
		Outputs:    []string{capture.OutputMetadata},
		Actions:    actions, ActionsTimeout: timeout,
		SaveState: true,
	}
	lctx, cancel := context.WithTimeout(ctx, timeout+capture.CaptureGrace(timeout))
	defer cancel()
	res, err := s.Renderer.Capture(lctx, req)
	if err != nil {
		var ce *capture.Error
		var log []capture.LogEntry
		if errors.As(err, &ce) && ce.Result != nil {
			log = maskLog(ce.Result.Log, mask)
		}
		return nil, log, loginError(err, mask)
	}
	log := maskLog(res.Log, mask)
	return loginOutcome(p, res, log, mask)
}

// loginError is a failed login capture's error, masked, with its action log.
func loginError(err error, mask func(string) string) error {
	var ce *capture.Error
	if !errors.As(err, &ce) {
		return errors.New(mask(err.Error()))
	}
	msg := mask(ce.Code + ": " + ce.Message)
	if browserFailure(ce.Code) {
		return fmt.Errorf("%s: %w", msg, errLoginBrowser)
	}
	return errors.New(msg)
}

// loginOutcome checks where a login that ran to its end landed. Every URL in
// a message is masked: a form that submits by GET puts what it was given in
// the query string.
func loginOutcome(p *Profile, res *capture.Result, log []capture.LogEntry, mask func(string) string) (*capture.StorageState, []capture.LogEntry, error) {
	if o, ok := originOf(res.FinalURL); !ok || !slices.Contains(p.Origins, o) {
		return nil, log, fmt.Errorf("the login ended on %s, outside the profile's origins", mask(o))
	}
	if pre := p.Spec.Success.URLPrefix; pre != "" && !strings.HasPrefix(res.FinalURL, pre) {
		return nil, log, fmt.Errorf("the login ended on %s, not under success.url_prefix %s", mask(res.FinalURL), mask(pre))
	}
	if lo := p.Spec.LoggedOut.URLPrefix; lo != "" && strings.HasPrefix(res.FinalURL, lo) && p.Spec.Success.Selector == "" {
		return nil, log, fmt.Errorf("the login ended on the logged-out page %s", mask(res.FinalURL))
	}
	if res.State == nil {
		return nil, log, errors.New("the login produced no storage state")
	}
	return res.State, log, nil
}

// errLoginBrowser marks a login the browser, not the recipe, ended.
var errLoginBrowser = errors.New("the login's browser failed")

// browserFailure reports whether a capture failure code is the browser's
// (transient), not the site's or the recipe's.
func browserFailure(code string) bool {
	switch code {
	case capture.CodeBrowserCrashed, capture.CodeBrowserUnavailable, capture.CodeInternal, capture.CodeCanceled:
		return true
	}
	return false
}

// Test runs p's recipe now, outside any job, and stores the login it made
// as the next version (POST /v1/auth-profiles/:id/test, run by a worker).
func (s *Sessions) Test(ctx context.Context, p *Profile) (version int, log []capture.LogEntry, err error) {
	release, ok, err := s.Lock.TryLock(ctx, lockKey(p.ID), DefaultLoginTimeout+30*time.Second)
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		return 0, nil, errors.New("another login of this profile is running; try again in a moment")
	}
	defer release()
	cur, _, _, err := s.Repo.AuthState(ctx, p.ID)
	if err != nil {
		return 0, nil, err
	}
	st, log, err := s.Login(ctx, p)
	if err != nil {
		rctx, cancel := jobs.Bookkeeping(ctx)
		defer cancel()
		_ = s.Repo.RecordAuthFailure(rctx, p.ID, err.Error(), log)
		return 0, log, err
	}
	sealed, err := sealState(s.Sealer, p.ID, st)
	if err != nil {
		return 0, log, err
	}
	v, _, err := s.Repo.AddAuthState(ctx, p.ID, cur, sealed, SourceRecipe, log)
	return v, log, err
}

func (s *Sessions) logger() *slog.Logger { return jobs.Log(s.Logger) }

// RunTest is the worker's handler of auth:test tasks: it runs the profile's
// recipe (Test) and records the outcome for the api to answer with.
func (s *Sessions) RunTest(ctx context.Context, t TestPayload) error {
	if s.Sealer == nil {
		return fmt.Errorf("auth test %s: %w: %w", t.TestID, ErrNoSealer, jobs.ErrNoRetry)
	}
	p, err := s.Repo.GetAuthProfile(ctx, t.ProfileID)
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("auth test %s: profile %s: %w", t.TestID, t.ProfileID, jobs.ErrNoRetry)
	}
	if err != nil {
		return err
	}
	failure := ""
	_, log, err := s.Test(ctx, p)
	if err != nil {
		failure = err.Error()
		if failure == "" {
			failure = "failed"
		}
	}
	rctx, cancel := jobs.Bookkeeping(ctx)
	defer cancel()
	return s.Repo.RecordAuthTest(rctx, p.ID, t.TestID, failure, log)
}
