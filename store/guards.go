package store

import (
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/webhook"
)

// Store implements every repository interface the domain packages declare
// where they consume them.
var (
	_ jobs.BatchStore        = (*Store)(nil)
	_ jobs.InFlightLimiter   = (*Store)(nil)
	_ jobs.JobStore          = (*Store)(nil)
	_ jobs.ReconcileStore    = (*Store)(nil)
	_ jobs.KeyStore          = (*Store)(nil)
	_ maintenance.SweepStore = (*Store)(nil)
	_ jobs.DispatchStore     = (*Store)(nil)

	_ regression.SuiteStore    = (*Store)(nil)
	_ regression.Schedules     = (*Store)(nil)
	_ regression.CompareStore  = (*Store)(nil)
	_ regression.Uncompared    = (*Store)(nil)
	_ regression.RunsOfBatches = (*Store)(nil)
	_ regression.Reader        = (*Store)(nil)

	_ webhook.Deliveries    = (*Store)(nil)
	_ webhook.DeliveryStore = (*Store)(nil)
	_ webhook.PendingStore  = (*Store)(nil)
)
