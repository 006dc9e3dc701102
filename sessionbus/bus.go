// Package sessionbus carries interactive sessions' traffic on Redis: the list of sessions
// waiting for a worker to open them, one command list per session (read only by the
// worker holding its tab, so commands run in the order they were sent), a reply list per
// command, and each session-holding worker's liveness key. It is the one place that knows
// these keys; package session uses it through session.Bus.
package sessionbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/session"
)

// Bus implements session.Bus on rdb.
type Bus struct {
	Redis redis.UniversalClient
}

var _ session.Bus = (*Bus)(nil)

// ReplyTTL keeps a reply nobody waits for any more from staying behind.
const ReplyTTL = 5 * time.Minute

// CommandTTL drops the command list of a session whose worker went away.
const CommandTTL = time.Hour

const openKey = "snapq:sessions:open"

func cmdKey(id string) string          { return "snapq:{session:" + id + "}:cmd" }
func replyKey(id, cmdID string) string { return "snapq:{session:" + id + "}:reply:" + cmdID }
func workerKey(w string) string        { return "snapq:sessions:worker:" + w }

// PushOpen asks a worker to open session id.
func (b *Bus) PushOpen(ctx context.Context, id string) error {
	return b.Redis.LPush(ctx, openKey, id).Err()
}

// PopOpen takes a session to open, waiting up to wait; "" when none came.
func (b *Bus) PopOpen(ctx context.Context, wait time.Duration) (string, error) {
	v, err := b.Redis.BRPop(ctx, wait, openKey).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return v[1], nil
}

// PushCommand appends c to session id's commands.
func (b *Bus) PushCommand(ctx context.Context, id string, c session.Command) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = b.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, cmdKey(id), raw)
		p.Expire(ctx, cmdKey(id), CommandTTL)
		return nil
	})
	return err
}

// PopCommand takes session id's next command, waiting up to wait; nil when none came.
func (b *Bus) PopCommand(ctx context.Context, id string, wait time.Duration) (*session.Command, error) {
	v, err := b.Redis.BRPop(ctx, wait, cmdKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c session.Command
	if err := json.Unmarshal([]byte(v[1]), &c); err != nil {
		return nil, fmt.Errorf("decode a session command: %w", err)
	}
	return &c, nil
}

// PushReply answers command cmdID of session id.
func (b *Bus) PushReply(ctx context.Context, id, cmdID string, r session.Reply) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = b.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, replyKey(id, cmdID), raw)
		p.Expire(ctx, replyKey(id, cmdID), ReplyTTL)
		return nil
	})
	return err
}

// WaitReply waits up to wait for the reply to cmdID; nil when none came.
func (b *Bus) WaitReply(ctx context.Context, id, cmdID string, wait time.Duration) (*session.Reply, error) {
	v, err := b.Redis.BRPop(ctx, wait, replyKey(id, cmdID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r session.Reply
	if err := json.Unmarshal([]byte(v[1]), &r); err != nil {
		return nil, fmt.Errorf("decode a session reply: %w", err)
	}
	return &r, nil
}

// Beat marks worker alive for ttl.
func (b *Bus) Beat(ctx context.Context, worker string, ttl time.Duration) error {
	return b.Redis.Set(ctx, workerKey(worker), "1", ttl).Err()
}

// Alive reports whether worker's liveness key is there.
func (b *Bus) Alive(ctx context.Context, worker string) (bool, error) {
	if worker == "" {
		return false, nil
	}
	n, err := b.Redis.Exists(ctx, workerKey(worker)).Result()
	return n == 1, err
}

// Drop removes session id's pending commands.
func (b *Bus) Drop(ctx context.Context, id string) error {
	return b.Redis.Del(ctx, cmdKey(id)).Err()
}
