package model

import "github.com/stormsim/stormsim/topology"

// Committer returns the index of the service that executes writes' side
// effects, or -1 when the scenario has no services. This is the one rule
// of both modes: the service marked commits: true (topology marks one when
// it loads a scenario), else the service reached from the entry by
// following, from each service, its first call (the first member of a
// parallel group) until a service that calls nothing. For gw -> [a, b]
// that is a: the first path is the one a request always takes.
func Committer(sc *topology.Scenario) int {
	for i := range sc.Services {
		if sc.Services[i].Commits {
			return i
		}
	}
	idx := func(name string) int {
		for i := range sc.Services {
			if sc.Services[i].Name == name {
				return i
			}
		}
		return -1
	}
	cur := idx(sc.Workload.Entry)
	seen := map[int]bool{}
	for cur >= 0 && !seen[cur] && len(sc.Services[cur].Calls) > 0 {
		seen[cur] = true
		c := sc.Services[cur].Calls[0]
		for c.To == "" && len(c.Parallel) > 0 {
			c = c.Parallel[0]
		}
		next := idx(c.To)
		if next < 0 || next == cur {
			break
		}
		cur = next
	}
	return cur
}
