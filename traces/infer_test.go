package traces_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/traces"
)

// chain makes n requests of client → gateway → orders, one every 100ms:
// gateway works 2ms, then calls orders, which works 5ms.
func chain(n int) []traces.Span {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(x float64) time.Time { return t0.Add(time.Duration(x * float64(time.Millisecond))) }
	var out []traces.Span
	for i := range n {
		tr := fmt.Sprintf("%032x", i+1)
		id := func(k int) string { return fmt.Sprintf("%016x", i*16+k) }
		at := float64(i) * 100
		add := func(k, parent int, svc string, kind traces.Kind, s, e float64) {
			p := ""
			if parent > 0 {
				p = id(parent)
			}
			out = append(out, traces.Span{TraceID: tr, SpanID: id(k), ParentID: p, Service: svc, Kind: kind, Start: ms(s), End: ms(e), Resend: -1})
		}
		add(1, 0, "client", traces.Internal, at, at+9)
		add(2, 1, "client", traces.Client, at, at+9)
		add(3, 2, "gateway", traces.Server, at+0.5, at+8.5)
		add(4, 3, "gateway", traces.Client, at+2.5, at+8)
		add(5, 4, "orders", traces.Server, at+3, at+7.5)
	}
	return out
}

func hasNote(m *traces.Model, words ...string) bool {
	for _, n := range m.Notes {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(n, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// graph is the model's call graph in one line, for comparisons.
func graph(m *traces.Model) string {
	var b strings.Builder
	fmt.Fprintf(&b, "entry %s via %s;", m.Entry, m.Client)
	for _, s := range m.Services {
		fmt.Fprintf(&b, " %s:", s.Name)
		for _, st := range s.Steps {
			for _, mb := range st {
				fmt.Fprintf(&b, " %s×%d", mb.To, mb.Fanout)
			}
		}
	}
	return b.String()
}

// TestInferFlaws damages clean traces the ways real ones are damaged and
// checks that each gives a note that says so, and the same graph as the
// clean traces — never a wrong one.
func TestInferFlaws(t *testing.T) {
	const want = "entry gateway via client; gateway: orders×1 orders:"
	clean := traces.Infer(chain(50))
	if g := graph(clean); g != want {
		t.Fatalf("clean traces: got %q, want %q", g, want)
	}
	if len(clean.Notes) != 0 {
		t.Fatalf("clean traces: want no notes, got %q", clean.Notes)
	}
	for _, tc := range []struct {
		name   string
		damage func([]traces.Span) []traces.Span
		note   []string
		check  func(t *testing.T, m *traces.Model)
	}{{
		name: "orphans: some gateway server spans lost",
		damage: func(s []traces.Span) []traces.Span {
			var out []traces.Span
			for i, sp := range s {
				if sp.Service == "gateway" && sp.Kind == traces.Server && i%3 == 0 {
					continue
				}
				out = append(out, sp)
			}
			return out
		},
		note: []string{"orphans", "gateway"},
		check: func(t *testing.T, m *traces.Model) {
			if m.Requests != 50 {
				t.Errorf("requests: want 50 (orphans are not requests), got %d", m.Requests)
			}
		},
	}, {
		name: "orphans: the client's root spans lost",
		damage: func(s []traces.Span) []traces.Span {
			var out []traces.Span
			for _, sp := range s {
				if sp.Service != "client" {
					out = append(out, sp)
				}
			}
			return out
		},
		note: []string{"orphans"},
		check: func(t *testing.T, m *traces.Model) {
			// No root is left: no entry may be made up from orphans.
			if m.Entry != "" || m.Requests != 0 {
				t.Errorf("want no entry and no requests, got %q and %d", m.Entry, m.Requests)
			}
		},
	}, {
		name: "clock skew: orders' clock 40ms behind",
		damage: func(s []traces.Span) []traces.Span {
			for i := range s {
				if s[i].Service == "orders" {
					s[i].Start = s[i].Start.Add(-40 * time.Millisecond)
					s[i].End = s[i].End.Add(-40 * time.Millisecond)
				}
			}
			return s
		},
		note: []string{"clock skew between gateway and orders", "50 server span"},
		check: func(t *testing.T, m *traces.Model) {
			for _, s := range m.Services {
				for _, d := range s.Own {
					want := map[string]time.Duration{"gateway": 2500 * time.Microsecond, "orders": 4500 * time.Microsecond}[s.Name]
					if d != want {
						t.Fatalf("%s own time %v, want %v: skew leaked into a duration", s.Name, d, want)
					}
				}
			}
		},
	}, {
		name: "missing service.name on the orders spans of some traces",
		damage: func(s []traces.Span) []traces.Span {
			for i := range s {
				if s[i].Service == "orders" && i%2 == 0 {
					s[i].Service = ""
				}
			}
			return s
		},
		note: []string{"no service.name"},
	}, {
		name: "missing span kinds",
		damage: func(s []traces.Span) []traces.Span {
			for i := range s {
				s[i].Kind = traces.Unspecified
			}
			return s
		},
		note: []string{"no span kind"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := traces.Infer(tc.damage(chain(50)))
			if !hasNote(m, tc.note...) {
				t.Errorf("want a note with %q, got %q", tc.note, m.Notes)
			}
			if g := graph(m); m.Entry != "" && g != want {
				t.Errorf("graph: got %q, want %q (or none)", g, want)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

// TestFitLognormal checks the fit on exact lognormal quantiles (it must
// accept them and recover p50 and p99) and on a two-point mixture (it
// must refuse it).
func TestFitLognormal(t *testing.T) {
	const n = 2000
	var logn, bimodal []time.Duration
	for i := range n {
		q := (float64(i) + 0.5) / n
		// p50 10ms, sigma 0.5: quantiles by the inverse error function.
		f := traces.Fit{Mu: -4.605170186, Sigma: 0.5}
		logn = append(logn, f.Quantile(q))
		v := time.Millisecond
		if i%2 == 0 {
			v = 50 * time.Millisecond
		}
		bimodal = append(bimodal, v+time.Duration(i)*time.Microsecond)
	}
	f := traces.FitLognormal(logn)
	if !f.Good() || f.KS > 0.01 {
		t.Errorf("lognormal samples: want a good fit, got KS %.4f (critical %.4f)", f.KS, f.Critical)
	}
	if p50 := f.Quantile(0.5); p50 < 9900*time.Microsecond || p50 > 10100*time.Microsecond {
		t.Errorf("p50: want 10ms ±1%%, got %v", p50)
	}
	if b := traces.FitLognormal(bimodal); b.Good() {
		t.Errorf("bimodal samples: want the fit refused, got KS %.4f ≤ %.4f", b.KS, b.Critical)
	}
}

// TestInferCallShapes reads the attempts of one call from client spans
// without http.request.resend_count, by timing alone (but for the late
// hedge, which only the resend count tells from a second call): each case is one
// gateway attempt (0–100ms) making calls to orders, repeated 30 times.
func TestInferCallShapes(t *testing.T) {
	type cs struct {
		start, end float64 // ms into the gateway attempt
		failed     bool
	}
	for _, tc := range []struct {
		name  string
		calls []cs
		steps string // graph of gateway
		check func(t *testing.T, e *traces.Edge)
	}{
		{"fan-out: two calls start together", []cs{{10, 30, false}, {10, 40, false}}, "orders×2", func(t *testing.T, e *traces.Edge) {
			if e.Calls != 60 || e.Hedged != 0 {
				t.Errorf("want 60 calls, no hedge; got %d calls, %d hedged", e.Calls, e.Hedged)
			}
		}},
		{"hedge: a second attempt 20ms into the first", []cs{{10, 60, false}, {30, 50, false}}, "orders×1", func(t *testing.T, e *traces.Edge) {
			if e.Calls != 30 || e.Hedged != 30 || e.HedgeMax != 2 || e.HedgeDelays[0] != 20*time.Millisecond {
				t.Errorf("want 30 hedged calls of 2 attempts 20ms apart; got %d calls, %d hedged, max %d, delays %v", e.Calls, e.Hedged, e.HedgeMax, e.HedgeDelays[:1])
			}
		}},
		{"retry: a second attempt 5ms after a failure", []cs{{10, 15, true}, {20, 40, false}}, "orders×1", func(t *testing.T, e *traces.Edge) {
			if e.Calls != 30 || e.Retried[traces.Unavailable] != 30 || e.Gaps1[0] != 5*time.Millisecond {
				t.Errorf("want 30 calls retried after unavailable with a 5ms wait; got %d calls, retried %v, gaps %v", e.Calls, e.Retried, e.Gaps1[:1])
			}
		}},
		{"late hedge: resend count 1 right after a success", []cs{{10, 30, false}, {30.1, 45, false}}, "orders×1", func(t *testing.T, e *traces.Edge) {
			if e.Calls != 30 || e.Hedged != 30 || len(e.Gaps1) != 0 {
				t.Errorf("want 30 hedged calls and no retry; got %d calls, %d hedged, %d retry waits", e.Calls, e.Hedged, len(e.Gaps1))
			}
		}},
		{"sequence: a second call after a success", []cs{{10, 15, false}, {20, 40, false}}, "orders×1 orders×1", func(t *testing.T, e *traces.Edge) {
			if e.Calls != 60 || e.MaxAttempts != 1 {
				t.Errorf("want 60 calls of one attempt; got %d calls, max %d attempts", e.Calls, e.MaxAttempts)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			ms := func(x float64) time.Time { return t0.Add(time.Duration(x * float64(time.Millisecond))) }
			var spans []traces.Span
			for i := range 30 {
				tr := fmt.Sprintf("%032x", i+1)
				id := func(k int) string { return fmt.Sprintf("%016x", i*16+k) }
				at := float64(i) * 1000
				spans = append(spans, traces.Span{TraceID: tr, SpanID: id(1), Service: "gateway", Kind: traces.Server, Start: ms(at), End: ms(at + 100), Resend: -1})
				for j, c := range tc.calls {
					cl := traces.Span{TraceID: tr, SpanID: id(2 + 2*j), ParentID: id(1), Service: "gateway", Kind: traces.Client, Start: ms(at + c.start), End: ms(at + c.end), Resend: -1}
					if strings.HasPrefix(tc.name, "late hedge") {
						cl.Resend = j
					}
					sv := traces.Span{TraceID: tr, SpanID: id(3 + 2*j), ParentID: id(2 + 2*j), Service: "orders", Kind: traces.Server, Start: ms(at + c.start + 1), End: ms(at + c.end - 1), Resend: -1}
					if c.failed {
						cl.Failed, cl.Class = true, traces.Unavailable
						sv.Failed, sv.Class = true, traces.Unavailable
					}
					spans = append(spans, cl, sv)
				}
			}
			m := traces.Infer(spans)
			if g := graph(m); !strings.Contains(g, "gateway: "+tc.steps+" orders:") {
				t.Errorf("graph %q, want gateway: %s", g, tc.steps)
			}
			tc.check(t, m.Services[0].Edges["orders"])
		})
	}
}

// TestInferDeterministic: the spans' order in the files must not matter;
// the same set gives a byte-identical scenario.
func TestInferDeterministic(t *testing.T) {
	spans, _, err := traces.ReadFile("testdata/shop.jaeger.json")
	if err != nil {
		t.Fatal(err)
	}
	want := traces.Infer(spans).Scenario(traces.WriteOptions{}).YAML
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
		if got := traces.Infer(spans).Scenario(traces.WriteOptions{}).YAML; string(got) != string(want) {
			t.Fatalf("shuffled spans give another scenario:\n%s\nwant:\n%s", got, want)
		}
	}
}

// TestInferLayeredClients: a library's client span around the HTTP
// client's (both in gateway) is not a call of its own, and the graph is
// the one of the plain chain.
func TestInferLayeredClients(t *testing.T) {
	spans := chain(20)
	var out []traces.Span
	for _, s := range spans {
		if s.Service == "gateway" && s.Kind == traces.Client {
			outer := s
			outer.SpanID = "f" + s.SpanID[1:]
			s.ParentID = outer.SpanID
			out = append(out, outer)
		}
		out = append(out, s)
	}
	m := traces.Infer(out)
	if g := graph(m); g != "entry gateway via client; gateway: orders×1 orders:" || len(m.Notes) != 0 {
		t.Errorf("got %q with notes %q", g, m.Notes)
	}
	if e := m.Services[0].Edges["orders"]; e.Calls != 20 || e.Attempts != 20 {
		t.Errorf("want 20 calls of one attempt, got %d calls, %d attempts", e.Calls, e.Attempts)
	}
}

// TestInferWrites: requests whose first call to the entry is a POST are
// the workload's non-idempotent writes.
func TestInferWrites(t *testing.T) {
	spans := chain(40)
	n := 0
	for i := range spans {
		if spans[i].Service == "client" && spans[i].Kind == traces.Client {
			if n%4 == 0 {
				spans[i].Method = "POST"
			} else {
				spans[i].Method = "GET"
			}
			n++
		}
	}
	m := traces.Infer(spans)
	if m.Writes != 10 {
		t.Errorf("want 10 writes of 40, got %d", m.Writes)
	}
	if y := string(m.Scenario(traces.WriteOptions{}).YAML); !strings.Contains(y, "write_fraction: 0.25 ") {
		t.Errorf("want write_fraction: 0.25 in\n%s", y)
	}
}

// TestInferInstances: replicas (service.instance.id) are counted and
// noted, not modelled, and do not change the graph.
func TestInferInstances(t *testing.T) {
	spans := chain(30)
	for i := range spans {
		if spans[i].Service == "orders" {
			spans[i].Instance = fmt.Sprintf("orders-%d", i%3)
		}
	}
	m := traces.Infer(spans)
	if !hasNote(m, "orders: 3 instances") || m.Services[1].Instances != 3 {
		t.Errorf("want orders with 3 instances noted, got %d and %q", m.Services[1].Instances, m.Notes)
	}
	if g := graph(m); g != "entry gateway via client; gateway: orders×1 orders:" {
		t.Errorf("graph %q", g)
	}
}
