package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// A capture that waits longer than the server's WriteTimeout is still answered:
// allowWait moves the write deadline past its wait (without it the client reads EOF).
func TestAllowWaitOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/", func(c *gin.Context) {
		allowWait(c, time.Second)
		<-time.After(400 * time.Millisecond) // the capture's wait, past the WriteTimeout
		c.String(http.StatusOK, "answered")
	})
	srv := httptest.NewUnstartedServer(r)
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET: %v (the connection was cut at the WriteTimeout)", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "answered" {
		t.Errorf("body %q, want the answer", b)
	}
}
