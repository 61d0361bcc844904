package bench

import (
	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// dlockRedlockRow is dlock's Redlock over every node of the Env.
func dlockRedlockRow() Row {
	return Row{
		Name: "dlock",
		Note: "`NewRedlock` over one go-redis client per node, defaults",
		New: func(env Env) (Locker, error) {
			nodes := make([]redis.UniversalClient, len(env.Nodes))
			rdbs := make([]*redis.Client, len(env.Nodes))
			for i, addr := range env.Nodes {
				rdbs[i] = newGoRedis(env, addr)
				nodes[i] = rdbs[i]
			}
			client, err := dlock.NewRedlock(nodes)
			if err != nil {
				for _, rdb := range rdbs {
					_ = rdb.Close()
				}
				return nil, err
			}
			return &dlockLocker{client: client, rdbs: rdbs, env: env}, nil
		},
	}
}
