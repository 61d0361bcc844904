package redistest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// adminTimeout bounds one command the package sends to set up or watch
	// a deployment, so that a paused or dead node fails the command quickly
	// instead of hanging the wait that sent it.
	adminTimeout = 500 * time.Millisecond
	// watchInterval is the pause between two looks at a deployment.
	watchInterval = 20 * time.Millisecond
	// lookTimeout bounds one look at a deployment, which may send a few
	// commands to each of its servers.
	lookTimeout = 5 * time.Second
)

// adminClient returns a client for the package's own commands to addr: no
// retries and short timeouts, so that a look at a node that is down fails
// at once and the next look tries again. The caller closes it.
func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  adminTimeout,
		ReadTimeout:  adminTimeout,
		WriteTimeout: adminTimeout,
		MaxRetries:   -1,
		// One dial per attempt: the next look retries anyway.
		DialerRetries: 1,
		PoolSize:      2,
	})
}

// admins holds one admin client per address, made when first needed and
// closed together. It is used from one goroutine.
type admins map[string]*redis.Client

// get returns the admin client for addr.
func (a admins) get(addr string) *redis.Client {
	c, ok := a[addr]
	if !ok {
		c = adminClient(addr)
		a[addr] = c
	}
	return c
}

// close closes every client.
func (a admins) close() {
	for addr, c := range a {
		_ = c.Close()
		delete(a, addr)
	}
}

// waitFor calls check every watchInterval until it returns nil, and returns
// an error that says what it waited for and what check last reported if
// that takes longer than timeout.
func waitFor(timeout time.Duration, what string, check func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), lookTimeout)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: %s: not done within %v: %w", what, timeout, err)
		}
		time.Sleep(watchInterval)
	}
}

// infoFields parses the reply to INFO into its name:value fields.
func infoFields(info string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.Lines(info) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && !strings.HasPrefix(name, "#") {
			fields[name] = value
		}
	}
	return fields
}

// checkReplicating reports an error unless replica replicates primary with
// its link up and no sync in progress, as both of them see it: a write that
// the primary acknowledges from then on reaches the replica. Asking the
// primary too matters just after it restarted, when the replica may not yet
// have noticed that its link is gone.
func checkReplicating(ctx context.Context, replica, primary *redis.Client) error {
	r, err := replicationInfo(ctx, replica)
	if err != nil {
		return err
	}
	p, err := replicationInfo(ctx, primary)
	if err != nil {
		return err
	}
	replicaAddr, primaryAddr := replica.Options().Addr, primary.Options().Addr
	got := net.JoinHostPort(r["master_host"], r["master_port"])
	switch {
	case r["role"] != "slave":
		return fmt.Errorf("%s has role %s, want a replica of %s", replicaAddr, r["role"], primaryAddr)
	case got != primaryAddr:
		return fmt.Errorf("%s replicates %s, want %s", replicaAddr, got, primaryAddr)
	case r["master_link_status"] != "up" || r["master_sync_in_progress"] != "0":
		return fmt.Errorf("%s: link to %s is %s (sync in progress: %s)",
			replicaAddr, primaryAddr, r["master_link_status"], r["master_sync_in_progress"])
	case r["master_replid"] != p["master_replid"]:
		return fmt.Errorf("%s follows replication id %s, but %s has %s",
			replicaAddr, r["master_replid"], primaryAddr, p["master_replid"])
	case !listsOnlineReplica(p, replica.Options().Addr):
		return fmt.Errorf("%s does not list %s as an online replica", primaryAddr, replicaAddr)
	}
	return nil
}

// replicationInfo returns the fields of INFO replication.
func replicationInfo(ctx context.Context, c *redis.Client) (map[string]string, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO replication on %s: %w", c.Options().Addr, err)
	}
	return infoFields(info), nil
}

// listsOnlineReplica reports whether the INFO replication fields of a
// primary list the replica at addr as online, in a field such as
// slave0:ip=127.0.0.1,port=6380,state=online,offset=42,lag=0.
func listsOnlineReplica(primary map[string]string, addr string) bool {
	for name, value := range primary {
		if !strings.HasPrefix(name, "slave") {
			continue
		}
		attrs := make(map[string]string)
		for attr := range strings.SplitSeq(value, ",") {
			k, v, _ := strings.Cut(attr, "=")
			attrs[k] = v
		}
		if net.JoinHostPort(attrs["ip"], attrs["port"]) == addr && attrs["state"] == "online" {
			return true
		}
	}
	return false
}
