# lockbench — see README.md. Every target works on a fresh machine with Go.
GO      ?= go
BIN     := bin/lockbench
OUT     := results/runs

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# The shipped adapters' Debian packages (adapters/install-deps.sh checks
# and installs them, then node-etcd3's npm package and bin/etcdctl).
ADAPTER_DEPS := python3-etcd3 nodejs npm etcd-client etcd-server

.PHONY: adapter-deps redis-deps zk-deps repro-go-zookeeper-unlock repro-zookeeper-1262 build run run-one test test-short verify mutants bench regress regress-baseline baseline repro-etcd-20716 repro-etcd-11456 repro-election-split-brain repro-etcd-21128 repro-etcd-19597 repro-etcd-21126 repro-etcd-15247 repro-etcd-16221 measure-etcd-fastkeepalive measure-etcd-15247-freeze measure-etcd-20273 repro-etcd-18082 measure-etcd-19597 vet fmt clean

# The binary names its commit (lockbench version, every run's
# lockbench_version) also where GOFLAGS turns VCS stamping off.
COMMIT = $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)

build:
	$(GO) build -ldflags "-X github.com/lockbench/lockbench/rundir.commit=$(COMMIT)" -o $(BIN) ./cmd/lockbench

# What the shipped adapters need (docs/adapters.md) on a fresh Debian or
# Ubuntu machine: the Debian packages above (as root, no service started),
# the npm package etcd3 into adapters/node-etcd3/node_modules (npm ci), and
# bin/etcdctl built from go.mod's etcd release. Idempotent; says what it
# found or did.
adapter-deps:
	@GO=$(GO) sh adapters/install-deps.sh

# Redis for package rediscluster's tests (Redis locks beside etcd's, issue
# #31): the Debian packages, as root; no service is started by lockbench.
# clock-jump compiles lockbench's clock for the nodes with cc (gcc; the
# race detector needs it too): libfaketime cannot start Debian's
# redis-server (docs/redis.md, "A clock that jumps").
redis-deps:
	@command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null && command -v cc >/dev/null && echo "redis-server, redis-sentinel and cc: installed" || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel gcc >/dev/null && echo "installed redis-server, redis-sentinel and gcc")

# ZooKeeper for package zkcluster's tests (an ensemble of JVMs lockbench
# starts itself) and the ZooKeeper locks' clients: the Debian packages, as
# root (zookeeper brings OpenJDK; libcurator-recipes-java and python3-kazoo
# are Curator's and kazoo's lock recipes); no service is started by lockbench.
zk-deps:
	@[ -f /usr/share/java/zookeeper.jar ] && [ -f /usr/share/java/curator-recipes.jar ] && /usr/bin/python3 -c 'import kazoo' 2>/dev/null && echo "zookeeper, curator and kazoo: installed" || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper libcurator-recipes-java python3-kazoo >/dev/null && echo "installed zookeeper, libcurator-recipes-java and python3-kazoo")

# The main job: the default suite (every strategy × every built-in scenario,
# seed 1) on embedded 3-member etcd clusters, SUITE_PARALLEL cells at a
# time (each on its own cluster; suite.json as a serial run's). Exit 1 if
# any verdict differs from its scenario's expectation. Measured on the
# 2-core machine (144 cells): serial 9m44s; --parallel 2, while other
# work kept the load average at 3-19, 6m19s, 5m9s and 5m54s (3, 2 and 2
# not as expected, all expected races that did not happen, as serial runs
# show under the same load; 17, 0 and 15 cells saturated); on the quiet
# machine (load < 1), 4m58s twice, 0 cells saturated, 0 not as expected
# once waiter-revoke and lease-expiry-fenced were fixed; 152 cells (with
# many-locks), 5m9s, 0 not as expected, 0 saturated. docs/scale.md.
SUITE_PARALLEL ?= 2
run: build
	./$(BIN) suite --parallel $(SUITE_PARALLEL) --out $(OUT)

# One run: the mutex strategy under contention, 10 s.
run-one: build
	./$(BIN) run --lock mutex --scenario contention --out $(OUT)

# vet, then every test with the race detector (cluster tests included),
# and the tests of docs/recipes (a module of its own: the Kubernetes API
# types its test decodes the manifest with stay out of lockbench's build).
# Packages run two at a time (go test's default on 2 cores): 13m59s and
# 772 CPU-seconds on 2026-12-04 with every runtime installed. More at a
# time saturates two cores, and the tests that time a cluster fail
# (docs/development.md says which and why 7 minutes is out of reach).
test: vet
	$(GO) test -race -count=1 -timeout 20m ./...
	cd docs/recipes && $(GO) vet . && $(GO) test -count=1 .

# Pure-logic tests only: no etcd cluster is started.
test-short:
	$(GO) test -short -count=1 ./...
	cd docs/recipes && $(GO) test -count=1 .

# The mutant catalogue (package etcd/mutants: 17 buggy strategies, 2 correct
# controls) through locktest and the default suite at seed 1: every mutant
# must be caught, no control flagged. Took 21m22s on 2 cores at bf8b2bc
# (2026-12-04: 85 s of locktest, then 304 suite cells one at a time);
# 33m22s with 17 mutants and 22 built-ins (2026-12-05: 83 s, then 418).
mutants:
	LOCKBENCH_MUTANTS=1 $(GO) test -count=1 -timeout 60m -v -run 'TestLocktestCatchesEveryMutant|TestDefaultSuiteCatchesEveryMutant' ./etcd/mutants

# Hot paths that need no cluster: recorder, JSONL codec, checker.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./history ./check

# A/B regression check on this machine: build REV's lockbench in a
# temporary git worktree, run its suite and this tree's interleaved
# (REGRESS_REPS repetitions a side, alternating which goes first), and
# compare (Mann–Whitney + 20% minimum effect + Holm; asserted checks
# deterministic, racy checks by failure rate). REV defaults to origin/main
# when it exists, else HEAD~1; give REV= for another. A reduced matrix
# (2 locks × 3 scenarios, 10 repetitions: 18 timing tests; 6 against 6 is
# the fewest that can pass Holm's first step at α 0.05/18, 10 what caught
# an injected 2 ms delay on a loaded machine, docs/reports.md) took 356 s
# on 2 cores, within 12 minutes.
REV ?= $(shell git rev-parse --verify -q origin/main >/dev/null && echo origin/main || echo HEAD~1)
REGRESS_REPS ?= 10
REGRESS_MATRIX ?= --locks queue,txn --scenarios contention,herd,holder-crash --quick-duration 1s
regress: build
	./$(BIN) regress --base $(REV) --reps $(REGRESS_REPS) $(REGRESS_MATRIX) --out $(OUT)

# Offline: the default suite against the committed results/baseline.json
# (figures from another machine are compared floor-normalized; a
# single-run baseline gates verdicts only, timings have no power).
regress-baseline: build
	./$(BIN) suite --parallel $(SUITE_PARALLEL) --quiet --out $(OUT); \
	./$(BIN) compare results/baseline.json $$(ls -td $(OUT)/suite-* | head -1)/suite.json

# Refresh the baseline from a new default suite run (commit the result).
baseline: build
	./$(BIN) suite --parallel $(SUITE_PARALLEL) --quiet --out $(OUT); cp $$(ls -td $(OUT)/suite-* | head -1)/suite.json results/baseline.json

# Known etcd bug (issues #18879, #20716; in v3.7.3): a burst of cancelled
# waiting Lock calls deadlocks the server-side lock service's in-process
# watch stream; no waiter is woken again and the member cannot stop.
# Reproduced when the rpc run fails liveness (exit 1) or its member does not
# stop (exit 3); the same scenario passes with every client-side strategy.
# One member: every waiter's call then goes through the stuck service.
repro-etcd-20716: build
	./$(BIN) run --lock rpc --scenario examples/cancel-storm.yaml --members 1 --out $(OUT); rc=$$?; \
	if [ $$rc = 1 ] || [ $$rc = 3 ]; then echo "Successful reproduction (exit $$rc)"; \
	else echo "Failed to reproduce (exit $$rc)"; exit 1; fi

# etcd #11456 (fixed in 3.5.0) through a scenario: etcd 3.4's lock service
# grants the lock to a waiter whose lease (so whose key) lapsed while it
# waited, and to the waiter behind it too: two holders, which the checker
# catches (exclusion). examples/etcd-11456.yaml delays one waiter's traffic
# past its TTL; rpc-trusting is the rpc strategy without its re-read of the
# granted key (it trusts the answer, as a caller of jetcd's lock client does). Run on Debian's
# etcd-server 3.4.23 (/usr/bin/etcd, installed with apt-get when absent
# and this runs as root), where it must fail exclusion (exit 1), and on
# lockbench's own 3.7.3 (--etcd-bin self), where it must pass (exit 0).
# The lock service alone, without the runner: go test -run TestEtcd11456
# -v ./etcd/cluster. docs/processes.md.
REPRO_11456 = ./$(BIN) run --lock rpc-trusting --scenario examples/etcd-11456.yaml --out $(OUT)
repro-etcd-11456: build
	@[ -x /usr/bin/etcd ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; } || { echo "needs /usr/bin/etcd 3.4: apt-get install etcd-server"; exit 1; }
	@echo "== $$(/usr/bin/etcd --version | head -1) (--etcd-bin /usr/bin/etcd): must fail exclusion"; \
	old=$$($(REPRO_11456) --etcd-bin /usr/bin/etcd 2>&1); rc=$$?; echo "$$old" | grep -E '^(violation|run folder)|│ rpc-trusting'; echo "exit $$rc"; \
	echo "== the built-in etcd (--etcd-bin self): must pass"; \
	new=$$($(REPRO_11456) --etcd-bin self 2>&1); rc2=$$?; echo "$$new" | grep -E '^(violation|run folder)|│ rpc-trusting'; echo "exit $$rc2"; \
	if [ $$rc = 1 ] && echo "$$old" | grep -q 'held by two processes at once' && [ $$rc2 = 0 ]; then \
		echo "Successful reproduction of etcd #11456: etcd 3.4's lock service granted a waiter whose key had lapsed, while the next waiter held; the built-in etcd refused that grant"; \
	else echo "Failed to reproduce (exit $$rc on 3.4, $$rc2 on self)"; exit 1; fi

# etcd's concurrency.Election.Campaign (v3.7.3, client/v3/concurrency/
# election.go) returns once the older campaign keys are gone without
# re-reading its own, as Mutex.Lock does: a campaigner whose lease is
# revoked while it waits is told it leads, with no key, beside the next
# campaigner. waiter-revoke revokes a waiting client's lease just before
# the holder resigns. Reproduced when, in every seed, election's history
# shows two holders at once (exclusion) and queue passes the same seed.
REPRO_SEEDS ?= 1 2 3
repro-election-split-brain: build
	@ok=1; for s in $(REPRO_SEEDS); do \
		el=$$(./$(BIN) run --lock election --scenario waiter-revoke --seed $$s --out $(OUT) 2>&1); erc=$$?; \
		./$(BIN) run --lock queue --scenario waiter-revoke --seed $$s --out $(OUT) >/dev/null 2>&1; qrc=$$?; \
		two=$$(echo "$$el" | grep -c 'held by two processes at once'); \
		echo "seed $$s: election exit $$erc, $$two two-leader violation(s); queue exit $$qrc"; \
		echo "$$el" | grep -m1 'held by two processes at once'; \
		if [ $$erc != 1 ] || [ $$two = 0 ] || [ $$qrc != 0 ]; then ok=0; fi; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction: Election.Campaign made a campaigner whose key was gone leader beside the next one (two leaders at once) in every seed; queue, which re-reads its key, passed the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# go-zookeeper v1.0.4's zk.Lock (the go-zookeeper strategy, as its docs
# show it): a holder cut off past its session timeout (client-isolation)
# is never told, and once its session expired its Unlock fails (zk: node
# does not exist) and leaves zk.Lock's node path set, so every later Lock
# of that client fails at once with "trying to acquire a lock twice".
# Reproduced when, in every seed, go-zookeeper's history has that failed
# release and then that error, while zk-queue (which deletes what it can
# and forgets the grant) passes the same seed. Needs make zk-deps.
repro-go-zookeeper-unlock: build
	@ok=1; for s in $(REPRO_SEEDS); do \
		dir=$$(./$(BIN) run --lock go-zookeeper --scenario client-isolation --seed $$s --out $(OUT) 2>&1 | sed -n 's/^run folder: //p'); \
		gone=$$(grep -c '"f":"release".*node does not exist' "$$dir/history.jsonl"); \
		twice=$$(grep -c 'trying to acquire a lock twice' "$$dir/history.jsonl"); \
		./$(BIN) run --lock zk-queue --scenario client-isolation --seed $$s --out $(OUT) >/dev/null 2>&1; qrc=$$?; \
		echo "seed $$s: go-zookeeper $$gone failed release(s), then $$twice Lock(s) refused as a second acquire; zk-queue exit $$qrc"; \
		if [ "$$gone" = 0 ] || [ "$$twice" = 0 ] || [ $$qrc != 0 ]; then ok=0; fi; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction: go-zookeeper's zk.Lock, after its session expired under its holder, failed the Unlock and refused every later Lock of that client in every seed; zk-queue passed the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# ZOOKEEPER-1262: a create whose reply is lost with its connection after
# the ensemble applied it, made again by a lock that does not protect its
# create, leaves an ephemeral sequential node nobody deletes; the queue
# stalls behind it for as long as its session lives.
# examples/zookeeper-1262.yaml loses the reply to a waiter's create
# (lose-create-reply at the client's relays). Reproduced when, in every
# seed, zk-queue-unprotected's history has the fault ended ok (a reply was
# lost; an undo that lost none ends info) and its liveness failed with the
# lock free for at least 5 s while a client waited, and zk-queue (a
# protected create) passed the same seed with liveness pass. Needs make
# zk-deps.
REPRO_1262 = ./$(BIN) run --scenario examples/zookeeper-1262.yaml --out $(OUT)
repro-zookeeper-1262: build
	@ok=1; field() { sed -n "s/.*\"$$2\": *\([0-9]*\).*/\1/p" "$$1/summary.json" | head -1; }; \
	live() { tr -d ' \n' < "$$1/summary.json" | grep -o '"liveness":{"verdict":"[a-z]*"' | sed 's/.*"verdict":"//; s/"//'; }; \
	for s in $(REPRO_SEEDS); do \
		dir=$$($(REPRO_1262) --lock zk-queue-unprotected --seed $$s 2>&1 | sed -n 's/^run folder: //p'); \
		struck=$$(grep -c '"type":"ok","f":"fault","value":{"fault":"lose-create-reply"' "$$dir/history.jsonl"); \
		bug=$$(live "$$dir"); stall=$$(field "$$dir" max_stall_ms); \
		qout=$$($(REPRO_1262) --lock zk-queue --seed $$s 2>&1); qrc=$$?; qdir=$$(echo "$$qout" | sed -n 's/^run folder: //p'); q=$$(live "$$qdir"); \
		echo "seed $$s: zk-queue-unprotected: reply lost $$struck, liveness $$bug, longest stall $${stall} ms; zk-queue: exit $$qrc, liveness $$q"; \
		if [ "$$struck" != 1 ] || [ "$$bug" != fail ] || [ -z "$$stall" ] || [ $$stall -lt 5000 ] || [ $$qrc != 0 ] || [ "$$q" != pass ]; then ok=0; fi; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction of ZOOKEEPER-1262: the reply to a waiter's create was lost with its connection, zk-queue-unprotected made the create again and the lock stood free behind the orphan node while the others waited, in every seed; zk-queue (a protected create) passed the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# etcd #21128: concurrency.Election.Campaign (v3.7.3) deletes its key on a
# cancelled context only; when its watch is compacted it returns the error
# and leaves the key under the Session's lease. election-exits is a program
# that exits on the error (log.Fatal, as etcd's examples do): once its key
# is the oldest, every other candidate waits until its lease runs out.
# examples/etcd-21128.yaml compacts every 20 ms for 2 s under contention
# (TTL 3 s). Reproduced when, in every seed, election-exits's history has a
# Campaign failed by compaction and the lock stood free while others waited
# for at least a third of the TTL (max_stall_ms ≥ 1000), while queue and
# election (which revokes its lease on the error) passed the same seed with
# every stall under that.
REPRO_21128 = ./$(BIN) run --scenario examples/etcd-21128.yaml --out $(OUT)
repro-etcd-21128: build
	@ok=1; stall() { sed -n 's/.*"max_stall_ms": *\([0-9]*\).*/\1/p' "$$1/summary.json"; }; \
	for s in $(REPRO_SEEDS); do \
		out=$$($(REPRO_21128) --lock election-exits --seed $$s 2>&1); dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); \
		left=$$(grep -c 'compacted (the program exits; its key is left to its lease)' "$$dir/history.jsonl"); bug=$$(stall "$$dir"); \
		line="seed $$s: election-exits: $$left Campaign(s) failed by compaction, longest stall $${bug} ms"; \
		for l in queue election; do \
			out=$$($(REPRO_21128) --lock $$l --seed $$s 2>&1); rc=$$?; dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); st=$$(stall "$$dir"); \
			line="$$line; $$l: exit $$rc, longest stall $${st} ms"; \
			if [ $$rc != 0 ] || [ -z "$$st" ] || [ $$st -ge 1000 ]; then ok=0; fi; \
		done; echo "$$line"; \
		if [ $$left = 0 ] || [ -z "$$bug" ] || [ $$bug -lt 1000 ]; then ok=0; fi; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction of etcd #21128: a Campaign failed by compaction left its key, and the lock stood free while the others waited for the dead program's lease (TTL 3 s); queue and election passed the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# etcd #20273: a new leader gives every lease a full TTL again (plus an
# election timeout) unless lease checkpointing is on, so a crashed holder's
# lock outlives its TTL when the leader changes meanwhile. A measurement:
# examples/etcd-20273.yaml (TTL 3 s: the holder crashes at 1 s, the
# leadership is moved at 2 s) against its control without the leader
# change, with queue, printing lease_overrun (the holder's crash to the
# next grant, minus the TTL) and the longest stall; then the lease alone on
# a bare cluster, with and without etcd's LeaseCheckpoint feature gate.
measure-etcd-20273: build
	@for s in $(REPRO_SEEDS); do for sc in etcd-20273 etcd-20273-control; do \
		out=$$(./$(BIN) run --lock queue --scenario examples/$$sc.yaml --seed $$s --out $(OUT) 2>&1); rc=$$?; \
		dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); \
		over=$$(echo "$$out" | grep 'lease_overrun' | awk -F'│' '{gsub(/ /, "", $$8); print $$8}'); \
		stall=$$(sed -n 's/.*"max_stall_ms": *\([0-9]*\).*/\1/p' "$$dir/summary.json"); \
		echo "seed $$s $$sc: exit $$rc, crash → next grant minus the TTL (lease_overrun) $$over ms, longest stall $$stall ms"; \
	done; done
	@out=$$($(GO) test -count=1 -run TestEtcd20273 -v ./etcd/cluster 2>&1); rc=$$?; \
	echo "$$out" | grep -E 'lease checkpoint|^(ok|FAIL|--- )'; exit $$rc

# etcd #18082 (present in v3.7.3): concurrency.Mutex.Lock, its wait
# cancelled, deletes its key with the client's context, so while the
# members are unreachable it returns only when they come back.
# examples/etcd-18082.yaml cuts the oldest waiter off for 7 s and cancels
# every waiting Lock 300 ms in; without a per-request deadline
# (--rpc-timeout 0, as etcd's client ships) mutex must fail the cancel
# check (a cancelled Lock returned later than its bound, 5 s) in every
# seed, and queue must pass the same seeds. election (Campaign's Resign)
# has the same fault: docs/checker.md.
REPRO_18082 = ./$(BIN) run --scenario examples/etcd-18082.yaml --rpc-timeout 0 --out $(OUT)
repro-etcd-18082: build
	@ok=1; took() { sed -n 's/.*"cancel_return_ms_max": *\([0-9]*\).*/\1/p' "$$1/summary.json"; }; \
	for s in $(REPRO_SEEDS); do \
		out=$$($(REPRO_18082) --lock mutex --seed $$s 2>&1); dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); bug=$$(took "$$dir"); \
		late=$$(echo "$$out" | grep -c 'a cancelled call may take to return'); \
		out=$$($(REPRO_18082) --lock queue --seed $$s 2>&1); rc=$$?; dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); ctl=$$(took "$$dir"); \
		echo "seed $$s: mutex: $$late cancelled Lock(s) past the bound, the slowest returned $${bug} ms after its cancel; queue: exit $$rc, slowest $${ctl} ms (bound 5000 ms)"; \
		if [ "$$late" = 0 ] || [ -z "$$bug" ] || [ $$bug -le 5000 ] || [ $$rc != 0 ] || [ -z "$$ctl" ] || [ $$ctl -gt 5000 ]; then ok=0; fi; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction of etcd #18082: etcd's Mutex.Lock, cancelled while cut off from every member, returned only when the network came back; queue returned within the bound on the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# etcd #19597 as a verdict: in examples/etcd-19597.yaml, etcd's Mutex keeps
# a waiter whose lease was revoked waiting for its predecessor (the rest of
# a 3 s hold, ~2.7 s), while queue, told by its keeper, stops within TTL/4.
# "Successful reproduction" only when, on every seed, mutex waited over
# 1.5 s after the loss and queue under 1 s (both figures present).
repro-etcd-19597: build
	@ok=1; waited() { sed -n 's/.*"waiting_after_lease_loss_ms_max": *\([0-9]*\).*/\1/p' "$$1/summary.json"; }; \
	for s in $(REPRO_SEEDS); do \
		dir=$$(./$(BIN) run --lock mutex --scenario examples/etcd-19597.yaml --seed $$s --out $(OUT) 2>&1 | sed -n 's/^run folder: //p'); bug=$$(waited "$$dir"); \
		dir=$$(./$(BIN) run --lock queue --scenario examples/etcd-19597.yaml --seed $$s --out $(OUT) 2>&1 | sed -n 's/^run folder: //p'); ctl=$$(waited "$$dir"); \
		echo "seed $$s: waiting after lease loss: mutex $${bug:-none} ms, queue $${ctl:-none} ms"; \
		if [ -z "$$bug" ] || [ $$bug -le 1500 ] || [ -z "$$ctl" ] || [ $$ctl -ge 1000 ]; then ok=0; fi; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction of etcd #19597: etcd's Mutex kept a waiter whose lease was gone waiting for its predecessor; queue stopped within its keeper's refresh on the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# etcd PR #21126 (open; v3.7.3's client): on a leader loss the client
# closes every KeepAlive channel whose context requires a leader
# (WithRequireLeader) but goes on renewing the lease while that context
# lives. examples/etcd-21126.yaml cuts two of three members from their
# peers for 3 s while client 0 holds (TTL 6 s, 20 s run).
# keepalive-requireleader (KeepAlive over the program's require-leader
# context) is told its lease is lost and drops the lock, and its key
# stays: "Successful reproduction" only when, in every seed, it recorded
# the lost lease, failed liveness and the lock stood free while others
# waited for more than 2 × TTL (12 s; a lease nobody renews goes a TTL
# and an election after a leader is back), while mutex-requireleader (a
# Session, which ends its own context) stood free under 2 × TTL and
# mutex passed. docs/leases.md.
REPRO_21126 = ./$(BIN) run --scenario examples/etcd-21126.yaml --out $(OUT)
repro-etcd-21126: build
	@ok=1; stall() { sed -n 's/.*"max_stall_ms": *\([0-9]*\).*/\1/p' "$$1/summary.json"; }; \
	for s in $(REPRO_SEEDS); do \
		out=$$($(REPRO_21126) --lock keepalive-requireleader --seed $$s 2>&1); rc=$$?; dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); \
		lost=$$(grep -c '"f":"lease-lost"' "$$dir/history.jsonl"); free=$$(echo "$$out" | grep -c '^violation: lock "lock" was free for'); bug=$$(stall "$$dir"); \
		line="seed $$s: keepalive-requireleader: exit $$rc, $$lost lease(s) lost, $$free liveness violation(s), longest stall $${bug} ms"; \
		if [ $$rc != 1 ] || [ $$lost = 0 ] || [ $$free = 0 ] || [ -z "$$bug" ] || [ $$bug -le 12000 ]; then ok=0; fi; \
		for l in mutex-requireleader mutex; do \
			out=$$($(REPRO_21126) --lock $$l --seed $$s 2>&1); rc=$$?; dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); st=$$(stall "$$dir"); \
			line="$$line; $$l: exit $$rc, longest stall $${st} ms"; \
			if [ -z "$$st" ] || [ $$st -ge 12000 ] || { [ $$l = mutex ] && [ $$rc != 0 ]; }; then ok=0; fi; \
		done; echo "$$line"; \
	done; \
	if [ $$ok = 1 ]; then echo "Successful reproduction of etcd PR #21126: a client told by a closed require-leader KeepAlive channel that its lease was lost went on renewing it, so the dropped lock's key stayed and the waiters starved; mutex-requireleader's Session (which ends its context) and mutex moved on the same seeds"; \
	else echo "Failed to reproduce"; exit 1; fi

# etcd #15247 (fixed in 3.4.31, 3.5.13): a leader whose raft loop is stuck
# on a slow disk revokes every lease it saw expire meanwhile, though a new
# leader kept them alive. TestEtcd15247 stalls the leader's fdatasync 9 s
# (strace --inject, past a 6 s TTL) while five leases are kept alive
# through the followers, on Debian's 3.4.23 (/usr/bin/etcd) and on 3.7.3
# (--etcd-bin self), REPRO_15247_COUNT times each. "Successful
# reproduction" only when every 3.4.23 trial lost keys whose client kept
# their lease and no 3.7.3 trial did (the test asserts both).
# docs/processes.md.
REPRO_15247_COUNT ?= 3
repro-etcd-15247:
	@[ -x /usr/bin/etcd ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; } || { echo "needs /usr/bin/etcd 3.4: apt-get install etcd-server"; exit 1; }
	@command -v strace >/dev/null || { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; } || { echo "needs strace: apt-get install strace"; exit 1; }
	@out=$$($(GO) test -count=$(REPRO_15247_COUNT) -run 'TestEtcd15247$$' -v ./etcd/cluster 2>&1); rc=$$?; \
	echo "$$out" | grep -E "fdatasync stalled|Error|premise|^(ok|FAIL)" | sed 's/^ *etcd15247_test.go:[0-9]*: //'; \
	n=$$(echo "$$out" | grep -c 'Successful reproduction of etcd #15247'); \
	if [ $$rc = 0 ] && [ $$n = $(REPRO_15247_COUNT) ]; then echo "Successful reproduction of etcd #15247: in $$n of $$n trials etcd 3.4.23 revoked leases kept alive through the followers after its leader's disk stalled; 3.7.3 revoked none"; \
	else echo "Failed to reproduce (go test exit $$rc, $$n reproductions of $(REPRO_15247_COUNT))"; exit 1; fi

# etcd #16221 (v3.7.3's client, and etcd's main branch): recipe.RWMutex's
# Lock returns once no older key stands, without reading its own key, so a
# writer whose lease is revoked while it waits holds beside whoever queued
# behind it. TestEtcd16221 runs 3 writers and 2 readers for 4 s on the
# embedded cluster, revoking waiting writers' leases, and judges every
# hold; controls: no revokes, and concurrency.Mutex with the revokes.
# "Successful reproduction" only when every one of REPRO_16221_COUNT
# trials overlapped because of a revoked waiter and no control did (the
# test asserts both). docs/leases.md.
REPRO_16221_COUNT ?= 3
repro-etcd-16221:
	@out=$$($(GO) test -count=$(REPRO_16221_COUNT) -run 'TestEtcd16221$$' -v ./etcd/cluster 2>&1); rc=$$?; \
	echo "$$out" | grep -E "revokes (true|false)|both held|Error|unexplained|^(ok|FAIL)" | sed 's/^ *etcd16221_test.go:[0-9]*: //'; \
	n=$$(echo "$$out" | grep -c 'Successful reproduction of etcd #16221'); \
	if [ $$rc = 0 ] && [ $$n = $(REPRO_16221_COUNT) ]; then echo "Successful reproduction of etcd #16221: in $$n of $$n trials recipe.RWMutex let a writer revoked while it waited hold beside another; concurrency.Mutex and the recipe without revokes never did"; \
	else echo "Failed to reproduce (go test exit $$rc, $$n reproductions of $(REPRO_16221_COUNT))"; exit 1; fi

# etcd v3.7's FastLeaseKeepAlive feature gate (on by default): the leader
# renews a lease it still has without waiting for its applied index, so a
# renewal may succeed while a revoke of it is committed but not applied.
# TestFastLeaseKeepAlive (3.7.3 member processes, the gate off then on)
# revokes a holder's lease (TTL 3 s, its client on the leader) through a
# follower with no fault, the leader paused 300 ms and 2 s, and the
# leader busy applying a delete of 20,000 keys; it prints how late the
# holder learned, how long it believed past the revoke, and the renewals
# a back-to-back probe on the leader was granted while the revoke was in
# flight; FASTKEEPALIVE_RUNS runs of each. docs/leases.md.
FASTKEEPALIVE_RUNS ?= 5
measure-etcd-fastkeepalive:
	@LOCKBENCH_MEASURE=fastkeepalive LOCKBENCH_FASTKEEPALIVE_RUNS=$(FASTKEEPALIVE_RUNS) $(GO) test -count=1 -timeout 20m -run 'TestFastLeaseKeepAlive$$' -v ./etcd/cluster 2>&1 | grep -E " runs: |Error|^(ok|FAIL)" | sed 's/^ *fastkeepalive_test.go:[0-9]*: //'

# The same with the whole leader frozen (SIGSTOP, pause-member) instead of
# its disk: its lessor stops too and races its raft loop on SIGCONT. A
# measurement (no verdict): keys lost per trial on each version.
measure-etcd-15247-freeze:
	@LOCKBENCH_MEASURE=15247-freeze $(GO) test -count=$(REPRO_15247_COUNT) -run 'TestEtcd15247Freeze$$' -v ./etcd/cluster 2>&1 | grep -E "frozen 9 s|premise|^(ok|FAIL)" | sed 's/^ *etcd15247_test.go:[0-9]*: //'

# etcd #19597: a waiter whose lease ended goes on waiting until its
# predecessor releases. Prints, per strategy, "waiting after lease loss"
# (the lease check's waiting_after_lease_loss_ms_max: from the harness
# seeing a waiter's key go with its lease to its acquire returning) in
# examples/etcd-19597.yaml (a waiter's lease revoked early in a 2 s hold),
# waiter-revoke and waiter-isolation; docs/leases.md has the table.
MEASURE_19597_LOCKS ?= queue mutex rpc txn election election-rpc
measure-etcd-19597: build
	@for l in $(MEASURE_19597_LOCKS); do for sc in examples/etcd-19597.yaml waiter-revoke waiter-isolation; do for s in $(REPRO_SEEDS); do \
		out=$$(./$(BIN) run --lock $$l --scenario $$sc --seed $$s --out $(OUT) 2>&1); rc=$$?; \
		dir=$$(echo "$$out" | sed -n 's/^run folder: //p'); \
		n=$$(sed -n 's/.*"waiter_lease_losses": *\([0-9]*\).*/\1/p' "$$dir/summary.json"); \
		max=$$(sed -n 's/.*"waiting_after_lease_loss_ms_max": *\([0-9.]*\).*/\1/p' "$$dir/summary.json"); \
		p50=$$(sed -n 's/.*"waiting_after_lease_loss_ms_p50": *\([0-9.]*\).*/\1/p' "$$dir/summary.json"); \
		echo "$$l $$sc seed $$s: exit $$rc, $${n:-0} waiter lease loss(es) seen, waiting after lease loss max $${max:--} ms, p50 $${p50:--} ms"; \
	done; done; done

vet:
	$(GO) vet ./...

# Formatting, go vet and staticcheck (a pinned version, fetched through the
# module proxy on first use). CI runs it before the tests.
verify: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin $(OUT)
