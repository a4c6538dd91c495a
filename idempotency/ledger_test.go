package idempotency

import "testing"

func TestLedger(t *testing.T) {
	type fin struct {
		req  uint64
		view CallerView
	}
	tests := []struct {
		name     string
		executed []uint64 // executions, in order
		finish   []fin
		want     Totals
		wantLive int
	}{
		{"nothing executed, caller failed", nil, []fin{{1, Failed}},
			Totals{Requests: 1, Failed: 1}, 0},
		{"once, succeeded", []uint64{1}, []fin{{1, Succeeded}},
			Totals{Requests: 1, Succeeded: 1, Executions: 1}, 0},
		{"three executions: two duplicates", []uint64{1, 1, 1}, []fin{{1, Succeeded}},
			Totals{Requests: 1, Succeeded: 1, Executions: 3, Duplicates: 2}, 0},
		{"unknown split by whether the effect happened", []uint64{1, 2, 2}, []fin{{1, Unknown}, {2, Unknown}, {3, Unknown}},
			Totals{Requests: 3, Unknown: 3, Executions: 3, Duplicates: 1, UnknownCommitted: 2, UnknownNotCommitted: 1}, 0},
		{"failed although executed", []uint64{4}, []fin{{4, Failed}},
			Totals{Requests: 1, Failed: 1, Executions: 1, FailedCommitted: 1}, 0},
		{"live requests are not in totals", []uint64{1, 2, 3, 3}, []fin{{2, Succeeded}},
			Totals{Requests: 1, Succeeded: 1, Executions: 1}, 2},
		{"invalid view counts as unknown", []uint64{5}, []fin{{5, CallerView(9)}},
			Totals{Requests: 1, Unknown: 1, Executions: 1, UnknownCommitted: 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Ledger
			for _, r := range tt.executed {
				l.Executed(r)
			}
			for _, f := range tt.finish {
				l.Finish(f.req, f.view)
			}
			if got := l.Totals(); got != tt.want {
				t.Errorf("totals\n got %+v\nwant %+v", got, tt.want)
			}
			if l.Live() != tt.wantLive {
				t.Errorf("Live() = %d, want %d", l.Live(), tt.wantLive)
			}
		})
	}
}

func TestCallerViewString(t *testing.T) {
	for v, want := range map[CallerView]string{Succeeded: "succeeded", Failed: "failed", Unknown: "unknown", 7: "caller_view(7)"} {
		if v.String() != want {
			t.Errorf("%d: %q, want %q", v, v.String(), want)
		}
	}
}
