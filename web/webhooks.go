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
func (s *Server) listWebhooks(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if _, ok := s.batch(c, id); !ok {
		return
	}
	var hook any
	wh, err := s.Repo.GetBatchWebhook(c.Request.Context(), id)
	switch {
	case err == nil:
		hook = gin.H{"url": wh.URL}
	case !errors.Is(err, jobs.ErrNotFound):
		writeError(c, fmt.Errorf("webhook of batch %s: %w", id, err))
		return
	}
	ds, err := s.Repo.ListWebhookDeliveries(c.Request.Context(), id)
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]gin.H, len(ds))
	for i, d := range ds {
		var lastStatus any
		if d.LastStatus != 0 {
			lastStatus = d.LastStatus
		}
		out[i] = gin.H{"id": d.ID, "event": d.Event, "status": d.Status, "attempts": d.Attempts,
			"last_status": lastStatus, "last_error": nullable(d.LastError), "created_at": d.CreatedAt,
			"delivered_at": d.DeliveredAt}
	}
	c.JSON(http.StatusOK, gin.H{"webhook": hook, "deliveries": out})
}
