package web

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the API description (OpenAPI 3.1) of every public route, kept
// in the repository as web/openapi.json and served at GET /openapi.json. The
// contract tests hold the router (openapi_test.go) and every e2e request and
// response (internal/contract) to it.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPIETag is the document's ETag: it changes with the binary's document.
var openAPIETag = func() string {
	sum := sha256.Sum256(OpenAPI)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}()

// serveOpenAPI answers GET /openapi.json, anonymously. Clients revalidate
// (Cache-Control: no-cache) and get a 304 while the ETag matches.
func serveOpenAPI(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", openAPIETag)
	if match := c.GetHeader("If-None-Match"); match != "" && strings.Contains(match, openAPIETag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json", OpenAPI)
}
