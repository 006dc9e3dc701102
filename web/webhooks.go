package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
)

// listWebhooks answers GET /v1/batches/:id/webhooks: the batch's webhook URL
// (never its secret) and every delivery with its outcome so far.
func (s *Server) listWebhooks(c *gin.Context) error {
	b, err := loaded[*jobs.Batch](c, batchKey)
	if err != nil {
		return err
	}
	var out webhookList
	wh, err := s.Webhooks.GetBatchWebhook(c.Request.Context(), b.ID)
	switch {
	case err == nil:
		out.Webhook = &webhookRef{URL: wh.URL}
	case !errors.Is(err, jobs.ErrNotFound):
		return fmt.Errorf("webhook of batch %s: %w", b.ID, err)
	}
	ds, err := s.Webhooks.ListWebhookDeliveries(c.Request.Context(), b.ID)
	if err != nil {
		return fmt.Errorf("webhook deliveries of batch %s: %w", b.ID, err)
	}
	out.Deliveries = make([]deliveryView, len(ds))
	for i, d := range ds {
		v := deliveryView{ID: d.ID, Event: d.Event, Status: d.Status, Attempts: d.Attempts,
			LastError: nullable(d.LastError), CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt}
		if d.LastStatus != 0 {
			status := d.LastStatus
			v.LastStatus = &status
		}
		out.Deliveries[i] = v
	}
	c.JSON(http.StatusOK, out)
	return nil
}
