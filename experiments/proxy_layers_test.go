package experiments

import "testing"

// TestProxyRetryLayers: the proxies' retries multiply with the app's, and
// every attempt at the database commits (its replies are lost): per
// request, nginx's 3 servers × the app's 3 attempts × HAProxy's 4 = 36
// commits, 35 of them duplicates; each fix removes its layer's factor.
func TestProxyRetryLayers(t *testing.T) {
	cases := []struct {
		variant                   string
		app, haproxy, db, dupsPer int64
	}{
		{"", 3, 9, 36, 35},
		{"retries-at-one-layer", 1, 3, 3, 2},
		{"nginx-default", 1, 3, 12, 11},
		{"disable-l7-retry", 3, 9, 9, 8},
		{"both-proxies-fixed", 1, 3, 3, 2},
		{"idempotency-keys", 3, 9, 36, 0},
	}
	for _, c := range cases {
		res := runExperiment(t, "proxy-retry-layers", run{variant: c.variant})[0]
		s := res.Summary
		n := s.Requests.Offered
		if n == 0 || s.Requests.Succeeded != 0 {
			t.Fatalf("%s: requests %+v, want offered and none succeeded (every reply is lost)", c.variant, s.Requests)
		}
		for svc, k := range map[string]int64{"nginx": 1, "app": c.app, "haproxy": c.haproxy, "db": c.db} {
			if got := service(t, res, svc).Attempts; got != k*n {
				t.Errorf("%q: %s attempts = %d, want %d × %d offered", c.variant, svc, got, k, n)
			}
		}
		if s.Duplicates != c.dupsPer*n {
			t.Errorf("%q: duplicates = %d, want %d × %d offered", c.variant, s.Duplicates, c.dupsPer, n)
		}
	}
}
