package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dlock-go/dlock/internal/slot"
	"github.com/redis/go-redis/v9"
)

// The checks of what a caller asks for, before anything is sent: the
// arguments of an acquire, and the deployment itself.

// CheckConfig validates the options of an acquire on the name key, read
// into cfg, for this Engine.
func (e *Engine) CheckConfig(key string, cfg Config) error {
	if err := e.checkGuard(key, cfg); err != nil {
		return err
	}
	if cfg.Fair && e.quorum != nil {
		return fmt.Errorf("%w: WithFair needs one Redis deployment; a Redlock quorum has no single queue", ErrInvalidOption)
	}
	return nil
}

// CheckKey validates the name of a lock, on an Engine that is not closed.
func (e *Engine) CheckKey(key string) error {
	if err := e.Usable(); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	return nil
}

// CheckTTL validates a time to live.
func CheckTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %v is under the minimum of 1ms", ErrInvalidTTL, ttl)
	}
	return nil
}

// checkGuard validates WithGuard's key against the lock's.
func (e *Engine) checkGuard(key string, cfg Config) error {
	switch {
	case cfg.Guard == "":
		return nil
	case e.quorum != nil:
		return fmt.Errorf("%w: WithGuard needs one Redis deployment; a Redlock quorum cannot read a key and take a lock in one step", ErrInvalidOption)
	case slot.Of(cfg.Guard) != slot.Of(key):
		return fmt.Errorf("%w: guard key %s is in Cluster slot %d, the lock %s in %d: give both the same hash tag",
			ErrInvalidKey, QuoteKey(cfg.Guard), slot.Of(cfg.Guard), QuoteKey(key), slot.Of(key))
	}
	return nil
}

// CheckDeployment asks each server behind the Engine for settings that
// silently weaken locks, logs a warning for each, and returns them; see
// dlock.Client.CheckDeployment.
func (e *Engine) CheckDeployment(ctx context.Context) ([]string, error) {
	if err := e.Usable(); err != nil {
		return nil, err
	}
	var warnings []string
	for _, n := range e.nodes {
		shards, err := bounded(ctx, e, n, "check", "", n.shards, nil)
		if err != nil {
			return warnings, n.wrap("check", "", err)
		}
		for _, shard := range shards {
			found, err := bounded(ctx, e, n, "check", "", func(ctx context.Context) ([]string, error) {
				return checkServer(ctx, shard)
			}, nil)
			if err != nil {
				return warnings, n.wrap("check", "", err)
			}
			for _, w := range found {
				e.logger.Warn("dlock: " + w)
			}
			warnings = append(warnings, found...)
		}
	}
	return warnings, nil
}

// checkServer returns the warnings about one server's configuration.
func checkServer(ctx context.Context, rdb redis.Cmdable) ([]string, error) {
	config, err := rdb.ConfigGet(ctx, "*").Result()
	var reply redis.Error
	if errors.As(err, &reply) {
		return nil, nil // CONFIG refused (ACL, renamed command): nothing known, nothing said
	}
	if err != nil {
		return nil, err
	}
	where := serverName(rdb)
	var warnings []string
	policy, limit := config["maxmemory-policy"], config["maxmemory"]
	if policy != "" && policy != "noeviction" && limit != "" && limit != "0" {
		warnings = append(warnings, fmt.Sprintf(
			"%s evicts keys when full (maxmemory %s, maxmemory-policy %s): a held lock can vanish; use noeviction",
			where, limit, policy))
	}
	switch {
	case config["appendonly"] == "no":
		warnings = append(warnings, fmt.Sprintf(
			"%s has no append-only file (appendonly no): a restart loses every lock; "+
				"turn it on with appendfsync always, or restart it only after your longest ttl has passed",
			where))
	case config["appendonly"] == "yes" && config["appendfsync"] != "always":
		warnings = append(warnings, fmt.Sprintf(
			"%s syncs its append-only file %s, not always: a crash can lose the locks of the last second",
			where, strconv.Quote(config["appendfsync"])))
	}
	return warnings, nil
}

// serverName is the address of one server, for messages.
func serverName(rdb redis.Cmdable) string {
	if c, ok := rdb.(*redis.Client); ok {
		return c.Options().Addr
	}
	return "redis"
}
