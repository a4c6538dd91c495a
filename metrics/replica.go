package metrics

import "strconv"

// addReplicas adds one part's per-replica rows into the merged ones, by
// replica: counts summed, queue maxima the largest, utilization and mean
// queue weighted by the part's simulated time (the caller divides by the
// merged time, as for the service's own).
func addReplicas(into, part []ReplicaSummary, simTimeS float64) []ReplicaSummary {
	for _, r := range part {
		i := 0
		for i < len(into) && into[i].Replica != r.Replica {
			i++
		}
		if i == len(into) {
			into = append(into, ReplicaSummary{Replica: r.Replica})
		}
		m := &into[i]
		m.Attempts += r.Attempts
		m.Succeeded += r.Succeeded
		m.Failed += r.Failed
		m.Rejected += r.Rejected
		m.TimedOut += r.TimedOut
		m.Shed += r.Shed
		m.QueueMax = max(m.QueueMax, r.QueueMax)
		m.Utilization += r.Utilization * simTimeS
		m.QueueMean += r.QueueMean * simTimeS
	}
	return into
}

// Per-replica metrics of a service with more than one replica: a column is
// Column(metric, ReplicaEntity(service, k)), e.g. "replica_utilization/db#2".
// They are written only for services with replicas, so the series of a
// scenario without any keeps exactly its columns.
const (
	MetricReplicaAttempts    = "replica_attempts"
	MetricReplicaUtilization = "replica_utilization"
	MetricReplicaQueue       = "replica_queue"
)

// ReplicaEntity names replica k of service in per-replica columns.
func ReplicaEntity(service string, k int) string { return service + "#" + strconv.Itoa(k) }
