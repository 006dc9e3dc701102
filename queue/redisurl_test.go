package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
)

func TestParseRedisURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		want      asynq.RedisConnOpt
		wantErr   string
	}{
		{name: "single", raw: "redis://:pw@127.0.0.1:6380/3", want: asynq.RedisClientOpt{Addr: "127.0.0.1:6380", Password: "pw", DB: 3}},
		{name: "sentinel", raw: "redis-sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381/2?master=snapq&sentinel_password=sp",
			want: asynq.RedisFailoverClientOpt{MasterName: "snapq", SentinelAddrs: []string{"127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"},
				Password: "pw", SentinelPassword: "sp", DB: 2}},
		{name: "sentinel without db", raw: "redis-sentinel://s1:26379?master=m",
			want: asynq.RedisFailoverClientOpt{MasterName: "m", SentinelAddrs: []string{"s1:26379"}}},
		{name: "cluster", raw: "redis-cluster://u:pw@127.0.0.1:7000,127.0.0.1:7001?max_redirects=3",
			want: asynq.RedisClusterClientOpt{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}, Username: "u", Password: "pw", MaxRedirects: 3}},
		{name: "cluster db 0", raw: "redis-cluster://127.0.0.1:7000/0", want: asynq.RedisClusterClientOpt{Addrs: []string{"127.0.0.1:7000"}}},
		{name: "sentinel without master", raw: "redis-sentinel://127.0.0.1:26379/0",
			wantErr: "redis-sentinel URL: want ?master=NAME, the master name the sentinels monitor"},
		{name: "sentinel without port", raw: "redis-sentinel://127.0.0.1,127.0.0.2:26379?master=m",
			wantErr: `redis-sentinel URL: "127.0.0.1" is not host:port (list every node as host:port, comma-separated)`},
		{name: "sentinel bad db", raw: "redis-sentinel://h:1/x?master=m", wantErr: `redis-sentinel URL: the path "/x" must be a database number`},
		{name: "sentinel unknown parameter", raw: "redis-sentinel://h:1?master=m&db=2",
			wantErr: `redis-sentinel URL: unknown parameter "db" (known: master, sentinel_password)`},
		{name: "cluster db", raw: "redis-cluster://h:7000/1", wantErr: "redis-cluster URL: a cluster has only database 0; leave the path out"},
		{name: "cluster bad port", raw: "redis-cluster://h:70000", wantErr: `redis-cluster URL: "h:70000": the port must be 1-65535`},
		{name: "cluster bad redirects", raw: "redis-cluster://h:7000?max_redirects=-1", wantErr: `redis-cluster URL: max_redirects="-1": want a whole number >= 0`},
		{name: "not a url", raw: "127.0.0.1:6379",
			wantErr: `"127.0.0.1:6379" is not a URL: want redis://host:port/db, redis-sentinel://host:port,host:port/db?master=NAME or redis-cluster://host:port,host:port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRedisURL(tt.raw)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseRedisURL(%q) error = %v, want %q", tt.raw, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRedisURL(%q) (-want +got):\n%s", tt.raw, diff)
			}
		})
	}
}
