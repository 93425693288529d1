package redisbackend

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/chaos"
)

// TestRefusesAnotherProtocol: a fault that reads another system's client
// protocol at the client's relays (ZooKeeper's lose-create-reply) is
// refused before the run, naming the protocol.
func TestRefusesAnotherProtocol(t *testing.T) {
	for _, name := range []string{"lose-create-reply", "lose-create-replies"} {
		f, err := chaos.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Deployer{}).Refuses(f); err == nil || !strings.Contains(err.Error(), "zookeeper's client protocol") {
			t.Errorf("%s: %v, want a refusal naming zookeeper's client protocol", name, err)
		}
	}
}
