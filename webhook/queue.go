package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/jobs"
)

// How deliveries reach the queue: the worker that makes a batch (or a run)
// final enqueues its pending deliveries at once (Announcer); the api's
// reconciler enqueues any it missed (ReconcileStep). The task's kind, queue,
// retries and backoff are its rule (task.go).

// reconcileGrace is how long a pending delivery may sit before the
// reconciler checks its task: the worker that completed the batch normally
// enqueues it right away.
const reconcileGrace = 5 * time.Second

// Queue carries deliveries (Payload) to workers. queue.AsynqQueue implements it.
type Queue interface {
	// Submit enqueues a task; a duplicate (the same delivery) is not an error.
	Submit(ctx context.Context, p jobs.Payload, timeout time.Duration) error
	// PayloadState is like jobs.Queue.TaskState for a payload's task.
	PayloadState(ctx context.Context, p jobs.Payload) (state, lastErr string, err error)
}

// Enqueue submits delivery id's task (task id = delivery id, so enqueuing it
// twice is not an error).
func Enqueue(ctx context.Context, q interface {
	Submit(ctx context.Context, p jobs.Payload, timeout time.Duration) error
}, id string) error {
	return q.Submit(ctx, Payload{DeliveryID: id}, 0)
}

// Announcer enqueues a batch's pending deliveries right after the batch may
// have become final, so it is announced without waiting for the reconciler.
// Failures are logged: the reconciler catches up.
type Announcer struct {
	Repo   Deliveries
	Queue  Queue
	Logger *slog.Logger
}

// AfterFinal is the job handler's after-final hook: it enqueues the
// deliveries the job's outcome created (settled, when the store told), or
// else every pending delivery of the job's batch.
func (a *Announcer) AfterFinal(ctx context.Context, job *jobs.Job, settled jobs.Settled) {
	if !settled.Known {
		a.Batch(ctx, job.BatchID)
		return
	}
	for _, id := range settled.Deliveries {
		if err := Enqueue(ctx, a.Queue, id); err != nil {
			jobs.Log(a.Logger).Warn("enqueue webhook delivery; the reconciler will retry", "delivery_id", id, "err", err)
		}
	}
}

// Batch enqueues the batch's pending deliveries.
func (a *Announcer) Batch(ctx context.Context, batchID string) {
	log := jobs.Log(a.Logger)
	ds, err := a.Repo.ListWebhookDeliveries(ctx, batchID)
	if err != nil {
		log.Warn("list webhook deliveries; the reconciler will enqueue them", "batch_id", batchID, "err", err)
		return
	}
	for _, d := range ds {
		if d.Status != DeliveryPending {
			continue
		}
		if err := Enqueue(ctx, a.Queue, d.ID); err != nil {
			log.Warn("enqueue webhook delivery; the reconciler will retry", "delivery_id", d.ID, "err", err)
		}
	}
}

// PendingStore is what the reconcile step needs.
type PendingStore interface {
	// PendingWebhookDeliveries lists pending deliveries not updated since before.
	PendingWebhookDeliveries(ctx context.Context, before time.Time, limit int) ([]*Delivery, error)
	// FailWebhookDelivery marks a pending delivery failed without counting an
	// attempt (the queue gave up on it).
	FailWebhookDelivery(ctx context.Context, id, reason string) (ok bool, err error)
}

// ReconcileStep is the reconciler's outbox pass for deliveries: a pending
// delivery whose task is missing (enqueue failed, Redis lost it, or the batch
// was completed by a cancel in the api) is enqueued; one whose task the queue
// gave up on is failed. grace (the reconciler's, 0 for the default) shortens
// the wait before a delivery is checked.
func ReconcileStep(repo PendingStore, q Queue, grace time.Duration) jobs.ReconcileStep {
	if grace <= 0 || grace > reconcileGrace {
		grace = reconcileGrace
	}
	return jobs.ReconcileStep{Name: "webhooks", Run: func(ctx context.Context) (int, error) {
		ds, err := repo.PendingWebhookDeliveries(ctx, time.Now().Add(-grace), 1000)
		if err != nil {
			return 0, err
		}
		acted := 0
		var errs []error
		for _, d := range ds {
			state, lastErr, err := q.PayloadState(ctx, Payload{DeliveryID: d.ID})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			switch state {
			case "":
				err = Enqueue(ctx, q, d.ID)
			case "archived", "completed":
				msg := "the queue gave up on the delivery"
				if lastErr != "" {
					msg += ": " + lastErr
				}
				_, err = repo.FailWebhookDelivery(ctx, d.ID, msg)
			default:
				continue
			}
			acted++
			if err != nil {
				errs = append(errs, fmt.Errorf("webhook delivery %s: %w", d.ID, err))
			}
		}
		return acted, errors.Join(errs...)
	}}
}
