package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/bench"
	"github.com/lockbench/lockbench/scenarios"
)

// openFlags are bench's open-loop flags: --rate R|sweep and --arrivals.
type openFlags struct {
	rate, arrivals string
}

// closedOnly are bench's flags that configure the closed-loop cells or
// their targets: an open-loop bench runs none of those, so giving one
// with --rate is refused rather than ignored.
var closedOnly = []string{"cell-floor", "record-runs", "record-duration", "paired-rounds", "paired-slice", "target-lock", "target-clients", "locks-per-run"}

func (f *openFlags) register(fs *flagSet) {
	fs.StringVar(&f.rate, "rate", "", "open-loop load: acquisitions per second over all clients (e.g. 200 or 200/s), one run per lock at that rate; or sweep: find each lock's saturation rate and run at 50, 80 and 95 % of it (--clients is then the pool serving the arrivals, one count, default "+strconv.Itoa(bench.DefaultRateClients)+"; writes bench.html)")
	fs.StringVar(&f.arrivals, "arrivals", "", "open-loop arrival process with --rate: uniform (default) or poisson, drawn from --seed")
}

// spec is the open-loop part of the bench's spec, nil without --rate.
func (f *openFlags) spec(given map[string]bool) (*bench.OpenSpec, error) {
	if f.rate == "" {
		if given["rate"] {
			return nil, badInputf("--rate is empty: want acquisitions per second (e.g. 200 or 200/s) or sweep")
		}
		if f.arrivals != "" {
			return nil, badInputf("--arrivals %s applies only with --rate (open-loop load)", f.arrivals)
		}
		return nil, nil
	}
	for _, name := range closedOnly {
		if given[name] {
			return nil, badInputf("--%s does not apply with --rate: an open-loop bench runs no closed-loop cells, paired rounds or recording slices", name)
		}
	}
	o := &bench.OpenSpec{Arrivals: f.arrivals}
	if strings.TrimSpace(f.rate) == "sweep" {
		o.Sweep = true
		return o, nil
	}
	r := strings.TrimSpace(f.rate)
	if !strings.HasSuffix(r, "/s") {
		r += "/s"
	}
	v, err := scenarios.ParseRate(r)
	if err != nil {
		return nil, badInputf("--rate %s: want acquisitions per second over all clients, > 0 and ≤ %.0f (e.g. 200 or 200/s), or sweep", f.rate, scenarios.MaxRate)
	}
	o.RatePerS = v.PerS()
	return o, nil
}

// openText is the banner's words for an open-loop spec.
func openText(o *bench.OpenSpec) string {
	arr := o.Arrivals
	if arr == "" {
		arr = scenarios.ArrivalsUniform
	}
	if o.Sweep {
		return fmt.Sprintf("%s arrivals swept to saturation", arr)
	}
	return fmt.Sprintf("%s arrivals at %s/s", arr, strconv.FormatFloat(o.RatePerS, 'f', -1, 64))
}
