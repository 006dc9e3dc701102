package regression

import (
	"fmt"

	"github.com/snapq/snapq/jobs"
)

// MaxKeepRuns bounds a suite's retention.keep_runs.
const MaxKeepRuns = 100000

// Retention is how long a suite's runs are kept (jobs/retention.go): runs
// older than Days (their batches, captures, comparisons and objects) and
// runs beyond the newest KeepRuns are deleted, except the images any
// baseline names. Nil fields: the suite sets no limit of that kind (Days
// falls back to the owner key's, then SNAPQ_RETENTION_DAYS); 0 Days keeps
// runs forever whatever the key says.
type Retention struct {
	Days     *int `json:"days,omitempty"`
	KeepRuns *int `json:"keep_runs,omitempty"`
}

// validateRetention checks a suite's retention; nil stays nil.
func validateRetention(in *Retention, errs *jobs.FieldErrors) *Retention {
	if in == nil {
		return nil
	}
	if in.Days == nil && in.KeepRuns == nil {
		errs.Add("invalid_option", "retention", `give "days", "keep_runs" or both, or leave retention out`)
		return nil
	}
	if in.Days != nil && (*in.Days < 0 || *in.Days > jobs.MaxRetentionDays) {
		errs.Add("invalid_option", "retention.days", fmt.Sprintf("must be 0 (keep forever) to %d days", jobs.MaxRetentionDays))
	}
	if in.KeepRuns != nil && (*in.KeepRuns < 1 || *in.KeepRuns > MaxKeepRuns) {
		errs.Add("invalid_option", "retention.keep_runs", fmt.Sprintf("must be 1-%d runs (leave it out to keep any number)", MaxKeepRuns))
	}
	out := *in
	return &out
}
