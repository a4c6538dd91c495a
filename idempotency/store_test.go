package idempotency

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// step is one instant of a time script: an operation on the store and what
// it must answer. Begin's fence is remembered under as; Commit and Abort use
// the fence remembered under as.
type step struct {
	at     time.Duration
	op     string // begin, commit, abort
	scope  string
	key    string
	digest uint64
	as     string
	result Result

	want      Decision
	wantSaved Result
	wantErr   error
	// newerThan names an earlier owner whose fence an Execute must exceed.
	newerThan string
}

func runScript(t *testing.T, c Config, steps []step) {
	t.Helper()
	s, err := NewStore(c)
	if err != nil {
		t.Fatal(err)
	}
	fences := map[string]uint64{}
	var last uint64
	for n, st := range steps {
		scope := st.scope
		if scope == "" {
			scope = "svc"
		}
		where := func() string {
			return strings.Join([]string{st.op, scope, st.key, st.as, st.at.String()}, " ")
		}
		switch st.op {
		case "begin":
			d, f, saved := s.Begin(st.at, scope, st.key, st.digest)
			if d != st.want {
				t.Fatalf("step %d (%s): decision %v, want %v", n, where(), d, st.want)
			}
			if (f != 0) != (d == Execute) {
				t.Fatalf("step %d (%s): fence %d with decision %v", n, where(), f, d)
			}
			if d == Execute {
				if f <= last {
					t.Fatalf("step %d (%s): fence %d not above previous fence %d", n, where(), f, last)
				}
				last = f
				fences[st.as] = f
				if st.newerThan != "" && f <= fences[st.newerThan] {
					t.Fatalf("step %d (%s): fence %d not above %s's %d", n, where(), f, st.newerThan, fences[st.newerThan])
				}
			}
			if saved != st.wantSaved {
				t.Fatalf("step %d (%s): saved %+v, want %+v", n, where(), saved, st.wantSaved)
			}
		case "commit", "abort":
			f, ok := fences[st.as]
			if !ok {
				t.Fatalf("step %d: script error: no owner %q", n, st.as)
			}
			if st.op == "commit" {
				err = s.Commit(st.at, scope, st.key, f, st.result)
			} else {
				err = s.Abort(st.at, scope, st.key, f)
			}
			if !errors.Is(err, st.wantErr) || (err == nil) != (st.wantErr == nil) {
				t.Fatalf("step %d (%s): err %v, want %v", n, where(), err, st.wantErr)
			}
		default:
			t.Fatalf("step %d: script error: op %q", n, st.op)
		}
	}
}

const ms = time.Millisecond

func TestStoreScripts(t *testing.T) {
	c := Config{Retention: 10 * time.Second, Lease: 2 * time.Second, Tombstone: 5 * time.Second}
	ok := Result{Status: 201, Body: "created"}
	tests := []struct {
		name  string
		c     Config
		steps []step
	}{
		{"owner then replay", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 1 * time.Second, op: "commit", key: "k", as: "A", result: ok},
			{at: 2 * time.Second, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
			{at: 9999 * ms, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
		}},
		{"duplicate while processing is in progress", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 1 * time.Second, op: "begin", key: "k", digest: 1, want: InProgress},
			{at: 1999 * ms, op: "begin", key: "k", digest: 1, want: InProgress},
			{at: 1999 * ms, op: "commit", key: "k", as: "A", result: ok},
			{at: 1999 * ms, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
		}},
		{"different digest conflicts, processing or completed", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 500 * ms, op: "begin", key: "k", digest: 2, want: Conflict},
			{at: 3 * time.Second, op: "begin", key: "k", digest: 2, want: Conflict}, // lease over: still no takeover
			{at: 3 * time.Second, op: "commit", key: "k", as: "A", result: ok},
			{at: 4 * time.Second, op: "begin", key: "k", digest: 2, want: Conflict},
			{at: 4 * time.Second, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
		}},
		{"lease expiry takeover fences the stale owner", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 2 * time.Second, op: "begin", key: "k", digest: 1, as: "B", want: Execute, newerThan: "A"},
			{at: 2500 * ms, op: "begin", key: "k", digest: 1, want: InProgress},
			{at: 2500 * ms, op: "commit", key: "k", as: "A", result: Result{Status: 500}, wantErr: ErrFenced},
			{at: 2500 * ms, op: "abort", key: "k", as: "A", wantErr: ErrFenced},
			{at: 3 * time.Second, op: "commit", key: "k", as: "B", result: ok},
			{at: 3 * time.Second, op: "commit", key: "k", as: "B", result: ok, wantErr: ErrCompleted},
			{at: 3 * time.Second, op: "commit", key: "k", as: "A", result: ok, wantErr: ErrFenced},
			{at: 4 * time.Second, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
			// Retention restarted with B at 2s: still replayed at 11s.
			{at: 11 * time.Second, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
			{at: 12 * time.Second, op: "begin", key: "k", digest: 1, want: Expired},
		}},
		{"late commit without takeover is accepted", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 5 * time.Second, op: "commit", key: "k", as: "A", result: ok},
			{at: 6 * time.Second, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
		}},
		{"abort then retry owns", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 100 * ms, op: "abort", key: "k", as: "A"},
			{at: 100 * ms, op: "abort", key: "k", as: "A", wantErr: ErrNoRecord},
			{at: 100 * ms, op: "commit", key: "k", as: "A", wantErr: ErrNoRecord},
			{at: 200 * ms, op: "begin", key: "k", digest: 1, as: "B", want: Execute, newerThan: "A"},
			{at: 300 * ms, op: "commit", key: "k", as: "A", wantErr: ErrFenced},
			{at: 300 * ms, op: "abort", key: "k", as: "A", wantErr: ErrFenced},
			{at: 300 * ms, op: "commit", key: "k", as: "B", result: ok},
			{at: 400 * ms, op: "abort", key: "k", as: "B", wantErr: ErrCompleted},
			{at: 400 * ms, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
		}},
		{"retention expiry: late replay is reported, then forgotten", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 1 * time.Second, op: "commit", key: "k", as: "A", result: ok},
			{at: 9999 * ms, op: "begin", key: "k", digest: 1, want: Replay, wantSaved: ok},
			{at: 10 * time.Second, op: "begin", key: "k", digest: 1, want: Expired},
			{at: 12 * time.Second, op: "begin", key: "k", digest: 2, want: Expired},
			{at: 14999 * ms, op: "begin", key: "k", digest: 1, want: Expired},
			// Tombstone period over: the key is new again.
			{at: 15 * time.Second, op: "begin", key: "k", digest: 1, as: "C", want: Execute, newerThan: "A"},
		}},
		{"commit after expiry is refused", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 10 * time.Second, op: "commit", key: "k", as: "A", result: ok, wantErr: ErrExpired},
			{at: 15 * time.Second, op: "commit", key: "k", as: "A", result: ok, wantErr: ErrNoRecord},
		}},
		{"full when all live; only expired records are evicted", Config{Retention: 10 * time.Second, Lease: 2 * time.Second, MaxRecords: 2}, []step{
			{at: 0, op: "begin", key: "k1", digest: 1, as: "A", want: Execute},
			{at: 1 * time.Second, op: "begin", key: "k2", digest: 1, as: "B", want: Execute},
			{at: 1 * time.Second, op: "begin", key: "k3", digest: 1, want: Full},
			{at: 1 * time.Second, op: "begin", key: "k1", digest: 1, want: InProgress},
			{at: 1 * time.Second, op: "commit", key: "k1", as: "A", result: ok},
			{at: 2 * time.Second, op: "begin", key: "k3", digest: 1, want: Full}, // completed is still live
			{at: 9999 * ms, op: "begin", key: "k3", digest: 1, want: Full},
			// k1 expires at 10s and is the only tombstone: k3 evicts it.
			{at: 10 * time.Second, op: "begin", key: "k3", digest: 1, as: "C", want: Execute},
			{at: 10 * time.Second, op: "begin", key: "k2", digest: 1, as: "B2", want: Execute, newerThan: "B"}, // k2 taken over, not evicted
			{at: 10 * time.Second, op: "begin", key: "k1", digest: 1, want: Full},
			{at: 11 * time.Second, op: "begin", key: "k4", digest: 1, want: Full},
		}},
		{"scopes are separate", c, []step{
			{at: 0, op: "begin", scope: "a", key: "k", digest: 1, as: "A", want: Execute},
			{at: 0, op: "begin", scope: "b", key: "k", digest: 2, as: "B", want: Execute},
			{at: 0, op: "commit", scope: "b", key: "k", as: "B", result: ok},
			{at: 0, op: "begin", scope: "a", key: "k", digest: 1, want: InProgress},
			{at: 0, op: "commit", scope: "a", key: "k", as: "B", wantErr: ErrFenced},
		}},
		{"time never goes backwards", c, []step{
			{at: 0, op: "begin", key: "k", digest: 1, as: "A", want: Execute},
			{at: 3 * time.Second, op: "begin", key: "k", digest: 1, as: "B", want: Execute},
			{at: 1 * time.Second, op: "begin", key: "k", digest: 1, want: InProgress},
			{at: 4 * time.Second, op: "commit", key: "k", as: "B", result: ok},
			{at: 13 * time.Second, op: "begin", key: "k", digest: 1, want: Expired},
			{at: 1 * time.Second, op: "begin", key: "k", digest: 1, want: Expired},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runScript(t, tt.c, tt.steps) })
	}
}

func TestStats(t *testing.T) {
	s, err := NewStore(Config{Retention: 10 * time.Second, Lease: time.Second, MaxRecords: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, a, _ := s.Begin(0, "s", "a", 1)
	s.Begin(0, "s", "a", 1)                            // in progress
	s.Begin(0, "s", "a", 2)                            // conflict
	_, b, _ := s.Begin(2*time.Second, "s", "a", 1)     // takeover
	s.Begin(2*time.Second, "s", "x", 1)                // execute: 2 live
	s.Begin(2*time.Second, "s", "y", 1)                // full
	_ = s.Commit(2*time.Second, "s", "a", a, Result{}) // fenced
	_ = s.Commit(2*time.Second, "s", "a", b, Result{})
	s.Begin(3*time.Second, "s", "a", 1)  // replay
	s.Begin(12*time.Second, "s", "a", 1) // expired (x and a are tombstones)
	got := s.Stats()
	want := Stats{Executes: 3, Takeovers: 1, Replays: 1, InProgress: 1, Conflicts: 1, Expired: 1, Full: 1,
		Commits: 1, Fenced: 1, Live: 0, Tombstones: 2}
	if got != want {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	if s.Len() != 2 {
		t.Fatalf("Len = %d, want 2", s.Len())
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		c       Config
		wantErr string
	}{
		{Config{}, ""},
		{Config{Retention: time.Minute, Lease: time.Minute}, ""},
		{Config{Retention: -1}, "retention: must be >= 0"},
		{Config{Lease: -time.Second}, "lease: must be >= 0"},
		{Config{InProgressRetryAfter: -1}, "in_progress_retry_after"},
		{Config{Tombstone: -1}, "tombstone"},
		{Config{MaxRecords: -5}, "max_records: must be >= 0, got -5"},
		{Config{Retention: time.Second}, "lease: must be <= retention (1s), got 10s"},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tt.c, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%+v: error %v, want one containing %q", tt.c, err, tt.wantErr)
		}
		if _, err := NewStore(tt.c); err == nil {
			t.Errorf("NewStore(%+v) accepted an invalid config", tt.c)
		}
	}
	d := Config{}.WithDefaults()
	want := Config{Retention: 24 * time.Hour, Lease: 10 * time.Second, InProgressRetryAfter: 100 * ms,
		Tombstone: 24 * time.Hour, MaxRecords: 1_000_000}
	if d != want {
		t.Errorf("defaults %+v, want %+v", d, want)
	}
}

func TestDecisionString(t *testing.T) {
	want := []string{"execute", "replay", "in_progress", "conflict", "expired", "full"}
	for d := Execute; d < numDecisions; d++ {
		if d.String() != want[d] {
			t.Errorf("Decision(%d).String() = %q, want %q", d, d, want[d])
		}
	}
	if got := Decision(99).String(); got != "decision(99)" {
		t.Errorf("Decision(99).String() = %q", got)
	}
}

func TestZeroValues(t *testing.T) {
	var s Store
	if got := s.Config(); got != (Config{}).WithDefaults() {
		t.Errorf("zero Store config %+v", got)
	}
	d, f, _ := s.Begin(0, "svc", "k", 1)
	if d != Execute {
		t.Fatalf("zero Store: first Begin %v, want execute", d)
	}
	if err := s.Commit(DefaultLease, "svc", "k", f, Result{Status: 1}); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := s.Begin(DefaultRetention-1, "svc", "k", 1); d != Replay {
		t.Fatalf("zero Store: Begin within default retention %v, want replay", d)
	}
	if d, _, _ := s.Begin(DefaultRetention, "svc", "k", 1); d != Expired {
		t.Fatalf("zero Store: Begin at default retention %v, want expired", d)
	}
}
