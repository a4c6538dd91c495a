package sim

import (
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/metrics"
)

// A service with replicas is one service record per replica, each with its
// own callee machine (workers, queue, faults, random stream) and its own
// edges to its callees; they share the service's latency counts and
// idempotency store. run.services holds the first replica of each service,
// whose reps lists them all; the output sums them into the service's row
// and, with more than one, lists each in ServiceSummary.Replicas.

// pickReplica chooses the replica of e's callee for the next attempt of cr,
// by e's balancer; with retry.other_host the replicas cr already tried are
// avoided while another remains.
func (m *run) pickReplica(cr *callRun, e *edge) *service {
	return e.reps[e.bal.PickNext(m.eng.Now(), e.otherHost, &cr.tried)]
}

// svcTotals are a service's counters and time integrals summed over its
// replicas.
type svcTotals struct {
	c                       svcCounters
	busyArea, queueArea     float64
	warmBusy, warmQueue     float64
	ivBusy, ivQueue         float64
	workers, busy, inflight int
	qlen, queueMax, ivQMax  int
	ivAttempts, ivRejected  int64
	ivShed                  int64
}

// totalsOf sums s's replicas, its machines advanced to their last change.
// Queue maxima are the longest queue of any one replica.
func totalsOf(s *service) svcTotals {
	var t svcTotals
	for _, r := range s.reps {
		c := &r.c
		t.c.attempts += c.attempts
		t.c.succeeded += c.succeeded
		t.c.failed += c.failed
		t.c.rejected += c.rejected
		t.c.timedOut += c.timedOut
		t.c.wasted += c.wasted
		t.c.shed += c.shed
		t.c.executions += c.executions
		b, q := r.cm.Areas()
		t.busyArea += b
		t.queueArea += q
		wb, wq := r.cm.MeasureStart()
		t.warmBusy += wb
		t.warmQueue += wq
		t.ivBusy += r.ivBusy
		t.ivQueue += r.ivQueue
		t.workers += r.cm.Workers()
		t.busy += r.cm.Busy()
		t.inflight += r.cm.Inflight()
		t.qlen += r.qlen()
		t.queueMax = max(t.queueMax, r.cm.QueueMax())
		t.ivQMax = max(t.ivQMax, r.ivQMax)
		t.ivAttempts += r.ivAttempts
		t.ivRejected += r.ivRejected
		t.ivShed += r.ivShed
	}
	return t
}

// replicaSummaries are the per-replica rows of a service with more than
// one replica (nil otherwise); span is the measured time after warm-up.
func replicaSummaries(s *service, span float64) []metrics.ReplicaSummary {
	if len(s.reps) < 2 {
		return nil
	}
	out := make([]metrics.ReplicaSummary, 0, len(s.reps))
	for _, r := range s.reps {
		rs := metrics.ReplicaSummary{Replica: r.rep, Attempts: r.c.attempts, Succeeded: r.c.succeeded,
			Failed: r.c.failed, Rejected: r.c.rejected, TimedOut: r.c.timedOut, Shed: r.c.shed,
			QueueMax: int64(r.cm.QueueMax())}
		if span > 0 {
			b, q := r.cm.Measured()
			rs.Utilization = b / (span * float64(r.cm.Workers()))
			rs.QueueMean = q / span
		}
		out = append(out, rs)
	}
	return out
}

// ejections is the number of outlier ejections made by the balancers of
// the edges merged into o.
func (o *outEdge) ejections() int64 {
	var n int64
	for _, e := range o.members {
		if e.bal != nil {
			n += e.bal.Ejections()
		}
	}
	return n
}

// delay is the one-way network delay of an attempt over e to replica to:
// the edge's network, plus cross_zone_network when to is in another zone.
// Only edges with either (hasNet) call it.
func (e *edge) delay(to *service) time.Duration {
	if e.netMean > 0 {
		return dist.Exp(e.pe.Rand, e.netMean) // what e.net.Sample draws
	}
	var d time.Duration
	if e.baseNet {
		d = e.net.Sample(e.pe.Rand)
	}
	if e.hasX && to.cfg.ZoneOf(to.rep) != e.zone {
		d += e.xnet.Sample(e.pe.Rand)
	}
	return d
}

// replicaColumns names the per-replica series columns of every service
// with more than one replica, in the order replicaValues fills them: none
// for a scenario without replicas.
func replicaColumns(m *run) []string {
	var cols []string
	for _, sv := range m.services {
		if len(sv.reps) < 2 {
			continue
		}
		for _, r := range sv.reps {
			e := metrics.ReplicaEntity(sv.name, r.rep)
			cols = append(cols, metrics.Column(metrics.MetricReplicaAttempts, e),
				metrics.Column(metrics.MetricReplicaUtilization, e), metrics.Column(metrics.MetricReplicaQueue, e))
		}
	}
	return cols
}

// replicaValues appends the interval's per-replica values of sv (its
// replicas' machines advanced to the row's end, their interval marks not
// yet reset) over a row wns long: attempts, utilization and mean queue.
func replicaValues(vals []float64, sv *service, wns float64) []float64 {
	if len(sv.reps) < 2 {
		return vals
	}
	for _, r := range sv.reps {
		queue, util := float64(r.qlen()), float64(r.cm.Busy())/float64(r.cm.Workers())
		if wns > 0 {
			b, q := r.cm.Areas()
			queue, util = (q-r.ivQueue)/wns, (b-r.ivBusy)/(wns*float64(r.cm.Workers()))
		}
		vals = append(vals, float64(r.ivAttempts), util, queue)
	}
	return vals
}
