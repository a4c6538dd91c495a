package serve

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
)

// serviceSummary is the summary of a service from its replicas' stats:
// their counts summed, utilization and queue over all their workers, the
// side-effect ledger the first keeps, and, with more than one replica,
// each replica's row; edges are the replicas' outgoing edges.
func serviceSummary(reps []*Service, offered int64) (metrics.ServiceSummary, []metrics.EdgeSummary) {
	var ss metrics.ServiceSummary
	var edges []metrics.EdgeSummary
	var busyS, queueS, elapsed float64
	workers := 0
	for i, svc := range reps {
		st := svc.Stats()
		c := st.Counted
		if i == 0 {
			ss.Name, ss.Executions, ss.Duplicates = st.Service, st.Executions, st.Duplicates
			ss.Consumer = st.Consumer
			ss.Effects, ss.VersionedWrites = st.Effects, st.VersionedWrites
			// Busy time is integrated over the measured window: from the
			// warm-up to now, drain included, as simulated.
			elapsed = st.MeasuredS
		}
		ss.Attempts += c.Attempts
		ss.Succeeded += c.Succeeded
		ss.Failed += c.Failed
		ss.Rejected += c.Rejected
		ss.TimedOut += c.TimedOut
		ss.Wasted += c.Wasted
		ss.Shed += c.Shed
		ss.QueueMax = max(ss.QueueMax, st.QueueMax)
		busyS += st.BusyS
		queueS += st.QueueS
		workers += st.Workers
		if len(reps) > 1 {
			rs := metrics.ReplicaSummary{Replica: st.Replica, Attempts: c.Attempts, Succeeded: c.Succeeded, Failed: c.Failed,
				Rejected: c.Rejected, TimedOut: c.TimedOut, Shed: c.Shed, QueueMax: st.QueueMax}
			if st.MeasuredS > 0 && st.Workers > 0 {
				rs.Utilization = st.BusyS / (float64(st.Workers) * st.MeasuredS)
				rs.QueueMean = st.QueueS / st.MeasuredS
			}
			ss.Replicas = append(ss.Replicas, rs)
		}
		edges = metrics.MergeEdges(edges, st.Edges)
	}
	ss.LatencyMs = metrics.LatencyOf(mergedHistogram(reps, (*Service).LatencyHistogram))
	if offered > 0 {
		ss.Amplification = float64(ss.Attempts) / float64(offered)
	}
	if elapsed > 0 && workers > 0 {
		ss.Utilization = busyS / (float64(workers) * elapsed)
		ss.QueueMean = queueS / elapsed
	}
	return ss, edges
}

// mergedHistogram is the replicas' histograms (hist), merged into the
// first one's copy (Service's histogram methods return copies).
func mergedHistogram(reps []*Service, hist func(*Service) *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	h := hist(reps[0])
	for _, r := range reps[1:] {
		h.Merge(hist(r))
	}
	return h
}

// replica samples one replica's columns, as the simulator's series has
// them: its attempts in the interval, utilization and queue now.
func (sm *sampler) replica(st Stats, attempts int64) {
	e := metrics.ReplicaEntity(st.Service, st.Replica)
	sm.add(metrics.MetricReplicaAttempts, e, float64(attempts))
	if st.Workers > 0 {
		sm.add(metrics.MetricReplicaUtilization, e, float64(st.Busy)/float64(st.Workers))
	}
	sm.add(metrics.MetricReplicaQueue, e, float64(st.Queue))
}
