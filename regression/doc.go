// Package regression is scheduled visual regression: suites name the pages
// to watch (suite.go); a run captures them as a batch of jobs (Service), and
// the Comparer diffs every segment of every capture with the approved
// baseline of the same target, viewport and segment, masking ignored
// elements and rectangles (compare.go). Schedules are cron expressions in a
// time zone; ScheduleProvider lists the suite runs they start, which queue's
// cron provider reads from Postgres on every sync (schedule.go). regression
// knows no queue library: it declares the enqueue interfaces it consumes.
//
// It builds on jobs (a run is a batch) and diff; it reaches the rest of the
// system through hooks wired in cmd/: CompareWhenFinal after a capture job is
// final, ReconcileStep for comparisons a dead worker never enqueued,
// RunFinished to announce a settled run, RunCompletedEvent for the webhook
// payload of run.completed.
package regression
