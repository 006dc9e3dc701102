package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
	"github.com/snapq/snapq/internal/testenv"
)

// sessionSite serves the pages of the session journeys on 127.0.0.2 (the only address the
// sessions' stacks allow): a login form, an account page behind a cookie with a link and a
// popup button, a tall report, a page far over the reply cap, and cookie pages.
func sessionSite(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on 127.0.0.2", err)
	}
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>%s</title></head><body>%s</body></html>`, title, body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.FormValue("user") == "ada" && r.FormValue("password") == "s3cret-pass" {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "ada-session", Path: "/"})
			http.Redirect(w, r, "/account", http.StatusSeeOther)
			return
		}
		page(w, "Sign in", `<h1>Sign in</h1><form method="post" action="/login">
<label for="u">User name</label><input id="u" name="user">
<label for="p">Password</label><input id="p" name="password" type="password">
<label><input type="checkbox" name="remember"> Remember me</label>
<button type="submit">Sign in</button></form>`)
	})
	mux.HandleFunc("/account", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("sid"); err != nil || c.Value != "ada-session" {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		page(w, "Account", `<h1>Welcome, Ada</h1><nav><a href="/reports">Reports</a></nav>
<button onclick="window.open('/popup', '_blank')">Open help</button>`)
	})
	mux.HandleFunc("/reports", func(w http.ResponseWriter, _ *http.Request) {
		var b strings.Builder
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, `<p style="height:90px">Quarterly figure %d</p>`, i)
		}
		page(w, "Reports", `<h1>Reports</h1>`+b.String())
	})
	mux.HandleFunc("/popup", func(w http.ResponseWriter, _ *http.Request) {
		page(w, "Help", `<h1>Help centre</h1><p>Popup content</p>`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		page(w, "Big", "<p>"+strings.Repeat("lorem ipsum dolor sit amet ", 2000)+"</p>")
	})
	mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "who", Value: r.URL.Query().Get("v"), Path: "/"})
		page(w, "Set", `<h1>set</h1><script>localStorage.setItem("who", `+"`"+r.URL.Query().Get("v")+"`"+`)</script>`)
	})
	mux.HandleFunc("/show", func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Cookie("who")
		v := "none"
		if c != nil {
			v = c.Value
		}
		page(w, "Show", `<h1 id="c">cookie=`+v+`</h1><p id="s"></p><script>document.getElementById("s").textContent = "storage=" + localStorage.getItem("who")</script>`)
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// sessionStack starts a stack whose guard allows only 127.0.0.2.
func sessionStack(t *testing.T, extraEnv ...string) *stack {
	t.Helper()
	env := append([]string{"SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32"}, extraEnv...)
	return startStack(t, env...)
}

// sessionClient is a Go client on the stack whose requests and answers are checked
// against web/openapi.json.
func (s *stack) sessionClient(key string) *client.Client {
	s.t.Helper()
	c, err := client.New(client.Config{BaseURL: s.api, APIKey: key, HTTPClient: s.client, MaxRetries: -1})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// newSession opens a session, waiting while no worker has a free session tab yet (a
// worker's Chromiums take a while to start on a loaded machine).
func newSession(t *testing.T, c *client.Client, o client.SessionOptions) *client.Session {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		sess, err := c.CreateSession(context.Background(), o)
		if err == nil && sess.Status == "open" {
			return sess
		}
		if !isAPIError(err, 503, "no_session_worker") || time.Now().After(deadline) {
			t.Fatalf("create a session: %+v %v", sess, err)
		}
	}
}

// exec runs one command and fails the test when the reply's ok is not wantOK.
func execCmd(t *testing.T, c *client.Client, id string, wantOK bool, verb string, args ...string) *client.SessionReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.Exec(ctx, id, verb, args...)
	if err != nil {
		t.Fatalf("%s %q: %v", verb, args, err)
	}
	if r.OK != wantOK {
		t.Fatalf("%s %q: ok %v, want %v; reply %q error %+v", verb, args, r.OK, wantOK, r.Reply, r.Error)
	}
	return r
}

// refOf finds the ref of the snapshot line that has all of parts.
func refOf(t *testing.T, snapshot string, parts ...string) string {
	t.Helper()
	for _, line := range strings.Split(snapshot, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if i := strings.Index(line, "[ref="); ok && i >= 0 {
			return strings.TrimSuffix(line[i+len("[ref="):], "]")
		}
	}
	t.Fatalf("no line with %q in the snapshot:\n%s", parts, snapshot)
	return ""
}

// The journey of a model through the API: log in by refs, follow a link, handle a popup,
// take a segmented screenshot, read Markdown, go back; a stale ref, a capped reply and a
// denied address fail with their codes, and the canary sees nothing. The feed replays it.
func TestSessionJourney(t *testing.T) {
	t.Parallel()
	site := sessionSite(t)
	canary := startCanary(t)
	s := sessionStack(t, "SNAPQ_SESSION_REPLY_BYTES=4096")
	c := s.sessionClient("")
	ctx := context.Background()

	id := newSession(t, c, client.SessionOptions{IdleTimeoutS: 120}).ID
	help := execCmd(t, c, id, true, "help")
	for _, v := range []string{"snapshot", "click", "wait_for", "tabs", "close"} {
		if !strings.Contains(help.Reply, "\n  "+v) {
			t.Errorf("help has no %s: %q", v, help.Reply)
		}
	}
	execCmd(t, c, id, true, "open", site+"/login")
	snap := execCmd(t, c, id, true, "snapshot").Reply
	user, pass := refOf(t, snap, "textbox", `"User name"`), refOf(t, snap, "textbox", `"Password"`)
	execCmd(t, c, id, true, "fill", user, "ada")
	execCmd(t, c, id, true, "fill", pass, "s3cret-pass")
	execCmd(t, c, id, true, "check", refOf(t, snap, "checkbox"))
	r := execCmd(t, c, id, true, "click", refOf(t, snap, "button", "Sign in"))
	if !strings.HasSuffix(r.URL, "/account") || r.Title != "Account" {
		t.Fatalf("after sign-in: url %q title %q", r.URL, r.Title)
	}
	// The login page's refs went with its document.
	if r := execCmd(t, c, id, false, "click", user); r.Error.Code != "stale_ref" {
		t.Errorf("old ref after the navigation: %+v", r.Error)
	}
	snap = execCmd(t, c, id, true, "snapshot").Reply
	if !strings.Contains(snap, `heading "Welcome, Ada"`) {
		t.Errorf("account snapshot: %q", snap)
	}
	popupBtn := refOf(t, snap, "button", "Open help")
	r = execCmd(t, c, id, true, "click", popupBtn)
	if !strings.Contains(r.Reply, "2 tabs") {
		t.Errorf("the popup was not announced: %q", r.Reply)
	}
	if r := execCmd(t, c, id, true, "tabs"); !strings.Contains(r.Reply, "1: \"Help\"") {
		t.Errorf("tabs: %q", r.Reply)
	}
	execCmd(t, c, id, true, "tabs", "select", "1")
	if r := execCmd(t, c, id, true, "text"); !strings.Contains(r.Reply, "Popup content") || r.Title != "Help" {
		t.Errorf("popup text %q title %q", r.Reply, r.Title)
	}
	execCmd(t, c, id, true, "tabs", "close", "1")
	// Switching tabs forgot the refs: the account page is read again.
	snap = execCmd(t, c, id, true, "snapshot").Reply
	popupBtn = refOf(t, snap, "button", "Open help")
	execCmd(t, c, id, true, "click", refOf(t, snap, "link", `"Reports"`))
	// A ref of an earlier snapshot is stale once a newer snapshot replaced it.
	execCmd(t, c, id, true, "snapshot")
	if r := execCmd(t, c, id, false, "click", popupBtn); r.Error.Code != "stale_ref" {
		t.Errorf("ref of an older snapshot: %+v", r.Error)
	}
	shot := execCmd(t, c, id, true, "screenshot")
	checkSegments(t, shot)
	if r := execCmd(t, c, id, true, "markdown"); !strings.Contains(r.Reply, "# Reports") || !strings.Contains(r.Reply, "Quarterly figure 40") {
		t.Errorf("markdown: %q", r.Reply)
	}
	if r := execCmd(t, c, id, true, "eval", "document.querySelectorAll('p').length"); r.Reply != "40" {
		t.Errorf("eval: %q", r.Reply)
	}
	if r := execCmd(t, c, id, true, "back"); !strings.HasSuffix(r.URL, "/account") {
		t.Errorf("back: %q", r.URL)
	}
	execCmd(t, c, id, true, "open", site+"/big")
	big := execCmd(t, c, id, true, "text")
	if !big.Truncated || len(big.Reply) > 4096 || !strings.Contains(big.Reply, "[truncated: the reply was") {
		t.Errorf("big reply: truncated %v, %d bytes, tail %q", big.Truncated, len(big.Reply), tail(big.Reply))
	}
	blocked := execCmd(t, c, id, false, "open", "http://127.0.0.1:"+canary.port+"/")
	if blocked.Error.Code != "blocked_address" {
		t.Errorf("denied address: %+v", blocked.Error)
	}
	closed, err := c.CloseSession(ctx, id)
	if err != nil || closed.Status != "closed" || closed.CloseReason != "closed_by_client" {
		t.Fatalf("close: %+v %v", closed, err)
	}
	if _, err := c.Exec(ctx, id, "snapshot"); !isAPIError(err, 409, "session_closed") {
		t.Errorf("command after close: %v", err)
	}
	s.checkFeed(id, closed.Commands)
	if n := canary.conns.Load(); n != 0 {
		t.Fatalf("the canary on 127.0.0.1 accepted %d connections", n)
	}
}

func tail(s string) string {
	if len(s) > 120 {
		return s[len(s)-120:]
	}
	return s
}

func isAPIError(err error, status int, code string) bool {
	var e *client.Error
	return errors.As(err, &e) && e.StatusCode == status && e.Code == code
}

// checkSegments downloads the segments of a screenshot reply: viewport-wide PNGs, more
// than one for the tall report, numbered -001, -002, ….
func checkSegments(t *testing.T, r *client.SessionReply) {
	t.Helper()
	if len(r.Artifacts) < 2 {
		t.Fatalf("screenshot of a 3,600 px page: %d artifacts (%q)", len(r.Artifacts), r.Reply)
	}
	for i, a := range r.Artifacts {
		if want := fmt.Sprintf("-%03d.png", i+1); !strings.HasSuffix(a.Name, want) || a.Kind != "screenshot" {
			t.Errorf("artifact %d: %+v, want a name ending %s", i, a, want)
		}
		resp, err := http.Get(a.URL) // follows the 302 to the bucket
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(resp.Body)
		resp.Body.Close()
		if err != nil || img.Bounds().Dx() != 1280 || (i == 0 && img.Bounds().Dy() != 800) {
			t.Errorf("segment %s: %v, %v", a.Name, err, img.Bounds())
		}
	}
}

// checkFeed replays the session's whole feed after its end (Last-Event-ID 0-0): the open,
// each command as running then ok or error, the close, then done.
func (s *stack) checkFeed(id string, commands int, key ...string) {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.api+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Last-Event-ID", "0-0")
	if len(key) > 0 {
		req.Header.Set("Authorization", "Bearer "+key[0])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	// What was filled into the password field is masked; the user name is not.
	if bytes.Contains(raw, []byte("s3cret-pass")) || !bytes.Contains(raw, []byte(`"ada"`)) || !bytes.Contains(raw, []byte(`"[masked]"`)) {
		t.Errorf("the feed shows the password, or hides the user name:\n%s", raw)
	}
	var types []string
	rows := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if typ, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, typ)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && types[len(types)-1] == "command" {
			for _, st := range []string{"running", "ok", "error"} {
				if strings.Contains(data, `"status":"`+st+`"`) {
					rows[st]++
				}
			}
		}
	}
	if len(types) < 2 || types[0] != "session" || types[len(types)-1] != "done" {
		t.Errorf("feed: %v", types)
	}
	if rows["running"] != commands || rows["ok"]+rows["error"] != commands || rows["error"] == 0 {
		t.Errorf("feed rows %v for %d commands", rows, commands)
	}
}

// The CLI drives a session: new, exec, shell (one command per line on stdin), events,
// close.
func TestSessionCLI(t *testing.T) {
	t.Parallel()
	site := sessionSite(t)
	s := sessionStack(t)
	bin := snapqCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	newSession(t, s.sessionClient(""), client.SessionOptions{IdleTimeoutS: 5}) // the worker is up
	out := s.runCLI(ctx, "session", "new")
	id := strings.TrimSpace(out.stdout)
	if out.code != 0 || len(id) != 36 {
		t.Fatalf("session new: %d %q %q", out.code, out.stdout, out.stderr)
	}
	events := s.goCLI(ctx, "session", "events", id)
	if r := s.runCLI(ctx, "session", "exec", id, "open", site+"/login"); r.code != 0 {
		t.Fatalf("exec open: %+v", r)
	}
	script := "snapshot\nfill #u ada\nfill #p 's3cret-pass'\nclick 'button[type=submit]'\nsnapshot\nclick e999999\n"
	cmd := exec.CommandContext(ctx, bin, "--api", s.api, "session", "shell", id)
	cmd.Env, cmd.Stdin = cliEnv(), strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("shell: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), `heading "Welcome, Ada"`) || !strings.Contains(stderr.String(), "error stale_ref") {
		t.Errorf("shell output:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if r := s.runCLI(ctx, "session", "exec", id, "click", "e999999"); r.code != 1 || !strings.Contains(r.stderr, "stale_ref") {
		t.Errorf("a failed command exits 1: %+v", r)
	}
	if r := s.runCLI(ctx, "session", "close", id); r.code != 0 || !strings.Contains(r.stdout, "closed") {
		t.Errorf("close: %+v", r)
	}
	ev := <-events
	if ev.code != 0 || !strings.Contains(ev.stdout, "fill #u ada: ok") || !strings.Contains(ev.stdout, "fill #p [masked]: ok") ||
		strings.Contains(ev.stdout, "s3cret-pass") || !strings.Contains(ev.stdout, "click e999999: error stale_ref") ||
		!strings.Contains(ev.stdout, "session closed closed_by_client") {
		t.Errorf("events:\n%s\n%s", ev.stdout, ev.stderr)
	}
	run := exec.CommandContext(ctx, bin, "--api", s.api, "session", "run", "-")
	run.Env, run.Stdin = cliEnv(), strings.NewReader("open "+site+"/reports\nmarkdown\n")
	got, err := run.Output()
	if err != nil || !strings.Contains(string(got), "Quarterly figure 40") {
		t.Errorf("run: %v %q", err, got)
	}
}

// Two sessions of two keys on one worker never share cookies or storage, and one key
// cannot see the other's session; past the per-key cap a key gets 429.
func TestSessionIsolationAndCap(t *testing.T) {
	t.Parallel()
	site := sessionSite(t)
	s := sessionStack(t, "SNAPQ_AUTH=on", "SNAPQ_SESSIONS_PER_KEY=1", "SNAPQ_RATE_LIMIT=0")
	a, b := s.sessionClient(s.apiKey("alice")), s.sessionClient(s.apiKey("bob"))
	ctx := context.Background()
	sa := newSession(t, a, client.SessionOptions{})
	sb := newSession(t, b, client.SessionOptions{})
	if _, err := a.CreateSession(ctx, client.SessionOptions{}); !isAPIError(err, 429, "too_many_sessions") {
		t.Errorf("alice's second session: %v", err)
	}
	if _, err := b.GetSession(ctx, sa.ID); !isAPIError(err, 404, "not_found") {
		t.Errorf("bob reads alice's session: %v", err)
	}
	if _, err := b.Exec(ctx, sa.ID, "snapshot"); !isAPIError(err, 404, "not_found") {
		t.Errorf("bob drives alice's session: %v", err)
	}
	execCmd(t, a, sa.ID, true, "open", site+"/set?v=alice")
	if r := execCmd(t, a, sa.ID, true, "open", site+"/show"); true {
		if txt := execCmd(t, a, sa.ID, true, "text").Reply; !strings.Contains(txt, "cookie=alice") || !strings.Contains(txt, "storage=alice") {
			t.Errorf("alice's own page: %q (%s)", txt, r.URL)
		}
	}
	execCmd(t, b, sb.ID, true, "open", site+"/show")
	if txt := execCmd(t, b, sb.ID, true, "text").Reply; !strings.Contains(txt, "cookie=none") || !strings.Contains(txt, "storage=null") {
		t.Errorf("bob sees alice's state: %q", txt)
	}
	if _, err := a.CloseSession(ctx, sa.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateSession(ctx, client.SessionOptions{}); err != nil {
		t.Errorf("alice's session after closing the first: %v", err)
	}
}

// An idle session and one past its max lifetime are closed by their worker and their tabs
// freed: the worker's count of sessions held and Chromium's own count of open session pages
// go back to 0, and a worker with one session tab opens the next; killing the worker ends
// its session as lost within 5 s.
func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	site := sessionSite(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	tabs := sessionTabs{t: t, url: "http://127.0.0.1:" + port + "/metrics"}
	s := sessionStack(t, "SNAPQ_SESSION_TABS=1", "SNAPQ_METRICS_ADDR=127.0.0.1:"+port)
	c := s.sessionClient("")
	ctx := context.Background()
	idle := newSession(t, c, client.SessionOptions{IdleTimeoutS: 5})
	execCmd(t, c, idle.ID, true, "open", site+"/account") // redirected to /login: no cookie
	tabs.want(1, 1, "an open session")
	got := waitSession(t, c, idle.ID, 30*time.Second)
	if got.Status != "closed" || got.CloseReason != "idle_timeout" {
		t.Fatalf("idle session: %s %s", got.Status, got.CloseReason)
	}
	tabs.want(0, 0, "after the idle expiry")
	old := newSession(t, c, client.SessionOptions{MaxLifetimeS: 10})
	execCmd(t, c, old.ID, true, "open", site+"/reports")
	tabs.want(1, 1, "a session with a 10 s lifetime")
	if got := waitSession(t, c, old.ID, time.Minute); got.Status != "closed" || got.CloseReason != "max_lifetime" {
		t.Fatalf("session past its lifetime: %s %s", got.Status, got.CloseReason)
	}
	tabs.want(0, 0, "after the lifetime expiry")
	// The worker's only session tab is free again.
	next, err := c.CreateSession(ctx, client.SessionOptions{})
	if err != nil || next.Status != "open" {
		t.Fatalf("a session after the idle one: %+v %v", next, err)
	}
	execCmd(t, c, next.ID, true, "open", site+"/reports")
	killed := time.Now()
	s.stop("worker", syscall.SIGKILL)
	got = waitSession(t, c, next.ID, 20*time.Second)
	lostAfter := time.Since(killed)
	if got.Status != "lost" || got.CloseReason != "session_lost" || lostAfter > 5*time.Second {
		t.Fatalf("after the worker was killed: %s %s after %s, want lost within 5s", got.Status, got.CloseReason, lostAfter)
	}
	t.Logf("session lost %s after its worker was killed", lostAfter.Round(time.Millisecond))
	if _, err := c.Exec(ctx, next.ID, "snapshot"); !isAPIError(err, 410, "session_lost") {
		t.Errorf("command to a lost session: %v", err)
	}
	// A worker that is stopped closes its sessions first, with the reason.
	s.start("worker")
	last := newSession(t, c, client.SessionOptions{})
	s.stop("worker", syscall.SIGTERM)
	if got := waitSession(t, c, last.ID, 30*time.Second); got.Status != "closed" || got.CloseReason != "worker_shutdown" {
		t.Errorf("after SIGTERM: %s %s", got.Status, got.CloseReason)
	}
}

// waitSession follows the session's feed until it ends, then reads it.
func waitSession(t *testing.T, c *client.Client, id string, bound time.Duration) *client.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for ctx.Err() == nil {
		_ = c.SessionEvents(ctx, id, func(client.Event) bool { return true })
		got, err := c.GetSession(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "open" && got.Status != "opening" {
			return got
		}
	}
	t.Fatalf("session %s did not end within %s", id, bound)
	return nil
}

// sessionTabs reads the worker's session counts from its /metrics.
type sessionTabs struct {
	t   *testing.T
	url string
}

// want waits until the worker holds held sessions and Chromium has pages session pages open
// (a closed session's tab goes a moment after its end is recorded); the bound only guards
// against a hang.
func (m sessionTabs) want(held, pages int, when string) {
	m.t.Helper()
	deadline := time.Now().Add(time.Minute)
	wantHeld, wantPages := fmt.Sprintf("snapq_worker_sessions_held %d", held), fmt.Sprintf("snapq_worker_session_pages %d", pages)
	for {
		body := scrapeMetrics(m.t, m.url)
		if hasLine(body, wantHeld) && hasLine(body, wantPages) {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s: %s and %s, want %q and %q", when, grepLines(body, "snapq_worker_sessions_held"),
				grepLines(body, "snapq_worker_session_pages"), wantHeld, wantPages)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
