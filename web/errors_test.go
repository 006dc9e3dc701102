package web

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/snapq/snapq/regression"
)

// TestPreviewTooCostlyError: a preview past its budget answers 422
// preview_too_costly with the preview's own message.
func TestPreviewTooCostlyError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("%w (1s) after 7679 of 50000 changes", regression.ErrPreviewTooCostly)
	e := toAPIError(err)
	if e.Status != http.StatusUnprocessableEntity || e.Code != "preview_too_costly" || e.Message != err.Error() {
		t.Errorf("got %d %s %q, want 422 preview_too_costly with the message", e.Status, e.Code, e.Message)
	}
}
