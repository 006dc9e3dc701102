package web

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// The browser boundary. A browser on the operator's machine can reach the api
// even when nobody else can (SNAPQ_AUTH=off on loopback), so any page it
// visits could send requests here: forms and text/plain fetches need no CORS
// preflight, and a DNS name rebound to 127.0.0.1 makes the api "same-origin"
// to the attacker's page. browserBoundary, in front of every route (API,
// dashboard, queue UI), refuses in this order:
//
//  1. a Host the api is not addressed by (421 invalid_host): DNS rebinding;
//  2. a cross-site request (403 cross_site_request): Sec-Fetch-Site
//     cross-site or same-site, or a write whose Origin is another origin,
//     unless the origin is in CORSOrigins;
//  3. a write whose body is not application/json (415 unsupported_media_type):
//     forms and text/plain, which a page can send without a preflight.

// browserBoundary is global middleware; see above.
func (s *Server) browserBoundary(c *gin.Context) error {
	r := c.Request
	if err := s.checkHost(r); err != nil {
		return err
	}
	if err := s.checkSite(r); err != nil {
		return err
	}
	return checkWriteBody(r)
}

// checkHost refuses a Host the api is not known by. It runs when auth is off
// (the loopback case) and, with auth on, when AllowedHosts is set. The probes
// answer any Host: orchestrators address them by pod IP, and they hold no data.
func (s *Server) checkHost(r *http.Request) error {
	if s.Config.Auth && len(s.Config.AllowedHosts) == 0 {
		return nil
	}
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return nil
	}
	if s.hostAllowed(r.Host, r.TLS != nil) {
		return nil
	}
	return &apiError{Status: http.StatusMisdirectedRequest, Code: "invalid_host", Field: "Host",
		Message: "this api is not served at " + r.Host + "; add the name to SNAPQ_ALLOWED_HOSTS if it should be"}
}

// hostAllowed reports whether host (a Host header) is the listen address, a
// loopback name on its port, a name in AllowedHosts (any port unless the
// entry has one) or the host of PublicURL.
func (s *Server) hostAllowed(host string, tls bool) bool {
	name, port := splitHost(host)
	if name == "" {
		return false
	}
	if port == "" {
		port = "80"
		if tls {
			port = "443"
		}
	}
	if lname, lport := splitHost(s.Config.ListenAddr); lport == port {
		if name == "localhost" || name == "127.0.0.1" || name == "::1" {
			return true
		}
		if ip := net.ParseIP(lname); lname != "" && (ip == nil || !ip.IsUnspecified()) && name == lname {
			return true
		}
	}
	allowed := s.Config.AllowedHosts
	if u, err := url.Parse(s.Config.PublicURL); s.Config.PublicURL != "" && err == nil && u.Host != "" {
		allowed = append(slices.Clip(allowed), u.Host)
	}
	for _, a := range allowed {
		aname, aport := splitHost(a)
		if aname == name && (aport == "" || aport == port) {
			return true
		}
	}
	return false
}

// splitHost splits "name:port", "[v6]:port" or a bare name, lower-cased and
// without a trailing dot; port is "" when there is none.
func splitHost(h string) (name, port string) {
	if n, p, err := net.SplitHostPort(h); err == nil {
		name, port = n, p
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	return strings.TrimSuffix(strings.ToLower(name), "."), port
}

// checkSite refuses requests a browser marks as coming from another site,
// and writes from another origin, unless the origin is in CORSOrigins. A
// top-level navigation to the dashboard page (a link from elsewhere) is let
// through: the page is public and holds no data.
func (s *Server) checkSite(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if s.corsAllowed(origin) {
		return nil
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		if !dashboardNavigation(r) {
			return crossSite("the api refuses requests from other sites")
		}
	}
	if origin != "" && isWrite(r.Method) && !sameOrigin(origin, r.Host) {
		return crossSite("the api accepts changes only from its own origin or SNAPQ_CORS_ORIGINS, not " + origin)
	}
	return nil
}

func crossSite(msg string) error {
	return &apiError{Status: http.StatusForbidden, Code: "cross_site_request", Message: msg}
}

// corsAllowed reports whether origin is one of CORSOrigins.
func (s *Server) corsAllowed(origin string) bool {
	return origin != "" && slices.Contains(s.Config.CORSOrigins, origin)
}

// sameOrigin reports whether origin ("scheme://host[:port]") names host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// dashboardNavigation reports whether r is a browser opening the dashboard
// page as a document.
func dashboardNavigation(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == "/" &&
		r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// checkWriteBody requires writes to carry application/json, or no body and
// no content type (POST /v1/batches/:id/cancel). A form with no fields still
// sends its content type, so it is refused too.
func checkWriteBody(r *http.Request) error {
	if !isWrite(r.Method) {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
		Message: "send " + r.Method + " requests as application/json (or with no body)"}
}
