package regression

import (
	"time"

	"github.com/snapq/snapq/jobs"
)

// The tasks of visual regression: their kinds, payloads and task rules
// (jobs.Payload); the queue applies the rules.

// Task kinds.
const (
	KindCompare  = "regression:compare"
	KindSuiteRun = "regression:run"
	// KindVCSReport reports a run to its suite's code host (report.go).
	KindVCSReport = "vcs:report"
)

// ComparePayload is the payload of a regression:compare task: the final
// capture job JobID and, when the enqueuer knew it (the worker that settled
// the job), which capture of which run it is, so the comparison need not
// look it up (a payload without RunID, from the reconciler or an older
// version, is looked up: Captures.CaptureOf).
type ComparePayload struct {
	JobID          string `json:"job_id"`
	RunID          string `json:"run_id,omitempty"`
	Target         string `json:"target,omitempty"`
	Viewport       string `json:"viewport,omitempty"`
	CaptureJobID   string `json:"capture_job_id,omitempty"`
	ReferenceJobID string `json:"reference_job_id,omitempty"`
}

// compareOf is the compare payload of final job jobID, the capture c of a run.
func compareOf(jobID string, c jobs.RunCaptureRef) ComparePayload {
	return ComparePayload{JobID: jobID, RunID: c.RunID, Target: c.Target, Viewport: c.Viewport,
		CaptureJobID: c.JobID, ReferenceJobID: c.ReferenceJobID}
}

// key is the capture key the payload carries (ok false: it carries none).
func (p ComparePayload) key() (CaptureKey, bool) {
	return CaptureKey{Target: p.Target, Viewport: p.Viewport, JobID: p.CaptureJobID, ReferenceJobID: p.ReferenceJobID},
		p.RunID != "" && p.CaptureJobID != ""
}

// SuiteRunPayload is the payload of a regression:run task.
type SuiteRunPayload struct {
	SuiteID string `json:"suite_id"`
}

// VCSReportPayload is the payload of a vcs:report task. ReportID (a fresh id
// per report: a run is reported when it starts, ends and is approved) makes
// the task id. What the report says is decided when its event happens and
// travels here, never re-read when the task runs: Seq orders a run's reports
// (1 the start, 2 the end, 3 and up approvals; a task older than the run's
// last delivered report is dropped), RunStatus, State and Description are
// the run's status, the commit state and its description at that moment.
// A payload without Seq (enqueued by an older version) reports the run as
// it is when the task runs.
type VCSReportPayload struct {
	ReportID    string `json:"report_id"`
	RunID       string `json:"run_id"`
	Seq         int    `json:"seq,omitempty"`
	RunStatus   string `json:"run_status,omitempty"`
	State       string `json:"state,omitempty"`
	Description string `json:"description,omitempty"`
}

func (ComparePayload) Kind() string   { return KindCompare }
func (p ComparePayload) ID() string   { return p.JobID }
func (SuiteRunPayload) Kind() string  { return KindSuiteRun }
func (p SuiteRunPayload) ID() string  { return p.SuiteID }
func (VCSReportPayload) Kind() string { return KindVCSReport }
func (p VCSReportPayload) ID() string { return p.ReportID }

// Rule: five minutes a comparison, retried as captures are (at least 3
// times), task id "compare-<job id>".
func (ComparePayload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueRegression, Timeout: 5 * time.Minute, Retries: 3, RetryFrom: jobs.RetryCaptures,
		MaxDelay: 5 * time.Minute, IDPrefix: "compare-"}
}

// Rule: one minute to start a run, retried 3 times; a second start of the
// same suite within a minute is a no-op.
func (SuiteRunPayload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueRegression, Timeout: time.Minute, Retries: 3, MaxDelay: 5 * time.Minute, Unique: time.Minute}
}

// Rule: one request to the code host, retried as webhooks are.
func (VCSReportPayload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueReports, Timeout: time.Minute, RetryFrom: jobs.RetryDeliveries,
		MaxDelay: 10 * time.Minute, IDPrefix: "vcs-"}
}
