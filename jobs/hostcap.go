package jobs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Politeness: at most a few captures of one target host run at once across
// every worker (the option host_concurrency, SNAPQ_HOST_CONCURRENCY by
// default, within SNAPQ_HOST_CONCURRENCY_MAX). The worker takes a slot of the
// job's host before loading the page and gives it back when the page work is
// done; a host at its cap sends the task back to the queue for a moment
// instead of holding a worker slot.

// Host cap defaults and limits.
const (
	DefaultHostConcurrency    = 4  // SNAPQ_HOST_CONCURRENCY
	DefaultHostConcurrencyMax = 16 // SNAPQ_HOST_CONCURRENCY_MAX
	// HardMaxHostConcurrency bounds the option and both variables.
	HardMaxHostConcurrency = 1000
	// DefaultHostWait is how long a worker waits for a host's slot before
	// it hands the task back to the queue.
	DefaultHostWait = 2 * time.Second
	// HostBusyDelay is how long a task handed back for a busy host waits in
	// the queue.
	HostBusyDelay = 2 * time.Second
	// DefaultInteractiveHostHeadroom is SNAPQ_INTERACTIVE_HOST_HEADROOM's
	// default: one capture of a host somebody waits for may run above the
	// host's cap (Handler.InteractiveHostHeadroom).
	DefaultInteractiveHostHeadroom = 1
	// MaxInteractiveHostHeadroom bounds SNAPQ_INTERACTIVE_HOST_HEADROOM.
	MaxInteractiveHostHeadroom = 16
)

// ErrHostBusy is a capture attempt that did not start because its target
// host is at its cap: not a failure, the task comes back after a short delay
// without using one of the job's attempts (queue: IsHostBusy).
var ErrHostBusy = errors.New("target host at its concurrency cap")

// IsHostBusy reports whether a handler's error is ErrHostBusy; the worker's
// asynq IsFailure treats it as no failure.
func IsHostBusy(err error) bool { return errors.Is(err, ErrHostBusy) }

// HostSlots caps captures per target host across workers.
// ratelimit.HostSemaphore implements it.
type HostSlots interface {
	// Acquire takes one of host's limit slots, waiting up to wait for one.
	// ok=false: none came free in time. release gives the slot back.
	Acquire(ctx context.Context, host string, limit int, wait time.Duration) (release func(), ok bool, err error)
}

// FirstHostSlots is HostSlots whose AcquireFirst goes ahead of Acquire's
// waiters: an interactive job (somebody waits for it) takes the host's next
// free slot before the batch jobs waiting for one. Its limit may be above
// theirs (Handler.InteractiveHostHeadroom): the slots above their limit are
// then its alone.
// ratelimit.HostSemaphore implements it.
type FirstHostSlots interface {
	AcquireFirst(ctx context.Context, host string, limit int, wait time.Duration) (release func(), ok bool, err error)
}

// TargetHost is the host a job's URL names, lower-case, with its port when
// it has one ("example.com", "127.0.0.1:8080"): the key of its host cap.
func TargetHost(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// CheckHostConcurrency names the host_concurrency of in (at prefix) in errs when
// it is above the server's maximum (0: DefaultHostConcurrencyMax).
func CheckHostConcurrency(max int, in *OptionsInput, prefix string, errs *FieldErrors) {
	if max <= 0 {
		max = DefaultHostConcurrencyMax
	}
	if in == nil || in.HostConcurrency == nil || *in.HostConcurrency <= float64(max) {
		return
	}
	errs.Add("invalid_option", prefix+".host_concurrency",
		fmt.Sprintf("must be at most %d on this server (SNAPQ_HOST_CONCURRENCY_MAX)", max))
}
