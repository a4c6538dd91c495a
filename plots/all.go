package plots

import (
	"errors"
	"fmt"
	"os"

	"gonum.org/v1/plot"

	"github.com/stormsim/stormsim/metrics"
)

// Plotter draws one figure from a result, or returns ErrNoData.
type Plotter func(*metrics.Result) (*plot.Plot, error)

// Standard lists the plots WriteAll draws, by file name, in report order.
var Standard = []struct {
	Name string
	Plot Plotter
}{
	{"amplification", Amplification},
	{"queue", Queue},
	{"throughput", Throughput},
	{"latency", Latency},
	{"latency_cdf", LatencyCDF},
	{"breaker", Breaker},
	{"budget", Budget},
	{"replicas", Replicas},
	{"replica_utilization", ReplicaUtilization},
	{"unknown_intents", UnknownIntents},
	{"certainty_cdf", CertaintyCDF},
}

// Write draws p as dir/name.png and dir/name.svg, each written atomically,
// and returns the two paths.
func Write(dir, name string, p *plot.Plot) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	return save(p, dir, name)
}

// WriteAll draws every Standard plot r has data for into dir (created if
// needed), as PNG and SVG, and returns the files written in report order.
// Plots without data are skipped.
func WriteAll(dir string, r *metrics.Result) ([]string, error) {
	var files []string
	for _, s := range Standard {
		p, err := s.Plot(r)
		if errors.Is(err, ErrNoData) {
			continue
		}
		if err != nil {
			return files, fmt.Errorf("plots: %s: %w", s.Name, err)
		}
		out, err := Write(dir, s.Name, p)
		files = append(files, out...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}
