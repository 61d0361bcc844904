package redistest_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

func TestClusterKeys(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redistest.NewCluster(t, 3, 1)
	t.Logf("3+3 cluster ready in %v", time.Since(start))
	logOnFailure(t, c.Servers()...)

	servers := c.Servers()
	primaries := c.Primaries()
	if len(servers) != 6 || !slices.Equal(primaries, servers[:3]) {
		t.Fatalf("%d servers, primaries %v; want 6, the first three", len(servers), primaries)
	}
	for i, p := range primaries {
		if got := c.ReplicasOf(p); !slices.Equal(got, servers[3+i:4+i]) {
			t.Errorf("ReplicasOf(primary %d) = %v, want server %d", i, got, 3+i)
		}
	}
	for i, addr := range c.Addrs() {
		if addr != servers[i].Addr() {
			t.Errorf("Addrs()[%d] = %s, want %s", i, addr, servers[i].Addr())
		}
	}

	// The slots are split evenly: a key on each side of every boundary.
	rdb := c.Client()
	ctx := t.Context()
	boundaries := map[int]int{0: 0, 5460: 0, 5461: 1, 10922: 1, 10923: 2, 16383: 2}
	for slot, owner := range boundaries {
		key := keyInSlot(slot)
		if got := c.PrimaryOfSlot(slot); got != primaries[owner] {
			t.Errorf("PrimaryOfSlot(%d) = %s, want primary %d", slot, got.Addr(), owner)
		}
		if got := c.PrimaryOf(key); got != primaries[owner] {
			t.Errorf("PrimaryOf(%q) (slot %d) = %s, want primary %d", key, slot, got.Addr(), owner)
		}
		if err := rdb.Set(ctx, key, slot, 0).Err(); err != nil {
			t.Fatalf("SET %s through the cluster client: %v", key, err)
		}
		// The key lives on its slot's primary, and nowhere else.
		if got := primaries[owner].Client().Get(ctx, key).Val(); got != strconv.Itoa(slot) {
			t.Errorf("primary %d holds %s = %q, want %d", owner, key, got, slot)
		}
		other := primaries[(owner+1)%3].Client()
		if err := other.Get(ctx, key).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
			t.Errorf("GET %s on another primary: %v, want MOVED", key, err)
		}
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != int64(len(boundaries)) {
		t.Errorf("DBSIZE over the cluster = %d, %v; want %d", n, err, len(boundaries))
	}
}

// Slot agrees with CLUSTER KEYSLOT, hash tags included.
func TestSlot(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithArgs("--cluster-enabled", "yes"))
	rdb := srv.Client()
	keys := []string{
		"", "123456789", "foo", "{user1000}.following", "{user1000}.followers",
		"foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "}{", "{", "a{b", "a}b{c}",
		"\x00\xff", "订单", "lock:{order:42}:fence",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		key := make([]byte, rng.IntN(20))
		for i := range key {
			key[i] = "ab{}\x00\xff"[rng.IntN(6)]
		}
		keys = append(keys, string(key))
	}
	cmds, err := rdb.Pipelined(t.Context(), func(pipe redis.Pipeliner) error {
		for _, key := range keys {
			pipe.ClusterKeySlot(t.Context(), key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	for i, key := range keys {
		if want := cmds[i].(*redis.IntCmd).Val(); redistest.Slot(key) != int(want) {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", key, redistest.Slot(key), want)
		}
	}
	if got := redistest.Slot("123456789"); got != 0x31C3 {
		t.Errorf("Slot(\"123456789\") = %#x, want 0x31c3, the CRC16 check value", got)
	}
}

func TestClusterManualFailover(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 3, 1)
	logOnFailure(t, c.Servers()...)
	const key = "lock:{order:42}"
	primary := c.PrimaryOf(key)
	replica := c.ReplicasOf(primary)[0]
	setAndWait(t, primary.Client(), key, "token", 1)
	rdb := c.Client()

	start := time.Now()
	promoted := c.Failover(primary)
	t.Logf("manual failover in %v", time.Since(start))
	if promoted != replica {
		t.Fatalf("Failover promoted %s, want the replica %s", promoted.Addr(), replica.Addr())
	}
	if got := c.PrimaryOf(key); got != replica {
		t.Errorf("PrimaryOf(%q) = %s after Failover, want %s", key, got.Addr(), replica.Addr())
	}
	if got := c.ReplicasOf(replica); !slices.Equal(got, []*redistest.Server{primary}) {
		t.Errorf("ReplicasOf(new primary) = %v, want the old primary", got)
	}
	if got := getEventually(t, rdb, key); got != "token" {
		t.Errorf("GET %s after the failover = %q, want the value acknowledged by WAIT 1", key, got)
	}
	// The old primary is a replica in sync: writes reach it.
	setAndWait(t, replica.Client(), key, "token2", 1)
	if got := primary.Client().Get(t.Context(), key); got.Err() == nil {
		t.Errorf("GET on the old primary answered %q, want MOVED from a replica", got.Val())
	}

	// And back.
	if got := c.Failover(replica); got != primary {
		t.Errorf("Failover back promoted %s, want %s", got.Addr(), primary.Addr())
	}
	if got := getEventually(t, rdb, key); got != "token2" {
		t.Errorf("GET %s after failing back = %q, want \"token2\"", key, got)
	}
}

func TestClusterKillPrimary(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 3, 1)
	logOnFailure(t, c.Servers()...)
	const key = "fence"
	primary := c.PrimaryOf(key)
	replica := c.ReplicasOf(primary)[0]
	setAndWait(t, primary.Client(), key, "7", 1)
	rdb := c.Client()

	primary.Kill()
	start := time.Now()
	promoted := c.WaitFailover(primary)
	t.Logf("automatic failover in %v", time.Since(start))
	if promoted != replica {
		t.Fatalf("WaitFailover returned %s, want the replica %s", promoted.Addr(), replica.Addr())
	}
	if got := c.PrimaryOf(key); got != replica {
		t.Errorf("PrimaryOf(%q) = %s after the failover, want %s", key, got.Addr(), replica.Addr())
	}
	if got := getEventually(t, rdb, key); got != "7" {
		t.Errorf("GET %s after the failover = %q, want the value acknowledged by WAIT 1", key, got)
	}
	for slot := 0; slot < redistest.Slots; slot += 1000 {
		if err := rdb.Set(t.Context(), keyInSlot(slot), "x", 0).Err(); err != nil {
			t.Errorf("SET in slot %d after the failover: %v", slot, err)
		}
	}

	// The old primary rejoins, empty, as a replica of the one that took over.
	primary.Start()
	redistest.WaitReplicating(t, primary, replica)
	if got := primary.Client().Get(t.Context(), key); got.Err() == nil {
		t.Errorf("GET on the old primary answered %q, want MOVED from a replica", got.Val())
	}
}

func TestNewClusterBadShape(t *testing.T) {
	for _, tt := range []struct {
		primaries, replicas int
		want                string
	}{
		{0, 1, "redistest: NewCluster: 0 primaries, want at least 1"},
		{3, -1, "redistest: NewCluster: -1 replicas per primary, want 0 or more"},
		{40, 1, "redistest: NewCluster: 40 primaries with 1 replicas each is more than 64 nodes"},
	} {
		msg := fatalMessage(t, func(tb testing.TB) { redistest.NewCluster(tb, tt.primaries, tt.replicas) })
		if msg != tt.want {
			t.Errorf("NewCluster(t, %d, %d) failed with %q, want %q", tt.primaries, tt.replicas, msg, tt.want)
		}
	}
}

// keyInSlot returns a key in slot.
func keyInSlot(slot int) string {
	for i := 0; ; i++ {
		if key := fmt.Sprintf("key:%d", i); redistest.Slot(key) == slot {
			return key
		}
	}
}
