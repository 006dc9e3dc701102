package authprofile

import (
	"time"

	"github.com/snapq/snapq/jobs"
)

// KindAuthTest runs an auth profile's recipe now (POST /v1/auth-profiles/:id/test).
const KindAuthTest = "auth:test"

// TestPayload is the payload of an auth:test task.
type TestPayload struct {
	TestID    string `json:"test_id"`
	ProfileID string `json:"profile_id"`
}

func (TestPayload) Kind() string { return KindAuthTest }
func (p TestPayload) ID() string { return p.TestID }

// Rule: on the capture queue (it drives a browser), three minutes, never
// retried (the caller asks again), task id "authtest-<id>".
func (TestPayload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueCapture, Timeout: 3 * time.Minute, MaxDelay: time.Minute, IDPrefix: "authtest-"}
}
