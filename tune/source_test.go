package tune

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
)

func TestParseSource(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lat.txt")
	if err := os.WriteFile(file, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec string
		want Source
	}{
		{file, Source{Kind: Numbers, Path: file}},
		{"lat.csv:latency_ms", Source{Kind: Numbers, Path: "lat.csv", Column: "latency_ms"}},
		{"vegeta:res.json", Source{Kind: Vegeta, Path: "res.json"}},
		{"results:out", Source{Kind: Results, Path: "out"}},
		{"results:out#db", Source{Kind: Results, Path: "out", Service: "db"}},
		{dir, Source{Kind: Results, Path: dir}},
		{"scenario:chain.yaml#db", Source{Kind: Scenario, Path: "chain.yaml", Service: "db"}},
	} {
		got, err := ParseSource(c.spec)
		if err != nil || got != c.want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
		if c.spec != dir && c.spec != file && got.String() != c.spec {
			t.Errorf("String() = %q, want %q", got.String(), c.spec)
		}
	}
	for _, bad := range []string{"", "vegeta:", "results:"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q): no error", bad)
		}
	}
}

func TestParseHopsErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"gateway", `hop "gateway": want NAME=SOURCE`},
		{"=x", `want NAME=SOURCE`},
		{"db=testdata/nope.txt", `hop "db": stat testdata/nope.txt`},
		{"db=vegeta:testdata/read_errors.golden", `hop "db": testdata/read_errors.golden:1: not a vegeta JSON result`},
		{"db=scenario:testdata/chain.yaml#nope", `no service "nope" (have: gateway, orders, db)`},
		{"db=results:testdata", `testdata: no histograms.json`},
	} {
		_, err := ParseHops([]string{c.spec}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.spec, err, c.want)
		}
	}
}

// TestResultsSource round-trips a service's latency histogram through a
// results directory written by metrics.Save and checks that the expanded
// samples give the histogram's own quantiles.
func TestResultsSource(t *testing.T) {
	l := newLognormal(5*time.Millisecond, 60*time.Millisecond)
	h := metrics.NewLatencyHistogram()
	for _, d := range l.draw(rand.New(rand.NewPCG(9, 9)), 30000) {
		metrics.RecordLatency(h, d)
	}
	dir := t.TempDir()
	res := &metrics.Result{Summary: metrics.Summary{Scenario: "x", Status: "complete"},
		ServiceLatency: map[string]*hdrhistogram.Histogram{"orders": h}}
	if err := metrics.Save(dir, res); err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{0, 7000} { // 7000 forces thinning
		hops, err := ParseHops([]string{"orders=results:" + dir}, LoadOptions{MaxSamples: max})
		if err != nil {
			t.Fatal(err)
		}
		s := hops[0].Samples
		if max == 0 && s.Len() != 30000 || max == 7000 && s.Len() != 7000 {
			t.Errorf("max %d: %d samples", max, s.Len())
		}
		for _, q := range []float64{0.5, 0.99, 0.999} {
			got := s.Quantile(q)
			want := time.Duration(h.ValueAtQuantile(100*q)) * time.Microsecond
			// Thinning to m samples moves a quantile by at most 1/m in rank;
			// the histogram's 3 significant digits bound the value error.
			lo := time.Duration(h.ValueAtQuantile(100*math.Max(0, q-2.0/float64(s.Len())))) * time.Microsecond
			hi := time.Duration(h.ValueAtQuantile(100*math.Min(1, q+2.0/float64(s.Len())))) * time.Microsecond
			if got < lo-lo/1000 || got > hi+hi/1000 {
				t.Errorf("max %d: %s = %v, histogram says %v (allowed %v..%v)", max, PercentileName(q), got, want, lo, hi)
			}
		}
	}
	if _, err := ParseHops([]string{"db=results:" + dir}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), `no latency histogram for service "db" (have: orders; pick one with results:DIR#SERVICE`) {
		t.Errorf("missing service: %v", err)
	}
}

// TestScenarioSource samples the chain of testdata/chain.yaml: the
// gateway's unloaded latency is 1ms + 2ms + a lognormal (p50 4ms, p99
// 40ms), so its quantiles are the lognormal's shifted by 3ms, within the
// order-statistic error of the draws.
func TestScenarioSource(t *testing.T) {
	const n = 20000
	hops, err := ParseHops([]string{"gateway=scenario:testdata/chain.yaml", "db=scenario:testdata/chain.yaml"}, LoadOptions{ScenarioSamples: n})
	if err != nil {
		t.Fatal(err)
	}
	l := newLognormal(4*time.Millisecond, 40*time.Millisecond)
	for i, shift := range []time.Duration{3 * time.Millisecond, 0} {
		s := hops[i].Samples
		for _, q := range []float64{0.5, 0.99} {
			got := s.Quantile(q) - shift
			tol := z*math.Sqrt(q*(1-q)/n) + 1.0/n
			if f := l.cdf(got); math.Abs(f-q) > tol {
				t.Errorf("%s %s: F = %.4f, want %.4f ± %.4f", hops[i].Name, PercentileName(q), f, q, tol)
			}
		}
	}
	again, err := ParseHops([]string{"db=scenario:testdata/chain.yaml"}, LoadOptions{ScenarioSamples: n})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Samples.Quantile(0.9) != hops[1].Samples.Quantile(0.9) {
		t.Error("same seed gave different samples")
	}
}

// TestTracesSource reads the hand-made shop traces: payments' three
// server spans last 18ms each; pricing's failed span is left out.
func TestTracesSource(t *testing.T) {
	src, err := ParseSource("traces:../traces/testdata/shop.otlp.json#payments")
	if err != nil || src.Kind != Traces || src.Service != "payments" {
		t.Fatalf("ParseSource: %+v, %v", src, err)
	}
	h, err := src.Load("pay", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Samples.Len() != 3 || h.Samples.Quantile(0.5) != 18*time.Millisecond {
		t.Errorf("payments: want 3 samples of 18ms, got %d (p50 %v)", h.Samples.Len(), h.Samples.Quantile(0.5))
	}
	hops, err := ParseHops([]string{"pricing=traces:../traces/testdata/shop.jaeger.json"}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := hops[0].Samples.Len(); n != 3 || !strings.Contains(hops[0].Note, "1 of 4 server spans dropped") {
		t.Errorf("pricing: want 3 samples and a note of 1 failed span, got %d, %q", n, hops[0].Note)
	}
	if _, err := ParseHops([]string{"x=traces:../traces/testdata/shop.otlp.json#nosuch"}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "have server spans of: frontend, inventory, payments, pricing") {
		t.Errorf("unknown service: want an error listing the services, got %v", err)
	}
}
