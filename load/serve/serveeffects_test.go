package serve

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// loadScenario loads the scenario in testdata/file, with sets.
func loadScenario(t *testing.T, file string, sets ...string) *topology.Scenario {
	t.Helper()
	sc, err := topology.Load(filepath.Join("testdata", file), sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// bothModes runs the scenario in testdata/file, with sets, in the
// simulator and in serve (on the bubble's clock).
func bothModes(t *testing.T, file string, sets ...string) (simS, serveS metrics.Summary) {
	t.Helper()
	sc := loadScenario(t, file, sets...)
	simRes, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return simRes.Summary, runInMemory(t, sc, ScenarioOptions{}).Summary
}

// TestServeExternalEffectDuplicates: one lost reply and one retry execute
// the e-mail step twice in both modes: without dedupe two e-mails are
// delivered (one duplicate external effect); a channel deduplicating by
// key delivers one and absorbs one. The simulator's
// TestExternalEffectDuplicates, served.
func TestServeExternalEffectDuplicates(t *testing.T) {
	for _, tc := range []struct {
		dedupe string
		want   metrics.Effects
	}{
		{"none", metrics.Effects{Sent: 2, Delivered: 2, Duplicates: 1}},
		{"key", metrics.Effects{Sent: 2, Delivered: 1, Absorbed: 1}},
	} {
		t.Run(tc.dedupe, func(t *testing.T) {
			simS, serveS := bothModes(t, "email.yaml", "services.mailer.external_effect.dedupe="+tc.dedupe)
			for _, run := range []struct {
				name string
				s    metrics.Summary
			}{{"simulator", simS}, {"serve", serveS}} {
				if run.s.Requests.Succeeded != 1 {
					t.Fatalf("%s: requests %+v, want 1 succeeded", run.name, run.s.Requests)
				}
				if fx := serviceNamed(t, run.s, "mailer").Effects; fx == nil || *fx != tc.want {
					t.Errorf("%s: mailer effects %+v, want %+v", run.name, fx, tc.want)
				}
				if fx := serviceNamed(t, run.s, "app").Effects; fx != nil {
					t.Errorf("%s: app effects %+v, want none (it has no external effect)", run.name, *fx)
				}
			}
		})
	}
}

// TestServeConflictRetries: two writers of one entity, the second
// reading before the first writes. A retry of only the write step
// overwrites the first writer's update (one lost update); a redo of the
// whole read-modify-write reads again and commits (one more write); with
// one read-modify-write allowed the second answers conflict. Exact
// counts, the same in both modes (the simulator's TestConflictRetries and
// TestConflictAborts).
func TestServeConflictRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sets      []string
		want      metrics.VersionedWrites
		succeeded int64
	}{
		{"step", []string{"services.accounts.versioned_write.retry=step"},
			metrics.VersionedWrites{Writes: 2, Conflicts: 1, LostUpdates: 1, ConflictRate: 0.5}, 2},
		{"operation", []string{"services.accounts.versioned_write.retry=operation"},
			metrics.VersionedWrites{Writes: 3, Conflicts: 1, Redone: 1, ConflictRate: 1.0 / 3}, 2},
		{"aborted", []string{"services.accounts.versioned_write.retry=operation", "services.accounts.versioned_write.attempts=1"},
			metrics.VersionedWrites{Writes: 2, Conflicts: 1, Aborted: 1, ConflictRate: 0.5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simS, serveS := bothModes(t, "conflict.yaml", tc.sets...)
			for _, run := range []struct {
				name string
				s    metrics.Summary
			}{{"simulator", simS}, {"serve", serveS}} {
				if run.s.Requests.Offered != 2 || run.s.Requests.Succeeded != tc.succeeded {
					t.Errorf("%s: requests %+v, want 2 offered, %d succeeded", run.name, run.s.Requests, tc.succeeded)
				}
				if got := serviceNamed(t, run.s, "accounts").VersionedWrites; got == nil || *got != tc.want {
					t.Errorf("%s: versioned writes %+v, want %+v", run.name, got, tc.want)
				}
			}
		})
	}
}

// TestServeLostUpdatesAgree: Poisson writers at λ = 1000/s over K = 20
// entities, w = 10ms between each read and its write, retry: step (every
// write commits once). Each write conflicts — a lost update — with
// probability 1 − exp(−λw/K) = 0.393 (model.ConflictProbability). Over
// n ≈ 5000 writes the lost-update rate has sd √(p(1−p)/n) = 0.0069; each
// mode within 4 sd (0.028) of the closed form, the two within 4·√2 sd.
func TestServeLostUpdatesAgree(t *testing.T) {
	simS, serveS := bothModes(t, "conflict.yaml", "duration=5s", "seed=7", "workload.arrival=poisson",
		"workload.rate=1000", "services.accounts.workers=1000", "services.accounts.versioned_write.entities=20")
	p := model.ConflictProbability(1000, 10*time.Millisecond, 20)
	rate := func(name string, s metrics.Summary) float64 {
		vw := serviceNamed(t, s, "accounts").VersionedWrites
		if vw == nil || vw.Writes < 4000 {
			t.Fatalf("%s: versioned writes %+v, want about 5000", name, vw)
		}
		sd := math.Sqrt(p * (1 - p) / float64(vw.Writes))
		r := float64(vw.LostUpdates) / float64(vw.Writes)
		if math.Abs(r-p) > 4*sd {
			t.Errorf("%s: lost-update rate %.4f, want %.4f ± %.4f", name, r, p, 4*sd)
		}
		t.Logf("%s: %d writes, %d lost updates (%.4f; closed form %.4f)", name, vw.Writes, vw.LostUpdates, r, p)
		return r
	}
	rs, rv := rate("simulator", simS), rate("serve", serveS)
	if sd := math.Sqrt(2 * p * (1 - p) / 5000); math.Abs(rs-rv) > 4*sd {
		t.Errorf("lost-update rate: simulator %.4f, serve %.4f, want within %.4f", rs, rv, 4*sd)
	}
}

// TestServeIrrevocable: the simulator's irrevocable cases, served, with
// the same exact counts. A payment handed irrevocably to a deduplicating
// channel whose first reply is lost: the user's 30ms deadline passes (it
// sees UNKNOWN), yet past the irrevocable step neither the deadline nor
// cancel_on_timeout stops the shop's retry, which the channel absorbs. An
// irrevocable parallel group met by its fast member leaves the slow
// member's attempt running to its effect; without irrevocable it is
// cancelled before it.
func TestServeIrrevocable(t *testing.T) {
	t.Run("payment", func(t *testing.T) {
		// The client propagates the user's deadline, so the shop's
		// attempt knows it: only the irrevocable step's rule lets the
		// retry past it.
		simS, serveS := bothModes(t, "payment.yaml", "workload.client.propagate_deadline=true")
		for _, run := range []struct {
			name string
			s    metrics.Summary
		}{{"simulator", simS}, {"serve", serveS}} {
			s := run.s
			if s.Requests.Unknown != 1 {
				t.Errorf("%s: requests %+v, want 1 unknown (the deadline passed at 30ms)", run.name, s.Requests)
			}
			if want := (metrics.Effects{Sent: 2, Delivered: 1, Absorbed: 1}); serviceNamed(t, s, "channel").Effects == nil || *serviceNamed(t, s, "channel").Effects != want {
				t.Errorf("%s: channel effects %+v, want %+v", run.name, serviceNamed(t, s, "channel").Effects, want)
			}
			if want := (metrics.Irrevocable{Sent: 1, Unknown: 1}); s.Irrevocable == nil || *s.Irrevocable != want {
				t.Errorf("%s: irrevocable %+v, want %+v", run.name, s.Irrevocable, want)
			}
		}
	})
	for _, tc := range []struct {
		set  string
		sent int64
	}{
		{"services.shop.calls.0.irrevocable=true", 1},
		{"services.shop.calls.0.irrevocable=false", 0},
	} {
		t.Run(tc.set, func(t *testing.T) {
			simS, serveS := bothModes(t, "irrevocable-group.yaml", tc.set)
			for _, run := range []struct {
				name string
				s    metrics.Summary
			}{{"simulator", simS}, {"serve", serveS}} {
				if run.s.Requests.Succeeded != 1 {
					t.Fatalf("%s: requests %+v, want 1 succeeded", run.name, run.s.Requests)
				}
				if fx := serviceNamed(t, run.s, "slow").Effects; fx == nil || fx.Sent != tc.sent {
					t.Errorf("%s: slow effects %+v, want %d sent", run.name, fx, tc.sent)
				}
			}
		})
	}
}
