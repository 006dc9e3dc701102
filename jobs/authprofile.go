package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/snapq/snapq/capture"
)

// Authenticator logs jobs in for the handler: a job whose options name an
// auth profile is captured with that profile's login, and a page that shows
// it is logged out gets one new login and one more try. authprofile.Sessions
// implements it; jobs knows nothing of recipes, secrets or locks.
type Authenticator interface {
	// Seed sets req.State and req.LoggedOut from the current login of job's
	// profile and returns that login's version.
	Seed(ctx context.Context, job *Job, req *capture.Request) (version int, err error)
	// Relogin makes sure a login newer than version exists (one worker
	// fleet-wide logs in, the others wait for it), seeds req with it and
	// returns its version.
	Relogin(ctx context.Context, job *Job, version int, req *capture.Request) (int, error)
}

// ErrAuthFailed marks an Authenticator's error that fails the job with
// CodeAuthFailed, not retried: no such profile, no login to seed, a recipe
// that failed. Any other error is transient and the job is retried.
var ErrAuthFailed = errors.New("auth failed")

// authError classifies an Authenticator's error as the job's failure;
// partial is the result of the attempt that led to it (nil: none).
func authError(err error, partial *Result) *jobError {
	if errors.Is(err, ErrAuthFailed) {
		return &jobError{JobError{Code: CodeAuthFailed, Message: err.Error()}, false, partial}
	}
	return &jobError{JobError{Code: CodeInternal, Message: fmt.Sprintf("auth profile: %v", err)}, true, partial}
}

// authCapture captures req for job with its auth profile's login: seeded
// from the current version, and, when the page shows it is logged out, once
// more after a new login.
func (h *Handler) authCapture(ctx context.Context, job *Job, req capture.Request) (*capture.Result, error, *jobError) {
	if h.Auth == nil {
		return nil, nil, &jobError{JobError{Code: CodeAuthFailed,
			Message: "this worker has no auth profiles (SNAPQ_SECRET_KEY is not set)"}, false, nil}
	}
	version, err := h.Auth.Seed(ctx, job, &req)
	if err != nil {
		return nil, nil, authError(err, nil)
	}
	res, err := h.Renderer.Capture(ctx, req)
	if !loggedOut(err) {
		return res, err, nil
	}
	// A login another worker made while this job waited may itself have run
	// out by the time the page loads: one more new login, then give up.
	for relogins := 0; loggedOut(err); relogins++ {
		var ce *capture.Error
		errors.As(err, &ce)
		if relogins == MaxRelogins {
			return nil, nil, &jobError{JobError{Code: CodeAuthFailed,
				Message: fmt.Sprintf("still logged out with a new login (version %d): %s", version, ce.Message)}, false, partialOf(ce)}
		}
		h.logger().Info("the page is logged out; logging in again", "job_id", job.ID, "auth_profile", job.Options.AuthProfile,
			"version", version)
		if version, err = h.Auth.Relogin(ctx, job, version, &req); err != nil {
			// The job keeps what its logged-out attempt saw (log, status, final URL).
			return nil, nil, authError(err, partialOf(ce))
		}
		res, err = h.Renderer.Capture(ctx, req)
	}
	return res, err, nil
}

// MaxRelogins is how many new logins one job asks for before it fails with
// auth_failed.
const MaxRelogins = 2

func loggedOut(err error) bool {
	var ce *capture.Error
	return errors.As(err, &ce) && ce.Code == capture.CodeLoggedOut
}

func partialOf(ce *capture.Error) *Result {
	if ce == nil || ce.Result == nil {
		return nil
	}
	return newResult(ce.Result)
}
