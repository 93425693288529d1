package rediscluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The waits of Start and of the faults, over go-redis: each polls until
// the process answers as wanted or ctx ends.

// client is a one-connection client of a process, for the waits.
func client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1})
}

// waitPing waits until p answers PING, or fails at once when it exited.
func waitPing(ctx context.Context, p *process) error {
	cli := client(Addr(p.port))
	defer cli.Close()
	return until(ctx, p.Name+" answers PING", func() (bool, string) {
		if !p.Running() {
			return false, "exited (see " + p.dir + "/stdout.log)"
		}
		err := cli.Ping(ctx).Err()
		return err == nil, fmt.Sprint(err)
	})
}

// replication is the INFO replication section of a node, as fields.
func replication(ctx context.Context, cli *redis.Client) (map[string]string, error) {
	text, err := cli.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// waitSynced waits until replica p's link to its primary is up and its
// first sync is done.
func waitSynced(ctx context.Context, p *process) error {
	cli := client(Addr(p.port))
	defer cli.Close()
	return until(ctx, p.Name+" synced with its primary", func() (bool, string) {
		info, err := replication(ctx, cli)
		if err != nil {
			return false, err.Error()
		}
		return info["role"] == "slave" && info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0",
			fmt.Sprintf("role %s, link %s", info["role"], info["master_link_status"])
	})
}

// waitSentinelSees waits until Sentinel p names the primary on port and
// knows its replicas.
func waitSentinelSees(ctx context.Context, p *process, port, replicas int) error {
	cli := client(Addr(p.port))
	defer cli.Close()
	return until(ctx, fmt.Sprintf("%s sees the primary and %d replicas", p.Name, replicas), func() (bool, string) {
		addr, err := cli.Do(ctx, "SENTINEL", "get-master-addr-by-name", MasterName).StringSlice()
		if err != nil || len(addr) != 2 || addr[1] != strconv.Itoa(port) {
			return false, fmt.Sprintf("primary %v (%v)", addr, err)
		}
		rs, err := cli.Do(ctx, "SENTINEL", "replicas", MasterName).Slice()
		return err == nil && len(rs) >= replicas, fmt.Sprintf("%d replicas (%v)", len(rs), err)
	})
}

// Primary is the address of the node the Sentinels name primary now (the
// first Sentinel that answers).
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	var last error
	for _, s := range c.sentinels {
		if !s.Running() {
			continue
		}
		cli := client(Addr(s.port))
		addr, err := cli.Do(ctx, "SENTINEL", "get-master-addr-by-name", MasterName).StringSlice()
		cli.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1], nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel names the primary: %v", last)
}

// WaitFailover waits until the Sentinels name a primary other than old
// and that node answers as a primary.
func (c *Cluster) WaitFailover(ctx context.Context, old string) (string, error) {
	var now string
	err := until(ctx, "a failover from "+old, func() (bool, string) {
		addr, err := c.Primary(ctx)
		if err != nil || addr == old {
			return false, fmt.Sprintf("primary %s (%v)", addr, err)
		}
		cli := client(addr)
		defer cli.Close()
		info, err := replication(ctx, cli)
		now = addr
		return err == nil && info["role"] == "master", fmt.Sprintf("%s: role %s (%v)", addr, info["role"], err)
	})
	return now, err
}
