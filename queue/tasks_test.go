package queue

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/snapq/snapq/jobs"
)

func TestRetryDelayPerKind(t *testing.T) {
	t.Parallel()
	f := RetryDelay(time.Second)
	hook, capture := asynq.NewTask(jobs.KindWebhook, nil), asynq.NewTask(jobs.KindCapture, nil)
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
