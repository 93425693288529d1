# lockbench — see README.md. Every target works on a fresh machine with Go.
GO      ?= go
BIN     := bin/lockbench
GOFLAGS ?=

.PHONY: build run test test-short bench fmt vet clean

build:
	$(GO) build -o $(BIN) ./cmd/lockbench

# The main job: the default workload on an embedded 3-member etcd cluster.
run: build
	./$(BIN) run --lock mutex --scenario contention

# vet, then every test with the race detector (cluster tests included).
test: vet
	$(GO) test -race -count=1 -timeout 15m ./...

# Pure-logic tests only: no etcd cluster is started.
test-short:
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./history ./check

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin results/runs
