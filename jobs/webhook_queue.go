package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// KindWebhook is the task kind of one webhook delivery.
const KindWebhook = "webhook:deliver"

// QueueWebhooks is the asynq queue webhook deliveries run on.
const QueueWebhooks = "webhooks"

const (
	// webhookTaskTimeout bounds a delivery task (the attempt itself is
	// bounded by WebhookConfig.Timeout, at most 2 minutes).
	webhookTaskTimeout = 3 * time.Minute
	// webhookGrace is how long a pending delivery may sit before the
	// reconciler checks its task: the worker that completed the batch
	// normally enqueues it right away.
	webhookGrace = 5 * time.Second
	// maxWebhookRetryDelay caps the backoff between attempts.
	maxWebhookRetryDelay = 10 * time.Minute
)

// WebhookPayload is the payload of a webhook:deliver task.
type WebhookPayload struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind implements the task-kind convention.
func (WebhookPayload) Kind() string { return KindWebhook }

// WebhookQueue carries deliveries to workers. AsynqQueue implements it.
type WebhookQueue interface {
	// EnqueueWebhook submits the delivery's task (task id = delivery id, so
	// enqueuing it twice is not an error).
	EnqueueWebhook(ctx context.Context, deliveryID string) error
	// WebhookTaskState is like Queue.TaskState for a delivery's task.
	WebhookTaskState(ctx context.Context, deliveryID string) (state, lastErr string, err error)
}

var _ WebhookQueue = (*AsynqQueue)(nil)

// EnqueueWebhook implements WebhookQueue; retries: QueueConfig.WebhookMaxRetry.
func (q *AsynqQueue) EnqueueWebhook(ctx context.Context, deliveryID string) error {
	return q.enqueue(ctx, KindWebhook, WebhookPayload{DeliveryID: deliveryID}, deliveryID,
		asynq.Queue(QueueWebhooks), asynq.MaxRetry(max(q.cfg.WebhookMaxRetry, 0)), asynq.Timeout(webhookTaskTimeout))
}

// WebhookTaskState implements WebhookQueue.
func (q *AsynqQueue) WebhookTaskState(_ context.Context, deliveryID string) (string, string, error) {
	return q.taskState(QueueWebhooks, deliveryID)
}

// WebhookRetryDelay is the backoff between delivery attempts: exponential
// from base, capped at 10 minutes, with up to 20% jitter.
func WebhookRetryDelay(base time.Duration) asynq.RetryDelayFunc {
	if base <= 0 {
		base = 10 * time.Second
	}
	return func(n int, _ error, _ *asynq.Task) time.Duration {
		d := base
		for i := 0; i < n && d < maxWebhookRetryDelay; i++ {
			d *= 2
		}
		d = min(d, maxWebhookRetryDelay)
		return d + time.Duration(rand.Int64N(int64(d)/5+1))
	}
}

// TaskRetryDelay is the worker's asynq RetryDelayFunc: WebhookRetryDelay for
// webhook deliveries, RetryDelay for everything else.
func TaskRetryDelay(base time.Duration) asynq.RetryDelayFunc {
	capture, hook := RetryDelay(base), WebhookRetryDelay(base)
	return func(n int, err error, t *asynq.Task) time.Duration {
		if t != nil && t.Type() == KindWebhook {
			return hook(n, err, t)
		}
		return capture(n, err, t)
	}
}

// enqueueWebhooks enqueues the batch's pending deliveries right after a job
// reached a final status, so a completed batch is announced without waiting
// for the reconciler. Failures are logged: the reconciler catches up.
func (h *Handler) enqueueWebhooks(ctx context.Context, batchID string) {
	enqueuePendingWebhooks(ctx, h.Repo, h.Webhooks, h.logger(), batchID)
}

// enqueuePendingWebhooks enqueues a batch's pending deliveries (no-op without a queue).
func enqueuePendingWebhooks(ctx context.Context, repo Repository, q WebhookQueue, log *slog.Logger, batchID string) {
	if q == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ds, err := repo.ListWebhookDeliveries(ctx, batchID)
	if err != nil {
		log.Warn("list webhook deliveries; the reconciler will enqueue them", "batch_id", batchID, "err", err)
		return
	}
	for _, d := range ds {
		if d.Status != DeliveryPending {
			continue
		}
		if err := q.EnqueueWebhook(ctx, d.ID); err != nil {
			log.Warn("enqueue webhook delivery; the reconciler will retry", "delivery_id", d.ID, "err", err)
		}
	}
}

// reconcileWebhooks is the reconciler's outbox step: a pending delivery
// whose task is missing (enqueue failed, Redis lost it, or the batch was
// completed by a cancel in the api) is enqueued; one whose task the queue
// gave up on is failed.
func (r *Reconciler) reconcileWebhooks(ctx context.Context) (int, error) {
	if r.Webhooks == nil {
		return 0, nil
	}
	grace := webhookGrace
	if r.Grace > 0 && r.Grace < grace {
		grace = r.Grace
	}
	ds, err := r.Repo.PendingWebhookDeliveries(ctx, time.Now().Add(-grace), 1000)
	if err != nil {
		return 0, err
	}
	acted := 0
	var errs []error
	for _, d := range ds {
		state, lastErr, err := r.Webhooks.WebhookTaskState(ctx, d.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch state {
		case "":
			err = r.Webhooks.EnqueueWebhook(ctx, d.ID)
		case "archived", "completed":
			msg := "the queue gave up on the delivery"
			if lastErr != "" {
				msg += ": " + lastErr
			}
			_, err = r.Repo.FailWebhookDelivery(ctx, d.ID, msg)
		default:
			continue
		}
		acted++
		if err != nil {
			errs = append(errs, fmt.Errorf("webhook delivery %s: %w", d.ID, err))
		}
	}
	return acted, errors.Join(errs...)
}
