package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // canonical form
	}{
		{"p99<300ms", "p99<300ms"},
		{"p99 < 300ms , success >= 99.9%", "p99<300ms,success>=99.9%"},
		{"p99<300ms,success>=99.9%,amplification<=1.5", "p99<300ms,success>=99.9%,amplification<=1.5"},
		{"p50<=1.5s", "p50<=1500ms"},
		{"p90<250", "p90<250ms"},
		{"p999<2s,mean<50ms,max<5s", "p999<2000ms,mean<50ms,max<5000ms"},
		{"p99<250us", "p99<0.25ms"},
		{"success>=0.999", "success>=99.9%"},
		{"failed<0.1%,unknown<=0.5%", "failed<0.1%,unknown<=0.5%"},
		{"goodput>=500/s", "goodput>=500/s"},
		{"goodput>400", "goodput>400/s"},
		{"amplification≤1.2", "amplification<=1.2"},
		{"success≥99%", "success>=99%"},
		{"db.utilization<0.8", "db.utilization<80%"},
		{"db.utilization<80%", "db.utilization<80%"},
		{"db.queue<10,db.queue_max<=100", "db.queue<10,db.queue_max<=100"},
		{"orders.queue_mean<3", "orders.queue<3"},
		{"db.amplification<2", "db.attempts<2"},
		{"db.p99<40ms,db.p50<5ms", "db.service_p99<40ms,db.service_p50<5ms"},
		{"gateway.rejected<1%", "gateway.rejected_rate<1%"},
	} {
		s, err := ParseSLO(tc.in)
		if err != nil {
			t.Errorf("ParseSLO(%q): %v", tc.in, err)
			continue
		}
		if got := s.String(); got != tc.want {
			t.Errorf("ParseSLO(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseSLOErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // substrings of the error
	}{
		{"", []string{"empty expression"}},
		{"p99<300ms,", []string{"term 2", "empty term"}},
		{"p99=300ms", []string{`term 1 "p99=300ms"`, "= alone is not allowed"}},
		{"p99", []string{"no comparison"}},
		{"p98<300ms", []string{`unknown metric "p98"`}},
		{"p99<300ms,sucess>=99%", []string{`term 2 "sucess>=99%"`, `unknown metric "sucess"`}},
		{"<300ms", []string{"missing metric"}},
		{"p99<", []string{"missing value"}},
		{"p99<fast", []string{`p99 threshold "fast"`, "duration"}},
		{"p99<-5ms", []string{"≥ 0"}},
		{"success>=99.9", []string{"percentage"}},
		{"success>=101%", []string{"0% to 100%"}},
		{"db.utilization<1.5", []string{"fraction from 0 to 1"}},
		{"db.bogus<1", []string{`unknown service metric "bogus"`}},
		{".utilization<1", []string{"SERVICE.METRIC"}},
		{"a.b.utilization<1", []string{"SERVICE.METRIC"}},
		{"utilization<0.8", []string{`unknown metric "utilization"`}},
		{"goodput>=fast", []string{"requests per second"}},
		{"p99<300ms<400ms", []string{"more than one comparison"}},
		{"amplification<NaN", []string{"number"}},
	} {
		_, err := ParseSLO(tc.in)
		if err == nil {
			t.Errorf("ParseSLO(%q) succeeded, want an error", tc.in)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseSLO(%q) = %v, want it to mention %q", tc.in, err, w)
			}
		}
	}
}

func TestTermValue(t *testing.T) {
	sum := &metrics.Summary{
		Requests:      metrics.Requests{Offered: 1000, Succeeded: 990, Failed: 6, Unknown: 4},
		GoodputRPS:    495,
		LatencyMs:     metrics.Latency{Mean: 12, P50: 10, P90: 20, P99: 80, P999: 150, Max: 300},
		Amplification: 1.3,
		Services: []metrics.ServiceSummary{{Name: "db", Attempts: 1300, Rejected: 13, Utilization: 0.72, QueueMean: 3.5, QueueMax: 40,
			Amplification: 1.3, Succeeded: 1200, LatencyMs: metrics.Latency{P50: 4, P99: 30}}},
	}
	for _, tc := range []struct {
		term string
		want float64
		ok   bool
	}{
		{"p50<1", 10, false}, {"p90<25", 20, true}, {"p99<100ms", 80, true}, {"p999<100ms", 150, false},
		{"mean<20", 12, true}, {"max<1s", 300, true},
		{"success>=99%", 0.99, true}, {"success>99%", 0.99, false}, {"failed<0.5%", 0.006, false}, {"unknown<=0.4%", 0.004, true},
		{"goodput>=500", 495, false}, {"amplification<=1.3", 1.3, true},
		{"db.utilization<0.8", 0.72, true}, {"db.queue<3", 3.5, false}, {"db.queue_max<=40", 40, true},
		{"db.attempts<1.5", 1.3, true}, {"db.p50<5ms", 4, true}, {"db.p99<20ms", 30, false}, {"db.rejected<2%", 0.01, true},
	} {
		s, err := ParseSLO(tc.term)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s[0].Value(sum)
		if err != nil {
			t.Errorf("%s: %v", tc.term, err)
			continue
		}
		if math.Abs(v-tc.want) > 1e-12 || s[0].Satisfied(v) != tc.ok {
			t.Errorf("%s: value %g satisfied %v, want %g %v", tc.term, v, s[0].Satisfied(v), tc.want, tc.ok)
		}
	}
	// Nothing succeeded: latencies are +Inf, so no latency objective holds.
	dead := &metrics.Summary{Requests: metrics.Requests{Offered: 10, Failed: 10}}
	s, _ := ParseSLO("p99<1s")
	if ok, broken, err := s.Holds(dead); err != nil || ok || len(broken) != 1 {
		t.Errorf("Holds on a dead run = %v %v %v, want false", ok, broken, err)
	}
	s, _ = ParseSLO("cache.utilization<1")
	if _, err := s[0].Value(sum); err == nil || !strings.Contains(err.Error(), `no service "cache"`) {
		t.Errorf("absent service: %v", err)
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{
		"p99<300ms,success>=99.9%,amplification<=1.5",
		"db.utilization<0.8", "goodput>=500/s", "p50<=1.5s", "failed<0.1%", "p99≤20", "x.queue<3",
		"p99(all)<1s", "p50(ok)<=2", "", ",", "p99<", "<", "p99<300ms<1s", "success>=1e-300%", "p99<1e308ms", "p99<9223372036854775807ns",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseSLO(expr)
		if err != nil {
			if s != nil {
				t.Fatalf("error %v with a non-nil SLO", err)
			}
			return
		}
		if len(s) == 0 {
			t.Fatal("no error and no terms")
		}
		// The canonical form parses, to itself.
		canon := s.String()
		s2, err := ParseSLO(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, expr, err)
		}
		if got := s2.String(); got != canon {
			t.Fatalf("canonical form not stable: %q -> %q", canon, got)
		}
		for i := range s {
			if s[i].Metric != s2[i].Metric || s[i].Service != s2[i].Service || s[i].Op != s2[i].Op || s[i].Population != s2[i].Population {
				t.Fatalf("term %d changed: %+v -> %+v", i, s[i], s2[i])
			}
			if d := math.Abs(s[i].Threshold - s2[i].Threshold); d > 1e-9*math.Max(1, math.Abs(s[i].Threshold)) {
				t.Fatalf("threshold %d changed: %g -> %g", i, s[i].Threshold, s2[i].Threshold)
			}
		}
	})
}

func BenchmarkParseSLO(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSLO("p99<300ms,success>=99.9%,amplification<=1.5,db.utilization<0.8"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSLOHolds(b *testing.B) {
	s, _ := ParseSLO("p99<300ms,success>=99.9%,amplification<=1.5,db.utilization<0.8")
	sum := &metrics.Summary{Requests: metrics.Requests{Offered: 100, Succeeded: 100}, LatencyMs: metrics.Latency{P99: 20},
		Amplification: 1.1, Services: []metrics.ServiceSummary{{Name: "api"}, {Name: "db", Utilization: 0.5}}}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _, err := s.Holds(sum); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// TestLatencyPopulation (issue 36 item 10): p99 and p99(ok) read the
// succeeded requests' latency, p99(all) every request's, failed ones at
// their time to failure; reports label the population.
func TestLatencyPopulation(t *testing.T) {
	sum := &metrics.Summary{
		Requests:     metrics.Requests{Offered: 1000, Succeeded: 300, Failed: 700},
		LatencyMs:    metrics.Latency{P50: 20, P99: 88.6, Max: 120},
		LatencyAllMs: &metrics.Latency{P50: 900, P99: 2000, Max: 2000, Count: 1000},
	}
	for _, tc := range []struct {
		term, canon string
		want        float64
		met         bool
		population  string
	}{
		{"p99<100ms", "p99<100ms", 88.6, true, "succeeded requests"},
		{"p99(ok)<100ms", "p99<100ms", 88.6, true, "succeeded requests"},
		{"p99(all)<100ms", "p99(all)<100ms", 2000, false, "all requests"},
		{"p50( all )<1s", "p50(all)<1000ms", 900, true, "all requests"},
		{"success>=99%", "success>=99%", 0.3, false, ""},
	} {
		s, err := ParseSLO(tc.term)
		if err != nil {
			t.Fatalf("%s: %v", tc.term, err)
		}
		if s.String() != tc.canon {
			t.Errorf("%s: canonical %q, want %q", tc.term, s.String(), tc.canon)
		}
		rep, err := s.Report(sum)
		if err != nil {
			t.Fatal(err)
		}
		rt := rep.Terms[0]
		if *rt.Value != tc.want || rt.Met != tc.met || rt.Population != tc.population {
			t.Errorf("%s: value %v met %v population %q, want %v %v %q", tc.term, *rt.Value, rt.Met, rt.Population, tc.want, tc.met, tc.population)
		}
		if tc.population != "" && !strings.Contains(rep.Line(), " of "+tc.population+" = ") {
			t.Errorf("%s: line %q does not name the population", tc.term, rep.Line())
		}
	}
	// A result without the all-requests latency (load mode) says so.
	s, _ := ParseSLO("p99(all)<1s")
	if _, err := s[0].Value(&metrics.Summary{Requests: metrics.Requests{Offered: 5, Succeeded: 5}}); err == nil || !strings.Contains(err.Error(), "latency_all_ms") {
		t.Errorf("no latency_all_ms: err %v", err)
	}
	for _, bad := range []struct{ in, want string }{
		{"success(all)>=99%", "only the latencies"},
		{"p99(some)<1s", `population "some"`},
		{"p99(all<1s", "METRIC(all)"},
		{"p99)<1s", "METRIC(all)"},
		{"db.p99(all)<1s", "unknown service metric"},
	} {
		if _, err := ParseSLO(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseSLO(%q) = %v, want an error mentioning %q", bad.in, err, bad.want)
		}
	}
}
