package jobs

import "time"

// Stages of a job attempt that are not in its result's timings_ms (they
// happen after the result is committed): Handler.Stage gets them.
const (
	StageCommit = "commit" // the transaction storing the result, the artifact rows and the job's status
	StageEvents = "events" // the AfterFinal hooks: webhooks, comparisons, the dispatcher's next jobs
	// StageBand is one screenshot call of the capture stage (one band of segments, or the one
	// image of modes viewport and full), observed once per call: a part of "capture", not a
	// stage of its own.
	StageBand = "capture_band"
)

// startStages adds to a rendered result's timings_ms the stages before the
// capture: "queue", from the job's creation to this attempt's start (the
// dispatcher, the queue, the wait for a free worker slot, a retry's
// backoff), and "start", the wait for the host's slot and the StartJob
// transaction. Then every stage of the timings goes to Handler.Stage, and
// each screenshot call of the capture as StageBand.
func (h *Handler) startStages(result *Result, job *Job, entered, begin time.Time) {
	if !job.CreatedAt.IsZero() {
		result.TimingsMS["queue"] = max(0, entered.Sub(job.CreatedAt).Milliseconds())
	}
	result.TimingsMS["start"] = begin.Sub(entered).Milliseconds()
	calls := result.ScreenshotCalls
	result.ScreenshotCalls = nil // observed below, not stored
	if h.Stage == nil {
		return
	}
	for k, v := range result.TimingsMS {
		if k != "total" {
			h.Stage(k, time.Duration(v)*time.Millisecond)
		}
	}
	for _, d := range calls {
		h.Stage(StageBand, d)
	}
}

// observe gives Handler.Stage the time since start of stage.
func (h *Handler) observe(stage string, start time.Time) {
	if h.Stage != nil {
		h.Stage(stage, time.Since(start))
	}
}
