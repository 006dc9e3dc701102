package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/internal/testenv"
)

// secretKey is a fresh SNAPQ_SECRET_KEY.
func secretKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "pw-" + hex.EncodeToString(b)
}

func loginApp(t *testing.T, password string, ttl time.Duration) (*fixtures.LoginApp, string) {
	t.Helper()
	app := fixtures.NewLoginApp("alice", "Alice Example", password, ttl)
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return app, srv.URL
}

// recipe is the LoginApp's auth profile.
func recipe(name, site string, password string) map[string]any {
	return map[string]any{
		"name":      name,
		"origins":   []string{site},
		"login_url": site + "/login",
		"steps": []map[string]any{
			{"type": "type", "selector": "#username", "text": "alice"},
			{"type": "type", "selector": "#password", "secret": "password"},
			{"type": "click", "selector": "#submit"},
			{"type": "wait_for_navigation"},
		},
		"success":    map[string]any{"selector": "#whoami"},
		"logged_out": map[string]any{"url_prefix": site + "/login"},
		"secrets":    map[string]any{"password": password},
	}
}

type profileResp struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Version     int      `json:"version"`
	Secrets     []string `json:"secrets"`
	LastFailure string   `json:"last_failure"`
}

type authJob struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		Title    string `json:"title"`
		FinalURL string `json:"final_url"`
	} `json:"result"`
}

// batchJobs lists every job of a batch with key's headers.
func (s *stack) batchJobs(id string, h map[string]string) []authJob {
	s.t.Helper()
	var page struct {
		Jobs []authJob `json:"jobs"`
	}
	if code, _ := s.doWith("GET", "/v1/batches/"+id+"/jobs?limit=1000", h, nil, &page); code != http.StatusOK {
		s.t.Fatalf("list jobs: %d", code)
	}
	return page.Jobs
}

// TestAuthProfileSelfHealing: 60 protected pages on two worker processes
// (4 tabs) while the fixture's session expires every 10 s. No screenshot is
// of the login page, every job succeeds, the site sees at most one login per
// expiry (+1 for the first), and the password is nowhere: not in any log
// line (debug), job row or result, database row, or object in the bucket.
func TestAuthProfileSelfHealing(t *testing.T) {
	t.Parallel()
	password := randomPassword()
	app, site := loginApp(t, password, 10*time.Second)
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_SECRET_KEY="+secretKey(t), "SNAPQ_WORKER_CONCURRENCY=2", "SNAPQ_WORKER_JOBS=2")
	if err := s.procs.StartAs("worker2", "worker"); err != nil {
		t.Fatal(err)
	}
	keyA, keyB := s.apiKey("alice"), s.apiKey("bob")
	a := map[string]string{"Authorization": "Bearer " + keyA}
	b := map[string]string{"Authorization": "Bearer " + keyB}

	var p profileResp
	var raw json.RawMessage
	if code, _ := s.doWith("POST", "/v1/auth-profiles", a, recipe("shop", site, password), &raw); code != http.StatusCreated {
		t.Fatalf("create profile: %d %s", code, raw)
	}
	if strings.Contains(string(raw), password) {
		t.Fatalf("the created profile's answer holds the password: %s", raw)
	}
	_ = json.Unmarshal(raw, &p)
	if len(p.Secrets) != 1 || p.Secrets[0] != "password" || p.Version != 0 {
		t.Fatalf("profile view: %+v", p)
	}
	// Key B: the profile does not exist, not even by name in a batch.
	var e errResp
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		var body any
		if m == "PATCH" {
			body = map[string]any{"origins": []string{site}}
		}
		if code, _ := s.doWith(m, "/v1/auth-profiles/"+p.ID, b, body, &e); code != http.StatusNotFound {
			t.Fatalf("key B %s another key's profile: %d, want 404", m, code)
		}
	}
	var list struct {
		AuthProfiles []profileResp `json:"auth_profiles"`
	}
	if s.doWith("GET", "/v1/auth-profiles", b, nil, &list); len(list.AuthProfiles) != 0 {
		t.Fatalf("key B lists %d profiles", len(list.AuthProfiles))
	}
	var bb batchResp
	if code, _ := s.doWith("POST", "/v1/batches", b, map[string]any{"urls": []string{site + "/page/1"},
		"options": map[string]any{"auth_profile": "shop"}}, &bb); code != http.StatusAccepted {
		t.Fatalf("key B submit: %d", code)
	}

	// The first logins, through "test login now": the second (the first
	// also waits for the worker's browser) tells how fast this machine is. A
	// session must outlive one login plus one capture, or no page can ever be
	// captured logged in: on a machine so loaded that a login takes more than
	// 2.5 s, the session's life and the wait scale with it (at most 6×; the
	// assertions do not change).
	var test struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	var loginTook time.Duration
	for range 2 {
		t0 := time.Now()
		if code, _ := s.doWith("POST", "/v1/auth-profiles/"+p.ID+"/test", a, nil, &test); code != http.StatusOK || !test.OK {
			t.Fatalf("test login: %d %+v", code, test)
		}
		loginTook = time.Since(t0)
	}
	ttl, wait := 10*time.Second, 110*time.Second
	if scale := min(6, float64(loginTook)/float64(2500*time.Millisecond)); scale > 1 {
		ttl, wait = time.Duration(float64(ttl)*scale), time.Duration(float64(wait)*scale)
	}
	app.SetSessionTTL(ttl)
	t.Logf("a test login took %s: session TTL %s, batch wait %s", loginTook.Round(time.Millisecond), ttl, wait)
	loginsBefore, expiredBefore, _ := app.Stats()

	// Every webhook body the batch sends is searched for the password too.
	var (
		hookMu sync.Mutex
		hooks  []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hooks = append(hooks, string(body))
		hookMu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	targets := make([]string, 60)
	for i := range targets {
		targets[i] = fmt.Sprintf("%s/page/%d", site, i+1)
	}
	start := time.Now()
	var batch batchResp
	if code, _ := s.doWith("POST", "/v1/batches", a, map[string]any{"urls": targets,
		"webhook": map[string]any{"url": receiver.URL, "secret": "0123456789abcdef0123"}, "options": map[string]any{
			"auth_profile": "shop", "wait": map[string]any{"delay_ms": 300}, "screenshot": map[string]any{"mode": "viewport"}}}, &batch); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	done := s.waitAuthBatch(batch.ID, a, wait)
	elapsed := time.Since(start)
	if done.Counts["succeeded"] != 60 {
		for _, j := range s.batchJobs(batch.ID, a) {
			if j.Status != "succeeded" {
				t.Logf("job %s %s: %+v", j.URL, j.Status, j.Error)
			}
		}
		t.Fatalf("counts %v, want 60 succeeded", done.Counts)
	}
	for _, j := range s.batchJobs(batch.ID, a) {
		want := "Page " + j.URL[strings.LastIndex(j.URL, "/")+1:]
		if j.Result == nil || j.Result.Title != want || strings.Contains(j.Result.FinalURL, "/login") {
			t.Fatalf("job %s captured %+v, want the protected page titled %q", j.URL, j.Result, want)
		}
	}
	logins, expired, failed := app.Stats()
	logins, expired = logins-loginsBefore+1, expired-expiredBefore // the batch's, +1 for the login it started with
	t.Logf("60 pages, 4 tabs on 2 workers, session TTL %s, %s: %d logins (the first by the test login), %d expiries seen, %d failed logins",
		ttl, elapsed.Round(time.Second), logins, expired, failed)
	if logins > expired+1 || failed != 0 {
		t.Fatalf("%d logins for %d expiries (%d failed): want at most one login per expiry, +1", logins, expired, failed)
	}
	if expired == 0 {
		t.Fatalf("no session expired during the batch (%s): the test did not exercise re-login", elapsed)
	}
	bDone := s.waitCounts(bb.ID, b, 30*time.Second, "completed", func(b batchResp) bool { return b.Status == "completed" })
	bJobs := s.batchJobs(bb.ID, b)
	if bDone.Counts["failed"] != 1 || bJobs[0].Error == nil || bJobs[0].Error.Code != "auth_failed" {
		t.Fatalf("key B's batch naming key A's profile: %v %+v", bDone.Counts, bJobs[0].Error)
	}

	// The password is nowhere.
	hits := []string{}
	for _, name := range []string{"api", "worker", "worker2"} {
		if log := s.procs.Log(name, 64<<20); strings.Contains(log, password) {
			hits = append(hits, name+" log")
		}
		if !strings.Contains(s.procs.Log(name, 64<<20), `"level":"DEBUG"`) && name == "api" {
			t.Errorf("the api logged no debug line: the secrets check did not run with debug logging")
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.env("SNAPQ_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range []string{"auth_profiles", "auth_profile_states", "jobs", "batches", "webhook_deliveries"} {
		rows, err := conn.Query(ctx, "SELECT row_to_json(t)::text FROM "+table+" t")
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		all, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if strings.Contains(r, password) || strings.Contains(r, hex.EncodeToString([]byte(password))) {
				hits = append(hits, table+" row")
			}
		}
	}
	var secrets, state []byte
	if err := conn.QueryRow(ctx, `SELECT p.secrets, s.state FROM auth_profiles p JOIN auth_profile_states s
		ON s.profile_id = p.id AND s.version = p.version WHERE p.id = $1`, p.ID).Scan(&secrets, &state); err != nil {
		t.Fatal(err)
	}
	if len(secrets) == 0 || strings.Contains(string(secrets), "password") || strings.Contains(string(state), "sid") {
		t.Errorf("the profile's row holds plain text: secrets %q, state %d bytes", secrets, len(state))
	}
	for _, j := range s.batchJobs(batch.ID, a) {
		var full json.RawMessage
		s.doWith("GET", "/v1/jobs/"+j.ID, a, nil, &full)
		if strings.Contains(string(full), password) {
			hits = append(hits, "job "+j.ID)
		}
	}
	s3 := testenv.LocalS3()
	mc, err := s3.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objects := 0
	for obj := range mc.ListObjects(ctx, s.env("SNAPQ_S3_BUCKET"), minio.ListObjectsOptions{Recursive: true}) {
		o, err := mc.GetObject(ctx, s.env("SNAPQ_S3_BUCKET"), obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(o)
		o.Close()
		objects++
		if strings.Contains(string(data), password) {
			hits = append(hits, "object "+obj.Key)
		}
	}
	var prof json.RawMessage
	s.doWith("GET", "/v1/auth-profiles/"+p.ID, a, nil, &prof)
	if strings.Contains(string(prof), password) {
		hits = append(hits, "profile view")
	}
	if !strings.Contains(string(prof), "••••") {
		t.Errorf("the profile's last login log does not show the masked secret: %s", prof)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		hookMu.Lock()
		got := strings.Join(hooks, "\n")
		hookMu.Unlock()
		if strings.Contains(got, `"type":"batch.completed"`) {
			if strings.Contains(got, password) {
				hits = append(hits, "webhook body")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no batch.completed webhook within 30 s: %s", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(hits) > 0 || objects < 60 {
		t.Fatalf("the password was found in %v (%d objects searched)", hits, objects)
	}
}

// waitAuthBatch waits for a batch to complete while its jobs keep finishing; timeout
// without a job finishing fails the
// test listing the jobs that failed and the workers' warnings.
func (s *stack) waitAuthBatch(id string, h map[string]string, timeout time.Duration) batchResp {
	s.t.Helper()
	deadline, finished := time.Now().Add(timeout), 0
	for {
		var b batchResp
		code, _ := s.doWith("GET", "/v1/batches/"+id, h, nil, &b)
		if code == http.StatusOK && b.Status == "completed" {
			return b
		}
		if n := b.Counts["succeeded"] + b.Counts["failed"] + b.Counts["canceled"]; n > finished {
			finished, deadline = n, time.Now().Add(timeout) // progress: the wait is for the next job
		}
		if time.Now().After(deadline) {
			for _, j := range s.batchJobs(id, h) {
				if j.Status == "failed" {
					s.t.Logf("job %s failed: %+v", j.URL, j.Error)
				}
			}
			for _, name := range []string{"worker", "worker2"} {
				for _, line := range strings.Split(s.procs.Log(name, 1<<20), "\n") {
					if strings.Contains(line, `"WARN"`) || strings.Contains(line, `"component":"auth"`) || strings.Contains(line, `job succeeded`) || strings.Contains(line, `logging in again`) {
						s.t.Log(name, line)
					}
				}
			}
			s.t.Fatalf("batch %s not completed: no job finished in %s: %v", id, timeout, b.Counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sessionCookie logs into the app as a browser would and returns its sid.
func sessionCookie(t *testing.T, site, password string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(site + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in %s", body)
	}
	resp, err = c.PostForm(site+"/login", url.Values{"csrf": {string(m[1])}, "username": {"alice"}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(site)
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "sid" {
			return ck.Value
		}
	}
	t.Fatalf("no session after logging in (status %d)", resp.StatusCode)
	return ""
}

// TestAuthProfileStorageState: an uploaded Playwright storageState makes a
// protected page capturable without a recipe; the login never reaches a job
// that did not ask for it or a target off the profile's origins; a recipe
// that cannot log in fails its jobs with auth_failed.
func TestAuthProfileStorageState(t *testing.T) {
	t.Parallel()
	password := randomPassword()
	_, site := loginApp(t, password, time.Hour)
	other := fixtureSite(t)
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey(t))
	u, _ := url.Parse(site)
	sid := sessionCookie(t, site, password)
	state := map[string]any{
		"cookies": []map[string]any{{"name": "sid", "value": sid, "domain": u.Hostname(), "path": "/", "expires": -1,
			"httpOnly": true, "secure": false, "sameSite": "Lax"}},
		"origins": []map[string]any{{"origin": site, "localStorage": []map[string]any{{"name": "theme", "value": "dark"}}}},
	}
	var p profileResp
	var raw json.RawMessage
	if code := s.do("POST", "/v1/auth-profiles", map[string]any{"name": "uploaded", "origins": []string{site},
		"logged_out": map[string]any{"url_prefix": site + "/login"}, "storage_state": state}, &raw); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, raw)
	}
	_ = json.Unmarshal(raw, &p)
	if p.Version != 1 || strings.Contains(string(raw), sid) {
		t.Fatalf("uploaded profile: %s", raw)
	}
	// A cookie for another site is refused, naming the field.
	var e errResp
	bad := map[string]any{"cookies": []map[string]any{{"name": "x", "value": "y", "domain": "example.com", "path": "/"}}, "origins": []any{}}
	if code := s.do("POST", "/v1/auth-profiles", map[string]any{"name": "bad", "origins": []string{site}, "storage_state": bad}, &e); code != http.StatusBadRequest ||
		e.Error.Field != "storage_state.cookies[0].domain" {
		t.Fatalf("a cookie off the origins: %d %+v", code, e.Error)
	}
	// A recipe with the wrong password.
	if code := s.do("POST", "/v1/auth-profiles", recipe("wrong", site, "not-the-password"), &raw); code != http.StatusCreated {
		t.Fatalf("create wrong: %d %s", code, raw)
	}

	var (
		hookMu sync.Mutex
		hooks  []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hooks = append(hooks, string(body))
		hookMu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	var batch batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"webhook": map[string]any{"url": receiver.URL, "secret": "0123456789abcdef0123"},
		"targets": []map[string]any{
			{"url": site + "/home", "options": map[string]any{"auth_profile": "uploaded"}},
			{"url": site + "/page/7"},
			{"url": other + "/short", "options": map[string]any{"auth_profile": "uploaded"}},
			{"url": site + "/page/8", "options": map[string]any{"auth_profile": "wrong"}},
			{"url": site + "/page/9", "options": map[string]any{"auth_profile": "missing"}},
		}}, &batch); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitBatch(batch.ID, 60*time.Second)
	js := s.batchJobs(batch.ID, nil)
	byURL := map[string]authJob{}
	for _, j := range js {
		byURL[j.URL] = j
	}
	if j := byURL[site+"/home"]; j.Status != "succeeded" || j.Result == nil || j.Result.Title != "Home" {
		t.Fatalf("protected page with the uploaded state: %s %+v %+v", j.Status, j.Result, j.Error)
	}
	if j := byURL[site+"/page/7"]; j.Status != "succeeded" || j.Result == nil || j.Result.Title != "Login" {
		t.Fatalf("a job without the profile must start logged out: %s %+v", j.Status, j.Result)
	}
	for _, target := range []string{other + "/short", site + "/page/8", site + "/page/9"} {
		if j := byURL[target]; j.Status != "failed" || j.Error == nil || j.Error.Code != "auth_failed" {
			t.Fatalf("%s: %s %+v, want auth_failed", target, j.Status, j.Error)
		}
	}
	var wrong profileResp
	var listed struct {
		AuthProfiles []profileResp `json:"auth_profiles"`
	}
	s.do("GET", "/v1/auth-profiles", nil, &listed)
	for _, lp := range listed.AuthProfiles {
		if lp.Name == "wrong" {
			wrong = lp
		}
	}
	if wrong.LastFailure == "" || strings.Contains(wrong.LastFailure, "not-the-password") {
		t.Fatalf("the failed recipe's profile: %+v", wrong)
	}

	// The webhook heard of the failed login, once, without the password.
	deadline := time.Now().Add(60 * time.Second)
	for {
		hookMu.Lock()
		got := strings.Join(hooks, "\n")
		hookMu.Unlock()
		if strings.Contains(got, `"type":"auth_profile.failed"`) && strings.Contains(got, `"type":"batch.completed"`) {
			if strings.Count(got, `"type":"auth_profile.failed"`) != 1 || !strings.Contains(got, `"name":"wrong"`) ||
				strings.Contains(got, "not-the-password") {
				t.Fatalf("webhook bodies: %s", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no auth_profile.failed and batch.completed webhooks within 60 s: %s", got)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// "Test login now": the recipe's action log, the secret masked.
	var test struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		Log   []struct {
			Type    string `json:"type"`
			Target  string `json:"target"`
			OK      bool   `json:"ok"`
			Excerpt string `json:"excerpt"`
		} `json:"log"`
	}
	if code := s.do("POST", "/v1/auth-profiles/"+wrong.ID+"/test", nil, &raw); code != http.StatusOK {
		t.Fatalf("test login: %d %s", code, raw)
	}
	_ = json.Unmarshal(raw, &test)
	masked := false
	for _, e := range test.Log {
		masked = masked || (e.Type == "type" && e.Target == "#password" && e.Excerpt == "••••")
	}
	if test.OK || test.Error == "" || !masked || strings.Contains(string(raw), "not-the-password") {
		t.Fatalf("test login of the wrong password: %s", raw)
	}
	if code := s.do("POST", "/v1/auth-profiles/"+p.ID+"/test", nil, &e); code != http.StatusBadRequest || e.Error.Field != "login_url" {
		t.Fatalf("test login of a profile without a recipe: %d %+v", code, e.Error)
	}
}
