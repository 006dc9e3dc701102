package webhook

import (
	"time"

	"github.com/snapq/snapq/jobs"
)

// KindWebhook is the kind of a delivery's task.
const KindWebhook = "webhook:deliver"

// Payload is the payload of a webhook:deliver task; the delivery id is the
// task id, so enqueuing it twice is a no-op.
type Payload struct {
	DeliveryID string `json:"delivery_id"`
}

func (Payload) Kind() string { return KindWebhook }
func (p Payload) ID() string { return p.DeliveryID }

// Rule: on its own queue so deliveries are never starved, three minutes an
// attempt, retried SNAPQ_WEBHOOK_MAX_RETRY times with backoff up to 10 min.
func (Payload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueWebhooks, Timeout: 3 * time.Minute, RetryFrom: jobs.RetryDeliveries, MaxDelay: 10 * time.Minute}
}
