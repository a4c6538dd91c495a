package collapse

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SLO
		err  string
	}{
		{in: "collapse(system(db)>=500, 24h)<1e-3", want: SLO{Level{System, "db", 500}, 24 * time.Hour, 1e-3}},
		{in: " collapse( inflight>=1e4 ,90m ) < 0.05 ", want: SLO{Level{Inflight, "", 1e4}, 90 * time.Minute, 0.05}},
		{in: "collapse(system(db)>=500 24h)<1e-3", err: "separated by a comma"},
		{in: "collapse(system(db)>=500, 24h)<=1e-3", err: "want < BOUND"},
		{in: "collapse(system(db)>=500, 24h)>1e-3", err: "want < BOUND"},
		{in: "collapse(system(db)>=500, 24h)<2", err: "probability in (0, 1)"},
		{in: "collapse(system(db)>=500, soon)<0.1", err: `horizon "soon"`},
		{in: "collapse(latency(db)>=5, 1h)<0.1", err: "unknown quantity"},
		{in: "p99<300ms", err: "want collapse(LEVEL, DURATION)<BOUND"},
	} {
		got, err := ParseSLO(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSLO(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSLO(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := ParseSLO(got.String()); err != nil || again != got {
			t.Errorf("ParseSLO(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
}

// TestSearchFindsTheBoundary searches the M/M/1's highest arrival rate at
// which reaching 20 within an hour stays below 1 %, with the exact chain,
// and checks the bracket against the boundary found directly by bisecting
// the exact probability (which rises with the rate).
func TestSearchFindsTheBoundary(t *testing.T) {
	const bound = 0.01
	within := time.Hour
	sc := mm1(t, 0.5, 1, 1000)
	s := Search{SLO: SLO{Level: systemLevel(20), Within: within, Bound: bound}, Param: "workload.rate", Lo: 0.1, Hi: 0.95, Resolution: 0.005}
	rep, err := s.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Method != "ctmc" || rep.Holds == nil || rep.FailsAt == nil {
		t.Fatalf("report %+v: want a ctmc bracket", rep)
	}
	lo, hi := 0.1, 0.95
	for hi-lo > 1e-6 {
		mid := (lo + hi) / 2
		if exactMM1(t, mid, 1, 20, within) < bound {
			lo = mid
		} else {
			hi = mid
		}
	}
	if !(*rep.Holds <= lo && hi <= *rep.FailsAt && *rep.FailsAt-*rep.Holds <= s.Resolution) {
		t.Errorf("bracket [%g, %g], boundary %g: want it inside a bracket no wider than %g", *rep.Holds, *rep.FailsAt, lo, s.Resolution)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "holds up to workload.rate=") {
		t.Errorf("text report %q, %v", b.String(), err)
	}
}

// FuzzParseSLO checks that any input parses or fails with an error, never
// a panic, and that a parsed objective survives String.
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"collapse(system(db)>=500, 24h)<1e-3", "collapse(inflight>=3,1s)<0.5", "collapse(,)<", "collapse((((", "collapse(queue(a)>=1, 1h))<0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSLO(s)
		if err != nil {
			return
		}
		again, err := ParseSLO(slo.String())
		if err != nil || again != slo {
			t.Fatalf("ParseSLO(%q) = %+v; its String %q reads back as %+v, %v", s, slo, slo.String(), again, err)
		}
	})
}
