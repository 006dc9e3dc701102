package notify

import (
	"time"

	"github.com/snapq/snapq/jobs"
)

// KindNotify delivers one of a run's notifications.
const KindNotify = "notify:deliver"

// Payload is the payload of a notify:deliver task; the notification's id
// makes the task id ("notify-<id>").
type Payload struct {
	NotificationID string `json:"notification_id"`
}

func (Payload) Kind() string { return KindNotify }
func (p Payload) ID() string { return p.NotificationID }

// Rule: on the webhooks queue, two minutes an attempt, retried as webhooks are.
func (Payload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueWebhooks, Timeout: 2 * time.Minute, RetryFrom: jobs.RetryDeliveries,
		MaxDelay: 10 * time.Minute, IDPrefix: "notify-"}
}
