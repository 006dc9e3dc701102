package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/snapq/snapq/jobs"
)

// slowPayload is a kind whose rule lets the backoff grow to 10 minutes.
type slowPayload struct{ N string }

func (slowPayload) Kind() string { return "test:slow" }
func (p slowPayload) ID() string { return p.N }
func (slowPayload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: QueueWebhooks, RetryFrom: jobs.RetryDeliveries, MaxDelay: 10 * time.Minute}
}

// The backoff grows to the MaxDelay of the task's rule, once the process
// has seen the kind (registered its handler or enqueued it).
func TestRetryDelayPerKind(t *testing.T) {
	t.Parallel()
	Register(asynq.NewServeMux(), func(context.Context, jobs.CapturePayload) error { return nil })
	if _, _, err := NewTask(slowPayload{N: "x"}, 0, Config{}); err != nil {
		t.Fatal(err)
	}
	f := RetryDelay(time.Second)
	hook, capture := asynq.NewTask("test:slow", nil), asynq.NewTask(jobs.KindCapture, nil)
	if d := f(20, nil, hook); d < 10*time.Minute || d > 12*time.Minute {
		t.Errorf("webhook delay after 20 retries = %s, want about 10m", d)
	}
	if d := f(20, nil, capture); d < 5*time.Minute || d > 6*time.Minute {
		t.Errorf("capture delay after 20 retries = %s, want about 5m", d)
	}
	if d := f(0, nil, hook); d < time.Second || d > 1200*time.Millisecond {
		t.Errorf("first webhook delay = %s, want about 1s", d)
	}
}

// A task that could not reach the job store did not fail; its delay follows
// the outage, from the base delay up to UnavailableMaxDelay.
func TestUnavailableRetries(t *testing.T) {
	t.Parallel()
	down := fmt.Errorf("start job x: %w: connection refused", jobs.ErrUnavailable)
	if IsFailure(down) {
		t.Errorf("IsFailure(%v) = true; an unreachable store must not count as a failed attempt", down)
	}
	if !IsFailure(errors.New("navigation_timeout: slow")) {
		t.Error("IsFailure(a capture failure) = false")
	}
	s := &Server{base: time.Second}
	capture := asynq.NewTask(jobs.KindCapture, nil)
	if d := s.retryDelay(0, down, capture); d < time.Second || d > 1200*time.Millisecond {
		t.Errorf("delay at the start of an outage = %s, want about the base 1s", d)
	}
	s.outageSince = time.Now().Add(-12 * time.Second)
	if d := s.retryDelay(0, down, capture); d < 12*time.Second || d > 15*time.Second {
		t.Errorf("delay 12 s into an outage = %s, want about 12s", d)
	}
	s.outageSince = time.Now().Add(-time.Hour)
	if d := s.retryDelay(3, down, capture); d < UnavailableMaxDelay || d > UnavailableMaxDelay*6/5 {
		t.Errorf("delay an hour into an outage = %s, want about %s", d, UnavailableMaxDelay)
	}
	if d := s.retryDelay(2, errors.New("upload_failed"), capture); d < 4*time.Second || d > 4800*time.Millisecond {
		t.Errorf("delay of an ordinary third retry = %s, want about 4s", d)
	}
}
