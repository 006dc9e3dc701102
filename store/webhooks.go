package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/webhook"
)

// insertBatchWebhook writes b's webhook, if any, in CreateBatch's transaction:
// its signing secret sealed when the store has a sealer (plaintext without).
func (s *Store) insertBatchWebhook(ctx context.Context, tx pgx.Tx, b *jobs.Batch) error {
	if b.Webhook == nil {
		return nil
	}
	event := b.Webhook.Event
	if event == "" {
		event = jobs.EventBatchCompleted
	}
	plain, sealed, err := s.sealWebhookSecret(b.Webhook.Secret, batchHookAAD(b.ID))
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO batch_webhooks (batch_id, url, secret, secret_sealed, event) VALUES ($1, $2, $3, $4, $5)`,
		b.ID, b.Webhook.URL, plain, sealed, event); err != nil {
		return fmt.Errorf("insert batch webhook: %w", err)
	}
	return nil
}

// createCompletionDelivery adds the batch.completed delivery of a batch that
// has a webhook, in the transaction that completed the batch. A second call
// for the same batch does nothing (UNIQUE (batch_id, event)).
func createCompletionDelivery(ctx context.Context, tx pgx.Tx, batchID string) error {
	return createDelivery(ctx, tx, batchID, jobs.EventBatchCompleted)
}

// createDelivery adds a pending delivery of event when the batch's webhook
// announces that event; a second call does nothing.
func createDelivery(ctx context.Context, tx pgx.Tx, batchID, event string) error {
	_, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, batch_id, event, status)
		SELECT $2, batch_id, $3, 'pending' FROM batch_webhooks WHERE batch_id = $1 AND event = $3
		ON CONFLICT (batch_id, event) DO NOTHING`, batchID, uuid.Must(uuid.NewV7()).String(), event)
	if err != nil {
		return fmt.Errorf("create webhook delivery of batch %s: %w", batchID, err)
	}
	return nil
}

// GetBatchWebhook implements webhook.DeliveryStore.
func (s *Store) GetBatchWebhook(ctx context.Context, batchID string) (*jobs.Webhook, error) {
	var w jobs.Webhook
	var plain *string
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT url, secret, secret_sealed FROM batch_webhooks WHERE batch_id = $1`, batchID).
		Scan(&w.URL, &plain, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get webhook of batch %s: %w", batchID, err)
	}
	if w.Secret, err = s.openWebhookSecret(plain, sealed, batchHookAAD(batchID)); err != nil {
		return nil, fmt.Errorf("webhook of batch %s: %w", batchID, err)
	}
	return &w, nil
}

const deliveryColumns = `id, batch_id, event, status, attempts, coalesce(last_status, 0), coalesce(last_error, ''),
	created_at, updated_at, delivered_at, data`

func scanDelivery(row pgx.Row) (*webhook.Delivery, error) {
	var d webhook.Delivery
	err := row.Scan(&d.ID, &d.BatchID, &d.Event, &d.Status, &d.Attempts, &d.LastStatus, &d.LastError,
		&d.CreatedAt, &d.UpdatedAt, &d.DeliveredAt, &d.Data)
	return &d, err
}

func collectDeliveries(rows pgx.Rows, err error) ([]*webhook.Delivery, error) {
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*webhook.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return out, nil
}

// GetWebhookDelivery implements webhook.DeliveryStore.
func (s *Store) GetWebhookDelivery(ctx context.Context, id string) (*webhook.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get webhook delivery %s: %w", id, err)
	}
	return d, nil
}

// ListWebhookDeliveries implements webhook.Deliveries.
func (s *Store) ListWebhookDeliveries(ctx context.Context, batchID string) ([]*webhook.Delivery, error) {
	return collectDeliveries(s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE batch_id = $1 ORDER BY created_at, id`, batchID))
}

// PendingWebhookDeliveries implements webhook.PendingStore.
func (s *Store) PendingWebhookDeliveries(ctx context.Context, before time.Time, limit int) ([]*webhook.Delivery, error) {
	return collectDeliveries(s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE status = 'pending' AND updated_at < $1 ORDER BY updated_at LIMIT $2`, before, limit))
}

// RecordWebhookAttempt implements webhook.DeliveryStore.
func (s *Store) RecordWebhookAttempt(ctx context.Context, id string, a webhook.Attempt) (bool, error) {
	switch a.Status {
	case webhook.DeliveryPending, webhook.DeliveryDelivered, webhook.DeliveryFailed:
	default:
		return false, fmt.Errorf("record webhook attempt %s: unknown status %q", id, a.Status)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, status = $2::text,
		last_status = NULLIF($3::int, 0), last_error = NULLIF($4::text, ''), updated_at = now(),
		delivered_at = CASE WHEN $2::text = 'delivered' THEN now() ELSE delivered_at END
		WHERE id = $1 AND status = 'pending'`, id, a.Status, a.HTTPStatus, a.Error)
	if err != nil {
		return false, fmt.Errorf("record webhook attempt %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailWebhookDelivery implements webhook.PendingStore.
func (s *Store) FailWebhookDelivery(ctx context.Context, id, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, updated_at = now()
		WHERE id = $1 AND status = 'pending'`, id, reason)
	if err != nil {
		return false, fmt.Errorf("fail webhook delivery %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// CreateEventDelivery adds a delivery of event with its data fixed now, when
// the batch has a webhook; ok is false without one, or when the batch already
// has a delivery of event (one per batch and event).
func (s *Store) CreateEventDelivery(ctx context.Context, batchID, event string, data []byte) (id string, ok bool, err error) {
	id = uuid.Must(uuid.NewV7()).String()
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_deliveries (id, batch_id, event, status, data)
		SELECT $2, batch_id, $3, 'pending', $4 FROM batch_webhooks WHERE batch_id = $1
		ON CONFLICT (batch_id, event) DO NOTHING`, batchID, id, event, data)
	if err != nil {
		return "", false, fmt.Errorf("create %s delivery of batch %s: %w", event, batchID, err)
	}
	return id, tag.RowsAffected() == 1, nil
}
