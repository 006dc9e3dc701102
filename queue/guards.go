package queue

import "github.com/snapq/snapq/regression"

// AsynqQueue implements the enqueue interfaces regression declares where it
// consumes them, and regression's schedules are the cron provider's source
// (jobs' interfaces are guarded beside their methods).
var (
	_ regression.CompareTasks = (*AsynqQueue)(nil)
	_ ScheduledTasks          = (*regression.ScheduleProvider)(nil)
)
