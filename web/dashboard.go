package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"
)

// The dashboard is plain HTML, CSS and JavaScript modules, embedded in the
// binary so the api serves it without a build step or a CDN. It only calls the
// public JSON API; routing happens in the URL fragment (#/batches/ID), so the
// server needs no route beyond "/" and "/assets/*".
//
//go:embed dashboard
var dashboardFiles embed.FS

// dashboardAsset is one embedded file, ready to serve.
type dashboardAsset struct {
	body        []byte
	contentType string
	etag        string
}

// assetTypes are the content types of the files the dashboard ships. An
// explicit table, not mime.TypeByExtension, so the answer does not depend on
// the host's /etc/mime.types.
var assetTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

// dashboardCSP keeps the page to its own scripts and styles. Images and
// previews come from presigned object-storage URLs on another origin, so
// img-src and connect-src allow http(s) sources.
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: http: https:; " +
	"connect-src 'self' http: https:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// dashboardAssets indexes every embedded file by its URL path ("/" for
// index.html, "/assets/app.js", …).
var dashboardAssets = mustLoadAssets()

func mustLoadAssets() map[string]dashboardAsset {
	out := map[string]dashboardAsset{}
	err := fs.WalkDir(dashboardFiles, "dashboard", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dashboardFiles.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read embedded %s: %w", p, err)
		}
		ct, ok := assetTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("embedded %s: no content type for %q", p, path.Ext(p))
		}
		sum := sha256.Sum256(body)
		urlPath := strings.TrimPrefix(p, "dashboard")
		if urlPath == "/index.html" {
			urlPath = "/"
		}
		out[urlPath] = dashboardAsset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time; a bad file is a programming error
	}
	return out
}

// mountDashboard serves the dashboard page at "/" and its files under
// "/assets/". Both are public: the page holds no data, every call it makes to
// /v1 carries the user's API key.
func (s *Server) mountDashboard(r *gin.Engine) {
	r.GET("/", s.h(serveAsset))
	r.HEAD("/", s.h(serveAsset))
	r.GET("/assets/*file", s.h(serveAsset))
	r.HEAD("/assets/*file", s.h(serveAsset))
}

// serveAsset answers with an embedded file. Files have no hashed names, so
// browsers revalidate every time (Cache-Control: no-cache) and get a 304 when
// the ETag still matches: a new binary's dashboard is never stale.
func serveAsset(c *gin.Context) error {
	a, ok := dashboardAssets[c.Request.URL.Path]
	if !ok {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "no such file: " + c.Request.URL.Path}
	}
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if c.Request.URL.Path == "/" {
		h.Set("Content-Security-Policy", dashboardCSP)
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
	}
	if match := c.GetHeader("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		c.Status(http.StatusNotModified)
		return nil
	}
	c.Data(http.StatusOK, a.contentType, a.body)
	return nil
}
