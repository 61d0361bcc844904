package bench

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// CPUMeter measures the CPU time a run costs on both sides of the wire:
// this process (getrusage: the clients) and the redis-servers (INFO cpu).
// On a machine whose cores the clients and the servers share, their sum
// over the run's wall time says whether the run was CPU-bound.
type CPUMeter struct {
	nodes  []*redis.Client
	client time.Duration
	server float64 // seconds
}

// StartCPU starts measuring, on the servers at addrs.
func StartCPU(ctx context.Context, addrs []string) (*CPUMeter, error) {
	m := &CPUMeter{}
	for _, addr := range addrs {
		m.nodes = append(m.nodes, redis.NewClient(&redis.Options{Addr: addr}))
	}
	var err error
	m.server, err = m.serverCPU(ctx)
	if err != nil {
		m.close()
		return nil, err
	}
	m.client = processCPU()
	return m, nil
}

// Stop returns the CPU time used since StartCPU by this process and by the
// servers, and stops measuring.
func (m *CPUMeter) Stop(ctx context.Context) (client, server time.Duration, err error) {
	client = processCPU() - m.client
	defer m.close()
	s, err := m.serverCPU(ctx)
	if err != nil {
		return client, 0, err
	}
	return client, time.Duration((s - m.server) * float64(time.Second)), nil
}

func (m *CPUMeter) serverCPU(ctx context.Context) (float64, error) {
	var total float64
	for _, rdb := range m.nodes {
		s, err := readServerStats(ctx, rdb)
		if err != nil {
			return 0, err
		}
		total += s.cpu
	}
	return total, nil
}

func (m *CPUMeter) close() {
	for _, rdb := range m.nodes {
		_ = rdb.Close()
	}
}
