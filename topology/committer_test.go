package topology

import "testing"

func TestCommitter(t *testing.T) {
	svc := func(name string, calls ...Call) Service {
		return Service{Name: name, Calls: calls}
	}
	to := func(n string) Call { return Call{To: n} }
	for _, tc := range []struct {
		name string
		sc   Scenario
		want int
	}{
		{"the marked one", Scenario{Workload: Workload{Entry: "a"},
			Services: []Service{svc("a", to("b")), {Name: "b", Commits: false}, {Name: "c", Commits: true}}}, 2},
		{"a chain ends at its last", Scenario{Workload: Workload{Entry: "a"},
			Services: []Service{svc("a", to("b")), svc("b", to("c")), svc("c")}}, 2},
		{"gw -> [a, b] commits at a", Scenario{Workload: Workload{Entry: "gw"},
			Services: []Service{svc("gw", Call{Parallel: []Call{to("a"), to("b")}}), svc("a"), svc("b")}}, 1},
		{"gw -> a, then b: the first call", Scenario{Workload: Workload{Entry: "gw"},
			Services: []Service{svc("gw", to("a"), to("b")), svc("a"), svc("b")}}, 1},
		{"an entry calling nothing", Scenario{Workload: Workload{Entry: "a"}, Services: []Service{svc("a")}}, 0},
		{"no services", Scenario{Workload: Workload{Entry: "a"}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sc.Committer(); got != tc.want {
				t.Errorf("Committer = %d, want %d", got, tc.want)
			}
		})
	}
}
