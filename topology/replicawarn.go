package topology

import "fmt"

// replicaWarnings flags the replica settings of a call (at) that do
// nothing because its callee runs one replica: balance, outlier_detection
// and retry.other_host all choose among replicas.
func (s *Scenario) replicaWarnings(at string, c *Call) []string {
	to := c.To
	if at == "workload.client" {
		to = s.Workload.Entry
	}
	callee := s.Service(to)
	if callee == nil {
		return nil
	}
	if callee.ReplicaCount() > 1 {
		if c.ZoneAware && len(callee.Zones) == 0 {
			return []string{fmt.Sprintf("%s.zone_aware: does nothing, %s's replicas have no zones (set services.%s.zones)", at, to, to)}
		}
		return nil
	}
	var keys []string
	if c.Balance != "" {
		keys = append(keys, "balance")
	}
	if c.OutlierDetection != nil {
		keys = append(keys, "outlier_detection")
	}
	if c.Retry.OtherHost {
		keys = append(keys, "retry.other_host")
	}
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s.%s: does nothing, %s runs one replica (set services.%s.replicas)", at, k, to, to))
	}
	return out
}

// fleetWarnings flags a client fleet whose retry budget has a floor: each
// instance keeps its own, so the fleet's floor is instances times it
// (docs/experiments/fleet-budgets.md).
func (s *Scenario) fleetWarnings() []string {
	w := &s.Workload
	b := w.Client.Budget
	if w.Instances <= 1 || b == nil {
		return nil
	}
	switch {
	case b.MinConcurrency > 0:
		return []string{fmt.Sprintf("workload.client.budget.min_concurrency: each of the %d instances keeps its own budget, so the fleet may have %d retries in flight whatever the load",
			w.Instances, w.Instances*b.MinConcurrency)}
	case b.MinPerSec > 0:
		return []string{fmt.Sprintf("workload.client.budget.min_per_sec: each of the %d instances keeps its own budget, so the fleet may retry %g times a second whatever the load",
			w.Instances, float64(w.Instances)*b.MinPerSec)}
	}
	return nil
}
