package jobs

import "errors"

// ErrBrowserUnavailable is wrapped by a capture task's error when no browser could take
// the job (capture.CodeBrowserUnavailable: a remote browser pool refused the connection
// or answered 429/503). The job goes back to queued and its task is retried with the
// usual backoff; the worker's queue does not count it as a failure, so an overloaded or
// restarting pool costs no retry budget. Match it with IsBrowserUnavailable.
var ErrBrowserUnavailable = errors.New("no browser available")

// IsBrowserUnavailable reports whether a task's error only says that no browser could
// take the job, which is not the job's failure.
func IsBrowserUnavailable(err error) bool { return errors.Is(err, ErrBrowserUnavailable) }
