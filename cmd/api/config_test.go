package main

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/ratelimit"
	"github.com/snapq/snapq/web"
)

// setup clears every SNAPQ_* variable the test process inherited, then sets
// the S3 credentials (required, no default) and env. t.Setenv restores all of
// them afterwards, which also rules out t.Parallel.
func setup(t *testing.T, env ...string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SNAPQ_") {
			t.Setenv(name, "") // empty reads as unset
		}
	}
	t.Setenv("SNAPQ_S3_ACCESS_KEY", "key")
	t.Setenv("SNAPQ_S3_SECRET_KEY", "secret")
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
}

// defaultAPIConfig is what loadAPIConfig returns with only the S3
// credentials set: the defaults docs/operating/configuration.md documents.
func defaultAPIConfig() apiConfig {
	s3 := artifacts.DefaultConfig()
	s3.AccessKey, s3.SecretKey = "key", "secret"
	return apiConfig{
		LogLevel:            slog.LevelInfo,
		Addr:                "127.0.0.1:8080",
		DatabaseURL:         "postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable",
		Redis:               asynq.RedisClientOpt{Addr: "127.0.0.1:6379"},
		S3:                  s3,
		Queue:               queue.Config{MaxRetry: 3, WebhookMaxRetry: 8, Shards: 1},
		ReconcileInterval:   time.Minute,
		ReconcileGrace:      30 * time.Second,
		ScheduleSync:        30 * time.Second,
		SweepInterval:       10 * time.Minute,
		SweepGrace:          time.Hour,
		BranchBaselineDays:  30,
		Auth:                "on",
		Web:                 web.Config{MaxBodyBytes: 1 << 20, Auth: true, ListenAddr: "127.0.0.1:8080", BrowserlessPrefix: web.DefaultBrowserlessPrefix},
		RateLimit:           10,
		RateBurst:           20,
		AuthFailureRate:     0.1,
		AuthFailureBurst:    10,
		MaxTargets:          1000,
		MaxJobsInFlight:     10000,
		MaxSuitesPerKey:     100,
		MinScheduleInterval: 5 * time.Minute,
		AdminQueues:         "readonly",
		Metrics:             "on",
		HostConcurrencyMax:  16,
		SSE:                 web.SSEConfig{MaxStreams: 1000, MaxDuration: 30 * time.Minute, Heartbeat: 15 * time.Second},
		SitemapTimeout:      30 * time.Second,
		Budget: map[string]ratelimit.Cap{
			jobs.WorkDiscover: {PerKey: 2, PerReplica: 8, RetryAfter: 10 * time.Second},
			jobs.WorkPreview:  {PerKey: 1, PerReplica: 4, RetryAfter: 5 * time.Second},
			jobs.WorkAuthTest: {PerKey: 1, PerReplica: 16, RetryAfter: 15 * time.Second},
			jobs.WorkArchive:  {PerKey: 2, PerReplica: 16, RetryAfter: 10 * time.Second},
			jobs.WorkStream:   {PerKey: 20, RetryAfter: 10 * time.Second},
		},
		MaxAuthProfilesPerKey: 50,
	}
}

func TestLoadAPIConfig(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want func(*apiConfig) // applied to defaultAPIConfig()
	}{
		{name: "defaults", want: func(*apiConfig) {}},
		{
			name: "every variable set",
			env: []string{
				"SNAPQ_LOG_LEVEL=DEBUG", "SNAPQ_HTTP_ADDR=localhost:9090",
				"SNAPQ_DATABASE_URL=postgres://u@db:5432/x", "SNAPQ_REDIS_URL=redis://10.0.0.5:6380/3",
				"SNAPQ_S3_ENDPOINT=s3.example.com", "SNAPQ_S3_BUCKET=shots", "SNAPQ_S3_USE_SSL=true",
				"SNAPQ_S3_REGION=eu-west-1", "SNAPQ_S3_PUBLIC_URL=https://cdn.example.com", "SNAPQ_PRESIGN_EXPIRY=1h",
				"SNAPQ_MAX_RETRY=5", "SNAPQ_WEBHOOK_MAX_RETRY=2",
				"SNAPQ_RECONCILE_INTERVAL=5s", "SNAPQ_RECONCILE_GRACE=10s", "SNAPQ_SCHEDULE_SYNC=1s",
				"SNAPQ_SWEEP_INTERVAL=1h", "SNAPQ_SWEEP_GRACE=2h", "SNAPQ_SWEEP_DRY_RUN=true", "SNAPQ_BRANCH_BASELINE_DAYS=0",
				"SNAPQ_AUTH=off", "SNAPQ_MAX_BODY_BYTES=2097152", "SNAPQ_PUBLIC_URL=https://snapq.example.com",
				"SNAPQ_CORS_ORIGINS= https://a.example, ,https://b.example ",
				"SNAPQ_ALLOWED_HOSTS=snapq.internal, api.example.com:8443,",
				"SNAPQ_RATE_LIMIT=0.5", "SNAPQ_RATE_BURST=3", "SNAPQ_AUTH_FAILURE_RATE=0", "SNAPQ_AUTH_FAILURE_BURST=4", "SNAPQ_MAX_TARGETS=50", "SNAPQ_MAX_JOBS_IN_FLIGHT=7", "SNAPQ_MAX_SUITES_PER_KEY=4", "SNAPQ_MIN_SCHEDULE_INTERVAL=1h",
				"SNAPQ_ADMIN_QUEUES=off", "SNAPQ_METRICS=public",
				"SNAPQ_SSE_MAX_STREAMS=20", "SNAPQ_SSE_MAX_DURATION=5m", "SNAPQ_SSE_HEARTBEAT=2s",
				"SNAPQ_SITEMAP_TIMEOUT=10s",
				"SNAPQ_BROWSERLESS_PREFIX=/browserless/",
			},
			want: func(c *apiConfig) {
				c.LogLevel = slog.LevelDebug
				c.Addr = "localhost:9090"
				c.DatabaseURL = "postgres://u@db:5432/x"
				c.Redis = asynq.RedisClientOpt{Addr: "10.0.0.5:6380", DB: 3}
				c.S3.Endpoint, c.S3.Bucket, c.S3.UseSSL, c.S3.Region = "s3.example.com", "shots", true, "eu-west-1"
				c.S3.PublicURL, c.S3.PresignExpiry = "https://cdn.example.com", time.Hour
				c.Queue = queue.Config{MaxRetry: 5, WebhookMaxRetry: 2, Shards: 1}
				c.ReconcileInterval, c.ReconcileGrace, c.ScheduleSync = 5*time.Second, 10*time.Second, time.Second
				c.SweepInterval = time.Hour
				c.SweepGrace, c.SweepDryRun = 2*time.Hour, true
				c.BranchBaselineDays = 0
				c.Auth = "off"
				c.Web = web.Config{MaxBodyBytes: 2 << 20, PublicURL: "https://snapq.example.com",
					CORSOrigins: []string{"https://a.example", "https://b.example"}, ListenAddr: "localhost:9090",
					AllowedHosts: []string{"snapq.internal", "api.example.com:8443"}, BrowserlessPrefix: "/browserless"}
				c.RateLimit, c.RateBurst, c.MaxTargets, c.MaxJobsInFlight = 0.5, 3, 50, 7
				c.AuthFailureRate, c.AuthFailureBurst = 0, 4
				c.MaxSuitesPerKey, c.MinScheduleInterval = 4, time.Hour
				c.AdminQueues, c.Metrics = "off", "public"
				c.SitemapTimeout = 10 * time.Second
				c.SSE = web.SSEConfig{MaxStreams: 20, MaxDuration: 5 * time.Minute, Heartbeat: 2 * time.Second}
			},
		},
		{
			name: "auth off on loopback IPv6",
			env:  []string{"SNAPQ_AUTH=off", "SNAPQ_HTTP_ADDR=[::1]:8080"},
			want: func(c *apiConfig) {
				c.Auth, c.Web.Auth, c.Addr, c.Web.ListenAddr = "off", false, "[::1]:8080", "[::1]:8080"
			},
		},
		{
			name: "auth on anywhere",
			env:  []string{"SNAPQ_HTTP_ADDR=0.0.0.0:8080"},
			want: func(c *apiConfig) { c.Addr, c.Web.ListenAddr = "0.0.0.0:8080", "0.0.0.0:8080" },
		},
		{
			name: "sentinel, shards and admin token",
			env: []string{"SNAPQ_REDIS_URL=redis-sentinel://s1:26379,s2:26379?master=m", "SNAPQ_QUEUE_SHARDS=4",
				"SNAPQ_ADMIN_TOKEN=0123456789abcdef0123456789abcdef"},
			want: func(c *apiConfig) {
				c.Redis = asynq.RedisFailoverClientOpt{MasterName: "m", SentinelAddrs: []string{"s1:26379", "s2:26379"}}
				c.Queue.Shards = 4
				c.Web.AdminToken = "0123456789abcdef0123456789abcdef"
			},
		},
		{
			name: "work budget",
			env:  []string{"SNAPQ_BUDGET_DISCOVER_PER_KEY=5", "SNAPQ_BUDGET_PREVIEW_PER_REPLICA=0", "SNAPQ_SSE_MAX_STREAMS_PER_KEY=3", "SNAPQ_MAX_AUTH_PROFILES_PER_KEY=0"},
			want: func(c *apiConfig) {
				c.Budget[jobs.WorkDiscover] = ratelimit.Cap{PerKey: 5, PerReplica: 8, RetryAfter: 10 * time.Second}
				c.Budget[jobs.WorkPreview] = ratelimit.Cap{PerKey: 1, RetryAfter: 5 * time.Second}
				c.Budget[jobs.WorkStream] = ratelimit.Cap{PerKey: 3, RetryAfter: 10 * time.Second}
				c.MaxAuthProfilesPerKey = 0
			},
		},
		{
			name: "sweeping off",
			env:  []string{"SNAPQ_SWEEP_INTERVAL=0"},
			want: func(c *apiConfig) { c.SweepInterval = 0 },
		},
		{
			name: "unknown log level means info",
			env:  []string{"SNAPQ_LOG_LEVEL=loud"},
			want: func(*apiConfig) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup(t, tt.env...)
			got, err := loadAPIConfig()
			if err != nil {
				t.Fatalf("loadAPIConfig: %v", err)
			}
			want := defaultAPIConfig()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("loadAPIConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadAPIConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string // the lines of the joined error: read errors first, in reading order
	}{
		{
			name: "auth neither on nor off",
			env:  []string{"SNAPQ_AUTH=maybe"},
			want: []string{`SNAPQ_AUTH="maybe": want on or off`},
		},
		{
			name: "auth off on a public address",
			env:  []string{"SNAPQ_AUTH=off", "SNAPQ_HTTP_ADDR=0.0.0.0:8080"},
			want: []string{"SNAPQ_AUTH=off is only allowed when SNAPQ_HTTP_ADDR listens on loopback (it is 0.0.0.0:8080): create keys with `api keys create --name NAME` instead"},
		},
		{
			name: "auth off without a host",
			env:  []string{"SNAPQ_AUTH=off", "SNAPQ_HTTP_ADDR=:8080"},
			want: []string{"SNAPQ_AUTH=off is only allowed when SNAPQ_HTTP_ADDR listens on loopback (it is :8080): create keys with `api keys create --name NAME` instead"},
		},
		{
			name: "admin queues mode",
			env:  []string{"SNAPQ_ADMIN_QUEUES=rw"},
			want: []string{`SNAPQ_ADMIN_QUEUES="rw": want readonly, on or off`},
		},
		{
			name: "metrics mode",
			env:  []string{"SNAPQ_METRICS=yes"},
			want: []string{`SNAPQ_METRICS="yes": want on, off or public`},
		},
		{
			name: "numbers and durations",
			env:  []string{"SNAPQ_RATE_LIMIT=fast", "SNAPQ_MAX_TARGETS=1k", "SNAPQ_RECONCILE_INTERVAL=5"},
			want: []string{
				`SNAPQ_RECONCILE_INTERVAL="5": want a duration such as 30s or 15m`,
				`SNAPQ_RATE_LIMIT="fast": want a number`,
				`SNAPQ_MAX_TARGETS="1k": want a whole number`,
			},
		},
		{
			name: "negative sweep interval",
			env:  []string{"SNAPQ_SWEEP_INTERVAL=-1m"},
			want: []string{"SNAPQ_SWEEP_INTERVAL=-1m0s: want a positive duration, or 0 to turn sweeping off"},
		},
		{
			name: "redis url",
			env:  []string{"SNAPQ_REDIS_URL=mysql://db"},
			want: []string{`SNAPQ_REDIS_URL: asynq: unsupported uri scheme: "mysql" (forms: redis://, rediss://, redis-socket://, redis-sentinel://, redis-cluster://)`},
		},
		{
			name: "cluster url and shards",
			env:  []string{"SNAPQ_REDIS_URL=redis-cluster://n1:7000/2", "SNAPQ_QUEUE_SHARDS=0"},
			want: []string{
				"SNAPQ_REDIS_URL: redis-cluster URL: a cluster has only database 0; leave the path out",
				"SNAPQ_QUEUE_SHARDS=0: want 1 to 64",
			},
		},
		{
			name: "short admin token",
			env:  []string{"SNAPQ_ADMIN_TOKEN=secret"},
			want: []string{"SNAPQ_ADMIN_TOKEN: want at least 24 characters without surrounding spaces (e.g. openssl rand -hex 24)"},
		},
		{
			name: "branch baseline days out of range",
			env:  []string{"SNAPQ_BRANCH_BASELINE_DAYS=-1"},
			want: []string{"SNAPQ_BRANCH_BASELINE_DAYS=-1: want 0 (never expire) to 36500 days"},
		},
		{
			name: "s3 credentials missing",
			env:  []string{"SNAPQ_S3_ACCESS_KEY=", "SNAPQ_S3_SECRET_KEY="},
			want: []string{"SNAPQ_S3_ACCESS_KEY is required", "SNAPQ_S3_SECRET_KEY is required"},
		},
		{
			name: "every bad variable at once",
			env: []string{"SNAPQ_WEBHOOK_MAX_RETRY=x", "SNAPQ_AUTH=maybe", "SNAPQ_ADMIN_QUEUES=rw",
				"SNAPQ_METRICS=yes", "SNAPQ_PRESIGN_EXPIRY=200h"},
			want: []string{
				`SNAPQ_WEBHOOK_MAX_RETRY="x": want a whole number`,
				`SNAPQ_AUTH="maybe": want on or off`,
				`SNAPQ_ADMIN_QUEUES="rw": want readonly, on or off`,
				`SNAPQ_METRICS="yes": want on, off or public`,
				"SNAPQ_PRESIGN_EXPIRY must be between 1s and 168h (7 days), got 200h0m0s",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup(t, tt.env...)
			_, err := loadAPIConfig()
			if err == nil {
				t.Fatal("loadAPIConfig: no error")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDatabaseURL(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{name: "default", want: "postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable"},
		{name: "set", env: []string{"SNAPQ_DATABASE_URL=postgres://u@db/x"}, want: "postgres://u@db/x"},
		{
			name: "needs no S3 settings",
			env:  []string{"SNAPQ_S3_ACCESS_KEY=", "SNAPQ_S3_ENDPOINT=http://bad"},
			want: "postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup(t, tt.env...)
			got, err := loadDatabaseURL()
			if err != nil || got != tt.want {
				t.Errorf("loadDatabaseURL() = %q, %v; want %q, nil", got, err, tt.want)
			}
		})
	}
}
