package idempotency

import "testing"

func TestLedger(t *testing.T) {
	type fold struct {
		n    int64 // executions of the request's effect
		view CallerView
	}
	tests := []struct {
		name  string
		folds []fold
		want  Totals
	}{
		{"nothing executed, caller failed", []fold{{0, Failed}},
			Totals{Requests: 1, Failed: 1}},
		{"once, succeeded", []fold{{1, Succeeded}},
			Totals{Requests: 1, Succeeded: 1, Executions: 1}},
		{"three executions: two duplicates", []fold{{3, Succeeded}},
			Totals{Requests: 1, Succeeded: 1, Executions: 3, Duplicates: 2}},
		{"unknown split by whether the effect happened", []fold{{1, Unknown}, {2, Unknown}, {0, Unknown}},
			Totals{Requests: 3, Unknown: 3, Executions: 3, Duplicates: 1, UnknownCommitted: 2, UnknownNotCommitted: 1}},
		{"failed although executed", []fold{{1, Failed}},
			Totals{Requests: 1, Failed: 1, Executions: 1, FailedCommitted: 1}},
		{"invalid view counts as unknown", []fold{{1, CallerView(9)}},
			Totals{Requests: 1, Unknown: 1, Executions: 1, UnknownCommitted: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Ledger
			for _, f := range tt.folds {
				l.Fold(f.n, f.view)
			}
			if got := l.Totals(); got != tt.want {
				t.Errorf("totals\n got %+v\nwant %+v", got, tt.want)
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
