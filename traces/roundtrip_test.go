package traces_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/traces"
)

// TestRoundTrip runs a scenario (three services, a parallel group with a
// fan-out, retries, errors of two classes) through serve with tracing on
// (on the bubble's clock and an in-memory network, HTTP or gRPC as real), imports the traces, and checks that the imported scenario
// simulates like the original: goodput and each service's attempts per
// logical request within 10 %, each service's p50 within 20 %.
//
// Where the tolerances come from: the real run offers ~1440 requests, so
// the imported rate is off by 1/√1440 ≈ 2.6 % (one standard deviation) and
// an error rate of 0.1 estimated from ~1500 attempts by ±0.008 (amplification
// ±0.9 %); both simulations run 60 s (~7200 requests, ±1.2 % each). Goodput
// and amplification thus differ by ~3 % at one standard deviation, so 10 %
// is a 3σ band that a wrong graph (a lost fan-out: −33 % attempts at stock;
// a lost retry policy: −10 % at orders) still breaks. On the scripted
// clock the traces carry no loopback overhead the simulator lacks (on
// real time, about 1 ms a hop on 10–40 ms service times, ≈ 5 %).
//
// Over gRPC the spans come from grpc-go's stats handlers (otelgrpc, whose
// rpc.response.status_code names the code) and the same checks hold.
func TestRoundTrip(t *testing.T) {
	for _, protocol := range []string{serve.ProtocolHTTP, serve.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) { roundTrip(t, protocol) })
	}
}

// roundTrip is TestRoundTrip over protocol.
func roundTrip(t *testing.T, protocol string) {
	orig, err := topology.Load("testdata/roundtrip.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tracesFile := filepath.Join(dir, "rt.otlp.json")
	// The real run is on the bubble's clock, on an in-memory network
	// (docs/architecture.md, one clock): no starved CPU stalls its
	// services, so one run is the scenario.
	var realRes *metrics.Result
	synctest.Test(t, func(t *testing.T) {
		tr, err := edge.NewTracing(tracesFile)
		if err != nil {
			t.Fatal(err)
		}
		realRes, err = serve.RunScenario(context.Background(), orig, serve.ScenarioOptions{Tracing: tr, Protocol: protocol, Network: new(memnet.Network)})
		if cerr := tr.Close(context.Background()); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	if realRes == nil {
		t.FailNow()
	}
	// One server span per attempt: the spans of each service number its
	// attempts as the real run counted them (no warm-up in this scenario).
	spans, _, err := traces.ReadFile(tracesFile)
	if err != nil {
		t.Fatal(err)
	}
	m := traces.Infer(spans)
	for _, s := range m.Services {
		if want := service(t, realRes, s.Name).Attempts; int64(s.Attempts) != want {
			t.Errorf("%s: %d server spans, want one per attempt: %d", s.Name, s.Attempts, want)
		}
	}
	if m.Requests != int(realRes.Summary.Requests.Offered) || m.Client != edge.ClientService {
		t.Errorf("root spans: %d of %q, want one per logical request (%d) of %s", m.Requests, m.Client, realRes.Summary.Requests.Offered, edge.ClientService)
	}
	out := filepath.Join(dir, "imported.yaml")
	o, err := traces.Import([]string{tracesFile}, out, "imported")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Write(out); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", o.Summary)
	imported, err := topology.Load(out, []string{"duration=60s"})
	if err != nil {
		t.Fatal(err)
	}
	// The graph first: a wrong one could still land near the numbers.
	gw := imported.Service("gateway")
	if gw == nil || len(gw.Calls) != 1 || len(gw.Calls[0].Parallel) != 2 {
		t.Fatalf("gateway: want one parallel group of two calls, got %+v", gw)
	}
	ord, st := gw.Calls[0].Parallel[0], gw.Calls[0].Parallel[1]
	if ord.To != "orders" || ord.Retry.MaxAttempts < 2 || st.To != "stock" || st.Fanout != 2 {
		t.Errorf("gateway's group: want orders with retries and stock ×2, got %s (max_attempts %d), %s ×%d", ord.To, ord.Retry.MaxAttempts, st.To, st.Fanout)
	}
	if s := imported.Service("stock"); s == nil || s.ErrorClass != "unavailable" || s.ErrorRate == 0 {
		t.Errorf("stock: want unavailable errors, got %+v", s)
	}
	long, err := orig.WithSets("duration=60s")
	if err != nil {
		t.Fatal(err)
	}
	simOrig, err := sim.Run(context.Background(), long, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simImp, err := sim.Run(context.Background(), imported, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, want, got, tol float64) {
		t.Helper()
		if d := math.Abs(got-want) / want; d > tol || math.IsNaN(d) {
			t.Errorf("%s: original %.4g, imported %.4g: %.1f %% apart, want ≤ %.0f %%", what, want, got, 100*d, 100*tol)
		} else {
			t.Logf("%s: original %.4g, imported %.4g (%.1f %%; the real run: see below)", what, want, got, 100*d)
		}
	}
	within("goodput_rps", simOrig.Summary.GoodputRPS, simImp.Summary.GoodputRPS, 0.10)
	for _, name := range []string{"gateway", "orders", "stock"} {
		so, si, sr := service(t, simOrig, name), service(t, simImp, name), service(t, realRes, name)
		within(name+" attempts per request", so.Amplification, si.Amplification, 0.10)
		within(name+" p50 ms", so.LatencyMs.P50, si.LatencyMs.P50, 0.20)
		t.Logf("%s in the real run: attempts per request %.4g, p50 %.4g ms", name, sr.Amplification, sr.LatencyMs.P50)
	}
}

func service(t *testing.T, r *metrics.Result, name string) *metrics.ServiceSummary {
	t.Helper()
	for i := range r.Summary.Services {
		if r.Summary.Services[i].Name == name {
			return &r.Summary.Services[i]
		}
	}
	t.Fatalf("no service %s in the result", name)
	return nil
}
