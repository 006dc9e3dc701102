package main

import (
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/hotcopy"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/notify"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/ratelimit"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/session"
	"github.com/snapq/snapq/webhook"
)

// setup clears every SNAPQ_* variable the test process inherited, sets the
// S3 credentials (required, no default), points SNAPQ_CHROME_BIN at an empty
// executable file (the loader only checks that it exists), SNAPQ_CHROME_USER at
// Debian's "nobody" (as root the loader checks that the user exists), then sets env.
// It returns that file's path. t.Setenv rules out t.Parallel.
func setup(t *testing.T, env ...string) (chrome string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SNAPQ_") {
			t.Setenv(name, "") // empty reads as unset
		}
	}
	chrome = filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(chrome, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SNAPQ_CHROME_BIN", chrome)
	t.Setenv("SNAPQ_CHROME_USER", "nobody")
	t.Setenv("SNAPQ_S3_ACCESS_KEY", "key")
	t.Setenv("SNAPQ_S3_SECRET_KEY", "secret")
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	return chrome
}

// defaultWorkerConfig is what loadWorkerConfig returns with only the S3
// credentials and the Chromium path set: the defaults docs/operating/configuration.md documents.
func defaultWorkerConfig(chrome string) workerConfig {
	s3 := artifacts.DefaultConfig()
	s3.AccessKey, s3.SecretKey = "key", "secret"
	cc := capture.DefaultConfig()
	cc.ChromeBin = chrome
	cc.EgressListen = "127.0.0.1:0"
	eg := egress.DefaultConfig()
	eg.Listen = "127.0.0.1:0"
	cc.ChromeUser = "nobody"
	cc.Nice = 10
	return workerConfig{
		LogLevel:                slog.LevelInfo,
		DatabaseURL:             "postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable",
		Redis:                   asynq.RedisClientOpt{Addr: "127.0.0.1:6379"},
		S3:                      s3,
		Concurrency:             2,
		Jobs:                    4,
		InteractivePoll:         DefaultInteractivePoll,
		InteractiveCopyBytes:    hotcopy.DefaultMaxBytes,
		InteractiveHostHeadroom: jobs.DefaultInteractiveHostHeadroom,
		InteractiveBrowserTabs:  2,
		BatchChromeNice:         10,
		SessionTabs:             2,
		Sessions:                session.RunConfig{ReplyBytes: 64 << 10, CommandTimeout: 45 * time.Second},
		ShutdownTimeout:         30 * time.Second,
		RetryBaseDelay:          10 * time.Second,
		Polling:                 queue.Polling{TaskCheck: time.Second, DelayedTaskCheck: 5 * time.Second},
		MaxRetry:                3,
		MaxJobsInFlight:         10000,
		Budget: map[string]ratelimit.Cap{
			jobs.WorkDiscover:   {PerKey: 2, PerReplica: 8, RetryAfter: 10 * time.Second},
			jobs.WorkPreview:    {PerKey: 1, PerReplica: 4, RetryAfter: 5 * time.Second},
			jobs.WorkAuthTest:   {PerKey: 1, PerReplica: 16, RetryAfter: 15 * time.Second},
			jobs.WorkArchive:    {PerKey: 2, PerReplica: 16, RetryAfter: 10 * time.Second},
			jobs.WorkMCPSession: {PerKey: 4, PerReplica: 256, RetryAfter: 10 * time.Second},
			jobs.WorkStream:     {PerKey: 20, RetryAfter: 10 * time.Second},
			jobs.WorkSession:    {PerKey: 4, PerReplica: 64, RetryAfter: 2 * time.Second},
		},
		Shards:           1,
		Webhook:          webhook.Config{MaxRetry: 8, Timeout: 10 * time.Second},
		Capture:          cc,
		Egress:           eg,
		HostConcurrency:  4,
		ContentAddressed: true,
		Thumbnails:       true,
		SMTP: notify.SMTPConfig{TLS: notify.SMTPAuto, MaxPerSuite: notify.DefaultMaxPerSuite,
			MaxPerKey: notify.DefaultMaxPerKey},
	}
}

// policyAllows compares egress policies by the ranges they allow.
var policyAllows = cmp.Options{
	cmpopts.IgnoreFields(egress.Config{}, "Policy"),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

func TestLoadWorkerConfig(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want func(*workerConfig) // applied to defaultWorkerConfig
	}{
		{name: "defaults", want: func(*workerConfig) {}},
		{
			name: "jobs default to twice the concurrency",
			env:  []string{"SNAPQ_WORKER_CONCURRENCY=5"},
			want: func(c *workerConfig) {
				c.Concurrency, c.Jobs, c.Capture.Tabs = 5, 10, 5
			},
		},
		{
			name: "interactive poll",
			env:  []string{"SNAPQ_INTERACTIVE_POLL=5ms"},
			want: func(c *workerConfig) { c.InteractivePoll = 5 * time.Millisecond },
		},
		{
			name: "the lane in the batch chromium, with a reserved tab, not niced",
			env:  []string{"SNAPQ_INTERACTIVE_BROWSER_TABS=0", "SNAPQ_INTERACTIVE_TABS=1", "SNAPQ_BATCH_CHROME_NICE=0"},
			want: func(c *workerConfig) {
				c.InteractiveBrowserTabs, c.InteractiveTabs, c.Capture.InteractiveTabs = 0, 1, 1
				c.BatchChromeNice, c.Capture.Nice = 0, 0
			},
		},
		{
			name: "the lane's own chromium: no tab of the batch one reserved",
			env:  []string{"SNAPQ_INTERACTIVE_BROWSER_TABS=3", "SNAPQ_INTERACTIVE_TABS=1"},
			want: func(c *workerConfig) { c.InteractiveBrowserTabs, c.InteractiveTabs = 3, 1 },
		},
		{
			name: "a strict host cap for synchronous captures too",
			env:  []string{"SNAPQ_INTERACTIVE_HOST_HEADROOM=0"},
			want: func(c *workerConfig) { c.InteractiveHostHeadroom = 0 },
		},
		{
			name: "no artifact copies",
			env:  []string{"SNAPQ_INTERACTIVE_COPY_BYTES=0"},
			want: func(c *workerConfig) { c.InteractiveCopyBytes = 0 },
		},
		{
			name: "jobs equal to the concurrency",
			env:  []string{"SNAPQ_WORKER_CONCURRENCY=64", "SNAPQ_WORKER_JOBS=64"},
			want: func(c *workerConfig) {
				c.Concurrency, c.Jobs, c.Capture.Tabs = 64, 64, 64
			},
		},
		{
			name: "every variable set",
			env: []string{
				"SNAPQ_LOG_LEVEL=warn", "SNAPQ_DATABASE_URL=postgres://u@db:5432/x", "SNAPQ_REDIS_URL=redis://:pw@10.0.0.5:6380/2",
				"SNAPQ_S3_ENDPOINT=s3.example.com", "SNAPQ_S3_BUCKET=shots", "SNAPQ_S3_USE_SSL=1", "SNAPQ_S3_REGION=eu-west-1",
				"SNAPQ_PRESIGN_EXPIRY=2h", "SNAPQ_S3_PUBLIC_URL=https://cdn.example.com",
				"SNAPQ_WORKER_CONCURRENCY=3", "SNAPQ_WORKER_JOBS=12", "SNAPQ_SHUTDOWN_TIMEOUT=20s",
				"SNAPQ_RETRY_BASE_DELAY=500ms", "SNAPQ_MAX_RETRY=0", "SNAPQ_MAX_JOBS_IN_FLIGHT=9", "SNAPQ_WEBHOOK_MAX_RETRY=25", "SNAPQ_WEBHOOK_TIMEOUT=2m",
				"SNAPQ_QUEUE_TASK_CHECK_INTERVAL=100ms", "SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL=200ms",
				"SNAPQ_CHROME_URL=ws://127.0.0.1:9222/devtools/browser/x", "SNAPQ_BROWSER_RECYCLE_AFTER=50",
				"SNAPQ_TAB_RECYCLE_AFTER=5", "SNAPQ_CAPTURE_CALL_TIMEOUT=1m", "SNAPQ_CHROME_NO_SANDBOX=true",
				"SNAPQ_CHROME_USER=chrome", "SNAPQ_CHROME_SITE_ISOLATION=true",
				"SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32, 10.1.0.0/16",
				"SNAPQ_METRICS_ADDR=127.0.0.1:9101", "SNAPQ_PPROF_ADDR=127.0.0.1:6060",
				"SNAPQ_SMTP_ADDR=mail.example.com:587", "SNAPQ_SMTP_FROM=snapq@example.com", "SNAPQ_SMTP_USERNAME=u",
				"SNAPQ_SMTP_PASSWORD=p", "SNAPQ_SMTP_TLS=starttls", "SNAPQ_PUBLIC_URL=https://snapq.example.com",
				"SNAPQ_SMTP_ALLOWED_DOMAINS=example.com,*.corp.example", "SNAPQ_SMTP_MAX_PER_SUITE=3", "SNAPQ_SMTP_MAX_PER_KEY=7",
			},
			want: func(c *workerConfig) {
				c.LogLevel = slog.LevelWarn
				c.DatabaseURL = "postgres://u@db:5432/x"
				c.Redis = asynq.RedisClientOpt{Addr: "10.0.0.5:6380", Password: "pw", DB: 2}
				c.S3.Endpoint, c.S3.Bucket, c.S3.UseSSL, c.S3.Region = "s3.example.com", "shots", true, "eu-west-1"
				c.S3.PresignExpiry, c.S3.PublicURL = 2*time.Hour, "https://cdn.example.com"
				c.Concurrency, c.Jobs = 3, 12
				c.ShutdownTimeout, c.RetryBaseDelay, c.MaxRetry, c.MaxJobsInFlight = 20*time.Second, 500*time.Millisecond, 0, 9
				c.Webhook = webhook.Config{MaxRetry: 25, Timeout: 2 * time.Minute}
				c.Polling = queue.Polling{TaskCheck: 100 * time.Millisecond, DelayedTaskCheck: 200 * time.Millisecond}
				c.Capture.RemoteURL = "ws://127.0.0.1:9222/devtools/browser/x"
				c.Capture.Tabs, c.Capture.BrowserRecycleAfter, c.Capture.TabRecycleAfter = 3, 50, 5
				c.Capture.CallTimeout, c.Capture.NoSandbox = time.Minute, true
				c.Capture.ChromeUser, c.Capture.SiteIsolation = "chrome", true
				c.EgressAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("10.1.0.0/16")}
				c.MetricsAddr, c.PprofAddr = "127.0.0.1:9101", "127.0.0.1:6060"
				c.SMTP = notify.SMTPConfig{Addr: "mail.example.com:587", From: "snapq@example.com", Username: "u", Password: "p", TLS: "starttls",
					AllowedDomains: regression.MailDomains{"example.com", "*.corp.example"}, MaxPerSuite: 3, MaxPerKey: 7}
				c.PublicURL = "https://snapq.example.com"
			},
		},
		{
			name: "sentinel",
			env:  []string{"SNAPQ_REDIS_URL=redis-sentinel://:pw@10.0.0.5:26379,10.0.0.6:26379/2?master=snapq"},
			want: func(c *workerConfig) {
				c.Redis = asynq.RedisFailoverClientOpt{MasterName: "snapq", SentinelAddrs: []string{"10.0.0.5:26379", "10.0.0.6:26379"}, Password: "pw", DB: 2}
			},
		},
		{
			name: "cluster shards by default",
			env:  []string{"SNAPQ_REDIS_URL=redis-cluster://10.0.0.5:7000,10.0.0.6:7000"},
			want: func(c *workerConfig) {
				c.Redis = asynq.RedisClusterClientOpt{Addrs: []string{"10.0.0.5:7000", "10.0.0.6:7000"}}
				c.Shards = 8
			},
		},
		{
			name: "shards on a single redis",
			env:  []string{"SNAPQ_QUEUE_SHARDS=4"},
			want: func(c *workerConfig) { c.Shards = 4 },
		},
		{
			name: "a remote browser pool in another pod",
			env: []string{"SNAPQ_CHROME_BIN=/nonexistent/chromium", "SNAPQ_CHROME_URL=http://browsers-0:9222, http://browsers-1:9222",
				"SNAPQ_EGRESS_PROXY_LISTEN=0.0.0.0:0", "SNAPQ_EGRESS_PROXY_ADVERTISE=10.4.2.17"},
			want: func(c *workerConfig) {
				c.Capture.ChromeBin, c.Capture.RemoteURL = "/nonexistent/chromium", "http://browsers-0:9222, http://browsers-1:9222"
				c.Capture.EgressListen, c.Capture.EgressAdvertise = "0.0.0.0:0", "10.4.2.17"
				c.Egress.Listen, c.Egress.Advertise = "0.0.0.0:0", "10.4.2.17"
			},
		},
		{
			name: "a remote browser needs no local chromium",
			env:  []string{"SNAPQ_CHROME_BIN=/nonexistent/chromium", "SNAPQ_CHROME_URL=http://127.0.0.1:9222"},
			want: func(c *workerConfig) {
				c.Capture.ChromeBin, c.Capture.RemoteURL = "/nonexistent/chromium", "http://127.0.0.1:9222"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chrome := setup(t, tt.env...)
			got, err := loadWorkerConfig()
			if err != nil {
				t.Fatalf("loadWorkerConfig: %v", err)
			}
			want := defaultWorkerConfig(chrome)
			tt.want(&want)
			if diff := cmp.Diff(want, got, policyAllows); diff != "" {
				t.Errorf("loadWorkerConfig (-want +got):\n%s", diff)
			}
			// The policy allows exactly SNAPQ_EGRESS_ALLOW_CIDRS.
			if got.Egress.Policy == nil {
				t.Fatal("Egress.Policy is nil")
			}
			if diff := cmp.Diff(want.EgressAllow, got.Egress.Policy.AllowList(), policyAllows, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Egress.Policy.AllowList() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadWorkerConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string // the lines of the joined error: SNAPQ_WORKER_CONCURRENCY/JOBS, read errors, then each package's Validate
	}{
		{
			name: "no tabs",
			env:  []string{"SNAPQ_WORKER_CONCURRENCY=0"},
			want: []string{"SNAPQ_WORKER_CONCURRENCY=0: want 1 to 64"},
		},
		{
			name: "negative concurrency is reported once",
			env:  []string{"SNAPQ_WORKER_CONCURRENCY=-1"},
			want: []string{"SNAPQ_WORKER_CONCURRENCY=-1: want 1 to 64"},
		},
		{
			name: "too many tabs",
			env:  []string{"SNAPQ_WORKER_CONCURRENCY=65"},
			want: []string{"SNAPQ_WORKER_CONCURRENCY=65: want 1 to 64"},
		},
		{
			name: "queue polling out of bounds",
			env:  []string{"SNAPQ_QUEUE_TASK_CHECK_INTERVAL=1ms", "SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL=2m"},
			want: []string{
				"SNAPQ_QUEUE_TASK_CHECK_INTERVAL=1ms: want 10ms to 1m0s",
				"SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL=2m0s: want 10ms to 1m0s",
			},
		},
		{
			name: "fewer jobs than tabs",
			env:  []string{"SNAPQ_WORKER_CONCURRENCY=4", "SNAPQ_WORKER_JOBS=3"},
			want: []string{"SNAPQ_WORKER_JOBS=3: want at least SNAPQ_WORKER_CONCURRENCY (4)"},
		},
		{
			name: "interactive poll out of range",
			env:  []string{"SNAPQ_INTERACTIVE_POLL=2s"},
			want: []string{"SNAPQ_INTERACTIVE_POLL=2s: want 1ms to 1s"},
		},
		{
			name: "lane tabs out of range",
			env:  []string{"SNAPQ_INTERACTIVE_BROWSER_TABS=65"},
			want: []string{"SNAPQ_INTERACTIVE_BROWSER_TABS=65: want 0 to 64"},
		},
		{
			name: "niceness out of range",
			env:  []string{"SNAPQ_BATCH_CHROME_NICE=20"},
			want: []string{"SNAPQ_BATCH_CHROME_NICE=20: want 0 to 19"},
		},
		{
			name: "host headroom out of range",
			env:  []string{"SNAPQ_INTERACTIVE_HOST_HEADROOM=17"},
			want: []string{"SNAPQ_INTERACTIVE_HOST_HEADROOM=17: want 0 to 16"},
		},
		{
			name: "artifact copies too large",
			env:  []string{"SNAPQ_INTERACTIVE_COPY_BYTES=999999999"},
			want: []string{"SNAPQ_INTERACTIVE_COPY_BYTES=999999999: want 0 to 67108864"},
		},
		{
			name: "not numbers",
			env:  []string{"SNAPQ_WORKER_JOBS=many", "SNAPQ_SHUTDOWN_TIMEOUT=30", "SNAPQ_CHROME_NO_SANDBOX=yes"},
			want: []string{
				`SNAPQ_WORKER_JOBS="many": want a whole number`,
				`SNAPQ_SHUTDOWN_TIMEOUT="30": want a duration such as 30s or 15m`,
				`SNAPQ_CHROME_NO_SANDBOX="yes": want true or false`,
			},
		},
		{
			name: "redis forms",
			env:  []string{"SNAPQ_REDIS_URL=redis-sentinel://10.0.0.5:26379", "SNAPQ_QUEUE_SHARDS=65"},
			want: []string{
				"SNAPQ_REDIS_URL: redis-sentinel URL: want ?master=NAME, the master name the sentinels monitor",
				"SNAPQ_QUEUE_SHARDS=65: want 1 to 64",
			},
		},
		{
			name: "webhook out of range",
			env:  []string{"SNAPQ_WEBHOOK_MAX_RETRY=26", "SNAPQ_WEBHOOK_TIMEOUT=500ms"},
			want: []string{"SNAPQ_WEBHOOK_MAX_RETRY=26: want 0 to 25", "SNAPQ_WEBHOOK_TIMEOUT=500ms: want 1s to 2m0s"},
		},
		{
			name: "smtp",
			env: []string{"SNAPQ_SMTP_ADDR=mail.example.com", "SNAPQ_SMTP_TLS=ssl", "SNAPQ_SMTP_USERNAME=u",
				"SNAPQ_SMTP_ALLOWED_DOMAINS=ops@example.com", "SNAPQ_SMTP_MAX_PER_SUITE=-1"},
			want: []string{`SNAPQ_SMTP_ALLOWED_DOMAINS: "ops@example.com" is not a domain (example.com, or *.example.com for its subdomains)`,
				"SNAPQ_SMTP_ADDR=mail.example.com: want host:port", "SNAPQ_SMTP_FROM is required with SNAPQ_SMTP_ADDR",
				"SNAPQ_SMTP_TLS=ssl: want auto, starttls or tls", "set both SNAPQ_SMTP_USERNAME and SNAPQ_SMTP_PASSWORD, or neither",
				"SNAPQ_SMTP_MAX_PER_SUITE=-1: want 1 to 100000"},
		},
		{
			name: "chromium missing",
			env:  []string{"SNAPQ_CHROME_BIN=/nonexistent/chromium"},
			want: []string{"chromium not found at /nonexistent/chromium: install Debian's chromium package (apt-get install chromium) or set SNAPQ_CHROME_BIN (stat /nonexistent/chromium: no such file or directory)"},
		},
		{
			name: "proxies on every interface without an advertised host",
			env:  []string{"SNAPQ_EGRESS_PROXY_LISTEN=0.0.0.0:0"},
			want: []string{"SNAPQ_EGRESS_PROXY_LISTEN=0.0.0.0:0, SNAPQ_EGRESS_PROXY_ADVERTISE=: egress: listen address \"0.0.0.0:0\" binds every interface: set the host the browser dials (SNAPQ_EGRESS_PROXY_ADVERTISE)"},
		},
		{
			name: "proxies on a fixed port",
			env:  []string{"SNAPQ_EGRESS_PROXY_LISTEN=10.0.0.5:3128", "SNAPQ_EGRESS_PROXY_ADVERTISE=10.0.0.5"},
			want: []string{"SNAPQ_EGRESS_PROXY_LISTEN=10.0.0.5:3128, SNAPQ_EGRESS_PROXY_ADVERTISE=10.0.0.5: egress: listen address \"10.0.0.5:3128\": the port must be 0 (each browser context gets a proxy on a port of its own)"},
		},
		{
			name: "a remote endpoint that is not a URL",
			env:  []string{"SNAPQ_CHROME_URL=http://127.0.0.1:9222,browsers:9222"},
			want: []string{`remote browser URL "browsers:9222": scheme "browsers", want ws, wss, http or https`},
		},
		{
			name: "every bad variable at once",
			env: []string{"SNAPQ_WORKER_CONCURRENCY=0", "SNAPQ_REDIS_URL=mysql://db", "SNAPQ_S3_BUCKET=No_Such",
				"SNAPQ_EGRESS_ALLOW_CIDRS=10.0.0.0/33", "SNAPQ_TAB_RECYCLE_AFTER=-1", "SNAPQ_WEBHOOK_TIMEOUT=1h"},
			want: []string{
				"SNAPQ_WORKER_CONCURRENCY=0: want 1 to 64",
				`SNAPQ_REDIS_URL: asynq: unsupported uri scheme: "mysql" (forms: redis://, rediss://, redis-socket://, redis-sentinel://, redis-cluster://)`,
				`SNAPQ_EGRESS_ALLOW_CIDRS: egress: allow-list entry 1 "10.0.0.0/33" is not a CIDR prefix: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`,
				`SNAPQ_S3_BUCKET "No_Such" is not a valid bucket name (3-63 lowercase letters, digits, '.' or '-'): Bucket name contains invalid characters`,
				"tab recycle-after must be at least 1, got -1",
				"SNAPQ_WEBHOOK_TIMEOUT=1h0m0s: want 1s to 2m0s",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup(t, tt.env...)
			_, err := loadWorkerConfig()
			if err == nil {
				t.Fatal("loadWorkerConfig: no error")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// A drain shorter than the longest job is reported at start; the default
// and the Kubernetes value (450s) are not.
func TestDrainWarning(t *testing.T) {
	tests := []struct {
		name     string
		shutdown time.Duration
		warn     bool
	}{
		{name: "the e2e tests' 20s", shutdown: 20 * time.Second, warn: true},
		{name: "just short", shutdown: 314 * time.Second, warn: true},
		{name: "exactly the longest job", shutdown: 315 * time.Second},
		{name: "kubernetes", shutdown: 450 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := workerConfig{ShutdownTimeout: tt.shutdown}.drainWarning()
			if (w != "") != tt.warn {
				t.Fatalf("drainWarning(%s) = %q, want a warning: %v", tt.shutdown, w, tt.warn)
			}
			if tt.warn && !strings.Contains(w, "5m15s") {
				t.Errorf("the warning does not name the longest job (5m15s): %q", w)
			}
		})
	}
}

// As root the worker refuses to start when the user Chromium runs as is missing, and says
// how to fix it; SNAPQ_CHROME_NO_SANDBOX lets it start anyway. Not root, it needs no user.
func TestLoadWorkerConfigChromeUser(t *testing.T) {
	setup(t, "SNAPQ_CHROME_USER=snapq-no-such-user")
	_, err := loadWorkerConfig()
	if os.Geteuid() != 0 {
		if err != nil {
			t.Fatalf("loadWorkerConfig as uid %d: %v (only root needs the user)", os.Geteuid(), err)
		}
		return
	}
	want := `chromium user "snapq-no-such-user" does not exist: as root the worker starts Chromium as that user so Chromium can sandbox the pages it renders; ` +
		"create it (useradd --system --no-create-home --shell /usr/sbin/nologin snapq-no-such-user), set SNAPQ_CHROME_USER to another unprivileged user, " +
		"or set SNAPQ_CHROME_NO_SANDBOX=true to run pages without Chromium's sandbox"
	if err == nil || err.Error() != want {
		t.Fatalf("loadWorkerConfig error:\n got %v\nwant %s", err, want)
	}
	t.Setenv("SNAPQ_CHROME_NO_SANDBOX", "true")
	if _, err := loadWorkerConfig(); err != nil {
		t.Fatalf("with SNAPQ_CHROME_NO_SANDBOX=true: %v", err)
	}
}
