// Command go-mutex is a lockbench adapter (docs/adapters.md) over etcd's
// concurrency.Mutex, used as its documentation shows: a Session per
// client, NewMutex on the lock's prefix, Lock and Unlock. It is the
// same lock as the built-in strategy "mutex", so running both measures
// what the process and its protocol cost, and it tests the protocol
// with no runtime but Go.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

type request struct {
	Op        string `json:"op"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// out serialises the replies and the watcher's lost events; current is
// the grant a lost event may be about (0: none held).
var (
	outMu   sync.Mutex
	out     = json.NewEncoder(os.Stdout)
	current int
)

// setCurrent names the grant held, 0 for none.
func setCurrent(n int) {
	outMu.Lock()
	current = n
	outMu.Unlock()
}

func send(v map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	out.Encode(v)
}

func fail(outcome string, err error) {
	send(map[string]any{"reply": "error", "outcome": outcome, "error": err.Error()})
}

// errCertain marks a lock failure after which nothing was written.
var errCertain = errors.New("nothing written")

// lock takes the mutex on the client's Session, made anew once the old
// one has ended. A Session whose lease the server no longer knows (revoked
// or expired before its keepalive noticed) fails the put as a whole: then
// once more, on a new Session.
func lock(ctx context.Context, cli *clientv3.Client, sess **concurrency.Session, ttl int, key string) (*concurrency.Mutex, error) {
	for retry := true; ; retry = false {
		if *sess != nil {
			select {
			case <-(*sess).Done():
				*sess = nil
			default:
			}
		}
		if *sess == nil {
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
			if err != nil {
				return nil, fmt.Errorf("new session: %w: %w", errCertain, err)
			}
			*sess = s
		}
		m := concurrency.NewMutex(*sess, key)
		err := m.Lock(ctx)
		switch {
		case err == nil:
			return m, nil
		case retry && (errors.Is(err, rpctypes.ErrLeaseNotFound) || rpctypes.ErrorDesc(err) == rpctypes.ErrLeaseNotFound.Error()):
			(*sess).Orphan()
			*sess = nil
		default:
			return nil, fmt.Errorf("mutex lock: %w", err)
		}
	}
}

func main() {
	ttl, err := strconv.Atoi(os.Getenv("LOCKBENCH_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-mutex: LOCKBENCH_TTL:", err)
		os.Exit(2)
	}
	key := os.Getenv("LOCKBENCH_LOCK")
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(os.Getenv("LOCKBENCH_ENDPOINTS"), ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-mutex: connect:", err)
		os.Exit(2)
	}
	defer cli.Close()
	var (
		sess   *concurrency.Session
		held   *concurrency.Mutex
		grants int
	)
	// dropSession revokes the session's lease after a failure: the key a
	// Lock may have left goes with it. It says whether that is confirmed.
	dropSession := func() bool {
		if sess == nil {
			return true
		}
		s := sess
		sess, held = nil, nil
		setCurrent(0)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.Orphan()
		_, err := cli.Revoke(ctx, s.Lease())
		return err == nil
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "go-mutex: bad request:", err)
			os.Exit(2)
		}
		switch req.Op {
		case "lock":
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if req.TimeoutMS > 0 {
				ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
			}
			m, err := lock(ctx, cli, &sess, ttl, key)
			cancel()
			if err != nil {
				outcome := "unknown"
				if errors.Is(err, errCertain) || errors.Is(err, concurrency.ErrSessionExpired) || dropSession() {
					outcome = "certain"
				}
				fail(outcome, err)
				continue
			}
			held = m
			grants++
			setCurrent(grants)
			cmp := m.IsOwner()
			send(map[string]any{"reply": "granted", "token": cmp.GetCompare().GetCreateRevision(), "key": m.Key(), "lease": strconv.FormatInt(int64(sess.Lease()), 16)})
			// The holder learns of a lost lease when its Session ends, if
			// it still holds this grant then.
			go func(n int, done <-chan struct{}) {
				<-done
				outMu.Lock()
				defer outMu.Unlock()
				if current == n {
					current = 0
					out.Encode(map[string]any{"event": "lost"})
				}
			}(grants, sess.Done())
		case "unlock":
			if held == nil {
				fail("certain", errors.New("unlock: not held"))
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			setCurrent(0)
			err := held.Unlock(ctx)
			cancel()
			held = nil
			if err != nil {
				dropSession()
				fail("unknown", fmt.Errorf("mutex unlock: %w", err))
				continue
			}
			send(map[string]any{"reply": "released"})
		case "close":
			setCurrent(0)
			if sess != nil {
				sess.Close()
			}
			send(map[string]any{"reply": "closed"})
			return
		default:
			fmt.Fprintln(os.Stderr, "go-mutex: unknown op", req.Op)
			os.Exit(2)
		}
	}
}
