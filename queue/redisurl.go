package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// The forms of SNAPQ_REDIS_URL beyond asynq's own (redis://, rediss://,
// redis-socket://), parsed here rather than by asynq.ParseRedisURI: asynq's
// redis-sentinel form drops the database number, takes the password for the
// sentinels' and checks nothing, and it has no cluster form.
//
//	redis-sentinel://[[user]:password@]host:port[,host:port...][/db]?master=NAME[&sentinel_password=P]
//	redis-cluster://[[user]:password@]host:port[,host:port...][?max_redirects=N]
//
// In the sentinel form the password is the Redis servers' (master and
// replicas); sentinel_password, when the sentinels require one, is theirs.
const (
	schemeSentinel = "redis-sentinel"
	schemeCluster  = "redis-cluster"
)

// ParseRedisURL parses SNAPQ_REDIS_URL into asynq's connection option:
// asynq.RedisClientOpt (a single server), asynq.RedisFailoverClientOpt
// (Sentinel) or asynq.RedisClusterClientOpt (Redis Cluster).
func ParseRedisURL(raw string) (asynq.RedisConnOpt, error) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf("%q is not a URL: want redis://host:port/db, redis-sentinel://host:port,host:port/db?master=NAME or redis-cluster://host:port,host:port", redact(raw))
	}
	switch scheme {
	case schemeSentinel:
		return parseSentinel(raw)
	case schemeCluster:
		return parseCluster(raw)
	}
	opt, err := asynq.ParseRedisURI(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (forms: redis://, rediss://, redis-socket://, redis-sentinel://, redis-cluster://)", err)
	}
	return opt, nil
}

// IsCluster reports whether opt connects to a Redis Cluster.
func IsCluster(opt asynq.RedisConnOpt) bool {
	_, ok := opt.(asynq.RedisClusterClientOpt)
	return ok
}

func parseSentinel(raw string) (asynq.RedisConnOpt, error) {
	u, addrs, err := parseMultiHost(raw)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	opt := asynq.RedisFailoverClientOpt{SentinelAddrs: addrs, MasterName: q.Get("master"),
		SentinelPassword: q.Get("sentinel_password")}
	if opt.MasterName == "" {
		return nil, errors.New("redis-sentinel URL: want ?master=NAME, the master name the sentinels monitor")
	}
	if err := onlyParams(q, "master", "sentinel_password"); err != nil {
		return nil, fmt.Errorf("redis-sentinel URL: %w", err)
	}
	opt.Username, opt.Password = userPassword(u)
	if opt.DB, err = pathDB(u.Path); err != nil {
		return nil, fmt.Errorf("redis-sentinel URL: %w", err)
	}
	return opt, nil
}

func parseCluster(raw string) (asynq.RedisConnOpt, error) {
	u, addrs, err := parseMultiHost(raw)
	if err != nil {
		return nil, err
	}
	opt := asynq.RedisClusterClientOpt{Addrs: addrs}
	opt.Username, opt.Password = userPassword(u)
	if db, err := pathDB(u.Path); err != nil || db != 0 {
		return nil, errors.New("redis-cluster URL: a cluster has only database 0; leave the path out")
	}
	q := u.Query()
	if err := onlyParams(q, "max_redirects"); err != nil {
		return nil, fmt.Errorf("redis-cluster URL: %w", err)
	}
	if v := q.Get("max_redirects"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("redis-cluster URL: max_redirects=%q: want a whole number >= 0", v)
		}
		opt.MaxRedirects = n
	}
	return opt, nil
}

// parseMultiHost parses a URL whose host is a comma-separated list of
// host:port, each checked.
func parseMultiHost(raw string) (*url.URL, []string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse %q: %w", redact(raw), errors.Unwrap(err))
	}
	var addrs []string
	for _, a := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, nil, fmt.Errorf("%s URL: %q is not host:port (list every node as host:port, comma-separated)", u.Scheme, a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, nil, fmt.Errorf("%s URL: %q: the port must be 1-65535", u.Scheme, a)
		}
		addrs = append(addrs, a)
	}
	return u, addrs, nil
}

func userPassword(u *url.URL) (user, password string) {
	if u.User == nil {
		return "", ""
	}
	password, _ = u.User.Password()
	return u.User.Username(), password
}

// pathDB reads "/N" (or nothing: 0) as a database number.
func pathDB(path string) (int, error) {
	p := strings.Trim(path, "/")
	if p == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("the path %q must be a database number", path)
	}
	return n, nil
}

func onlyParams(q url.Values, known ...string) error {
	for k := range q {
		ok := false
		for _, kk := range known {
			ok = ok || k == kk
		}
		if !ok {
			return fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// redact hides a password in a URL for error messages.
func redact(raw string) string {
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			return raw[:j+3] + "…@" + raw[i+1:]
		}
	}
	return raw
}

// CheckRedis asks the Redis behind opt whether it is what the URL says: a
// sentinel that knows the master, a cluster node for redis-cluster://, and a
// server that is not one for the other forms (a single-server client on a
// cluster fails on every key of another node). Only a definite mismatch is an
// error; a server that does not answer within the context is not (the
// processes start before Redis and reconnect).
func CheckRedis(ctx context.Context, opt asynq.RedisConnOpt) error {
	switch o := opt.(type) {
	case asynq.RedisFailoverClientOpt:
		return checkSentinel(ctx, o)
	case asynq.RedisClusterClientOpt:
		c := redis.NewClient(&redis.Options{Addr: o.Addrs[0], Username: o.Username, Password: o.Password, DialTimeout: 2 * time.Second})
		defer c.Close()
		err := c.ClusterInfo(ctx).Err()
		if err != nil && strings.Contains(err.Error(), "cluster support disabled") {
			return fmt.Errorf("SNAPQ_REDIS_URL is redis-cluster:// but %s is not a cluster node (cluster-enabled no): use redis://%s/0", o.Addrs[0], o.Addrs[0])
		}
		return nil // answered as a node, or not now (the client retries)
	case asynq.RedisClientOpt:
		if o.Network == "unix" {
			return nil
		}
		c := redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password, DialTimeout: 2 * time.Second, TLSConfig: o.TLSConfig})
		defer c.Close()
		info, err := c.Info(ctx, "cluster").Result()
		if err == nil && strings.Contains(info, "cluster_enabled:1") {
			return fmt.Errorf("SNAPQ_REDIS_URL is redis:// but %s is a Redis Cluster node: use redis-cluster://host:port,host:port", o.Addr)
		}
	}
	return nil
}

func checkSentinel(ctx context.Context, o asynq.RedisFailoverClientOpt) error {
	var unknown []string
	for _, a := range o.SentinelAddrs {
		s := redis.NewSentinelClient(&redis.Options{Addr: a, Username: o.SentinelUsername, Password: o.SentinelPassword, DialTimeout: 2 * time.Second})
		_, err := s.GetMasterAddrByName(ctx, o.MasterName).Result()
		s.Close()
		if err == nil {
			return nil
		}
		if errors.Is(err, redis.Nil) {
			unknown = append(unknown, a)
		}
	}
	if len(unknown) > 0 && len(unknown) == len(o.SentinelAddrs) {
		return fmt.Errorf("SNAPQ_REDIS_URL: no sentinel (%s) monitors a master named %q: check ?master=", strings.Join(unknown, ", "), o.MasterName)
	}
	return nil
}

// WithPoolSize returns opt with its connection pool size set to n (asynq's
// default is 10 per CPU): for a client that holds one connection per
// blocking read, such as the live event streams' reader.
func WithPoolSize(opt asynq.RedisConnOpt, n int) asynq.RedisConnOpt {
	switch o := opt.(type) {
	case asynq.RedisClientOpt:
		o.PoolSize = n
		return o
	case asynq.RedisFailoverClientOpt:
		o.PoolSize = n
		return o
	case asynq.RedisClusterClientOpt:
		// go-redis sizes each node's pool from its options; asynq's cluster
		// option has no pool size, so the default per node applies.
		return o
	}
	return opt
}
