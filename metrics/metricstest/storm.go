// Package metricstest builds realistic synthetic results for tests of code
// that consumes metrics.Result (files, merges, plots, reports), without
// running the simulator.
//
// Storm describes a three-service chain (gateway → orders → db) hit by a
// capacity fault on orders from 20 s to 30 s: retries multiply the attempts
// reaching orders, its queue climbs to its limit, goodput falls and latency
// rises, and the system recovers only slowly after the fault ends. A
// second, short fault adds latency to db at 40 s. Every logical request is
// generated from its own index with a counter-based random stream, so any
// subset of requests is generated identically to the same requests inside
// the whole run: StormParts partitions the requests and its parts merge to
// exactly Storm's counters and histograms.
package metricstest

import (
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
)

// Shape of the synthetic run.
const (
	// Rate is the offered load in logical requests per second.
	Rate = 200
	// Duration is the arrival window; Interval the series bucket.
	Duration = 60 * time.Second
	Interval = time.Second
	seed     = 0x5707_3517
)

var services = []struct {
	name    string
	workers float64
	queue   float64 // queue limit
	peak    float64 // queue peak at full stress
}{{"gateway", 64, 1000, 25}, {"orders", 16, 200, 240}, {"db", 32, 500, 12}}

// Stress is the storm's intensity at time t in seconds, from 0 (calm) to 1:
// it ramps up through the orders fault, lingers after it (the retry load
// keeps the queue full) and decays by 45 s.
func Stress(t float64) float64 {
	switch {
	case t < 20:
		return 0.02
	case t < 30:
		return 0.2 + 0.8*(t-20)/10
	case t < 38:
		return 1 - 0.5*(t-30)/8
	case t < 45:
		return 0.5 - 0.48*(t-38)/7
	}
	return 0.02
}

// Storm returns the whole synthetic run.
func Storm() *metrics.Result { return build(1, 0) }

// StormParts returns the run split into n parts by request: request k goes
// to part k mod n. Merging the parts reproduces Storm.
func StormParts(n int) []*metrics.Result {
	parts := make([]*metrics.Result, n)
	for i := range parts {
		parts[i] = build(n, i)
	}
	return parts
}

// stream is a counter-based random source (SplitMix64): request k's draws
// depend only on k, never on which other requests were generated.
type stream uint64

func (s *stream) float() float64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// normal draws a standard normal variate (Box–Muller).
func (s *stream) normal() float64 {
	u1, u2 := s.float(), s.float()
	return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
}

// binom counts successes in n trials of probability p.
func (s *stream) binom(n int, p float64) int {
	k := 0
	for range n {
		if s.float() < p {
			k++
		}
	}
	return k
}

func build(n, part int) *metrics.Result {
	if n < 1 || part < 0 || part >= n {
		panic(fmt.Sprintf("metricstest: part %d of %d", part, n))
	}
	rows := int(Duration / Interval)
	iv := Interval.Seconds()
	cols := metrics.RunColumns()
	for _, s := range services {
		for _, m := range []string{metrics.MetricAttempts, metrics.MetricQueue, metrics.MetricQueueMax, metrics.MetricInflight, metrics.MetricUtilization, metrics.MetricRejected} {
			cols = append(cols, metrics.Column(m, s.name))
		}
	}
	cols = append(cols, "retries/gateway->orders", "retries/orders->db", "breaker_state/gateway->orders", "budget_level/gateway->orders")
	ts := &metrics.TimeSeries{Interval: Interval, Columns: cols, Rows: make([][]float64, rows)}
	col := func(name string) int {
		i := ts.Column(name)
		if i < 0 {
			panic("metricstest: no column " + name)
		}
		return i
	}
	r := &metrics.Result{
		Series:         ts,
		Latency:        metrics.NewLatencyHistogram(),
		ServiceLatency: map[string]*hdrhistogram.Histogram{},
		// Every attempt that was not refused succeeded.
		ServiceOKLatency: map[string]*hdrhistogram.Histogram{},
		Faults: []metrics.FaultWindow{
			{Service: "orders", At: 20 * time.Second, For: 10 * time.Second, Label: "orders capacity ×0.5"},
			{Service: "db", At: 40 * time.Second, For: 2 * time.Second, Label: "db +200ms"},
		},
	}
	for _, s := range services {
		r.ServiceLatency[s.name] = metrics.NewLatencyHistogram()
		r.ServiceOKLatency[s.name] = metrics.NewLatencyHistogram()
	}
	record := func(service string, d time.Duration) {
		metrics.RecordLatency(r.ServiceLatency[service], d)
		metrics.RecordLatency(r.ServiceOKLatency[service], d)
	}
	sum := &r.Summary
	sum.Scenario, sum.Seed, sum.Version, sum.Status = "synthetic-storm", 1, "test", metrics.StatusComplete
	sum.SimTimeS, sum.WindowS = Duration.Seconds(), Duration.Seconds()
	svc := make([]metrics.ServiceSummary, len(services))
	for i, s := range services {
		svc[i].Name = s.name
	}
	edges := []metrics.EdgeSummary{{From: "gateway", To: "orders"}, {From: "orders", To: "db"}}
	// busy and area accumulate whole-run worker-seconds and queue-seconds
	// per service, in integer microseconds so sums are exact.
	busy := make([]int64, len(services))
	area := make([]int64, len(services))

	for row := range rows {
		vals := make([]float64, len(cols))
		rowHist := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
		rowBusy := make([]int64, len(services))
		rowArea := make([]int64, len(services))
		for j := range Rate * int(iv) {
			k := row*Rate*int(iv) + j
			if k%n != part {
				continue
			}
			st := stream(seed ^ uint64(k)*0x2545f4914f6cdd1d)
			t := float64(row)*iv + (float64(j)+st.float())/Rate
			s := Stress(t)
			vals[col(metrics.ColOffered)]++
			sum.Requests.Offered++

			// Attempts: the client retries the gateway, the gateway
			// retries orders; each admitted orders attempt calls db once.
			gw := 1 + st.binom(2, 0.6*s)
			var ord, rej, dbAttempts int
			for range gw {
				a := 1 + st.binom(2, 0.7*s)
				ord += a
				for range a {
					if st.float() < 0.4*s {
						rej++
					} else {
						dbAttempts++
					}
				}
			}
			counts := []int{gw, ord, dbAttempts}
			for i, c := range counts {
				vals[col(metrics.Column(metrics.MetricAttempts, services[i].name))] += float64(c)
				svc[i].Attempts += int64(c)
			}
			vals[col("rejected/orders")] += float64(rej)
			svc[1].Rejected += int64(rej)
			vals[col("retries/gateway->orders")] += float64(ord - gw)
			edges[0].Calls += int64(gw)
			edges[0].Attempts += int64(ord)
			edges[0].Retries += int64(ord - gw)
			edges[1].Calls += int64(dbAttempts)
			edges[1].Attempts += int64(dbAttempts)

			// Per-attempt waits and service times, in µs.
			dbAdd := 0.0
			if t >= 40 && t < 42 {
				dbAdd = 200e3
			}
			wait := []float64{1e3 * (1 + 5*s), 250e3 * s * (0.5 + st.float()), 2e3}
			serve := []float64{1e3, 12e3 * (1 + s), 3e3 + dbAdd}
			// own draws one attempt's queueing and service time at service
			// i, accounts them, and returns their sum.
			own := func(i int) int64 {
				w := int64(wait[i] * (0.5 + st.float()))
				b := int64(serve[i] * math.Exp(0.4*st.normal()))
				rowArea[i] += w
				rowBusy[i] += b
				return w + b
			}
			// An attempt's latency runs from arrival to answer, so it
			// includes the downstream calls made while holding a worker.
			var ordersSum int64
			for range dbAttempts {
				db := own(2)
				record("db", time.Duration(db)*time.Microsecond)
				o := own(1) + db
				ordersSum += o
				record("orders", time.Duration(o)*time.Microsecond)
			}
			for range rej {
				metrics.RecordLatency(r.ServiceLatency["orders"], 50*time.Microsecond) // refused at once
			}
			for range gw {
				g := own(0) + ordersSum/int64(gw)
				record("gateway", time.Duration(g)*time.Microsecond)
			}

			// The logical request's outcome and end-to-end latency.
			if u := st.float(); u < 1-0.8*s {
				lat := 8e3*(1+15*s)*math.Exp(0.5*st.normal()) + dbAdd
				d := time.Duration(lat) * time.Microsecond
				metrics.RecordLatency(r.Latency, d)
				metrics.RecordLatency(rowHist, d)
				vals[col(metrics.ColSucceeded)]++
				sum.Requests.Succeeded++
				edges[0].Succeeded++
				svc[0].Succeeded++
			} else if u < 1-0.4*s {
				vals[col(metrics.ColFailed)]++
				sum.Requests.Failed++
				edges[0].Failed++
			} else {
				vals[col(metrics.ColUnknown)]++
				sum.Requests.Unknown++
				edges[0].Unknown++
				svc[0].TimedOut++
			}
		}
		mid := (float64(row) + 0.5) * iv
		s := Stress(mid)
		vals[col(metrics.ColGoodput)] = vals[col(metrics.ColSucceeded)] / iv
		// Per-row latency percentiles; partial-row shards see fewer.
		if rowHist.TotalCount() > 0 {
			vals[col(metrics.ColLatencyP50)] = float64(rowHist.ValueAtQuantile(50)) / 1000
			vals[col(metrics.ColLatencyP99)] = float64(rowHist.ValueAtQuantile(99)) / 1000
		}
		for i, sv := range services {
			vals[col(metrics.Column(metrics.MetricQueue, sv.name))] = float64(rowArea[i]) / 1e6 / iv
			vals[col(metrics.Column(metrics.MetricInflight, sv.name))] = float64(rowArea[i]+rowBusy[i]) / 1e6 / iv
			vals[col(metrics.Column(metrics.MetricUtilization, sv.name))] = float64(rowBusy[i]) / 1e6 / (sv.workers * iv)
			// The peak queue is a property of the shared system, the same
			// whichever requests a part holds.
			qmax := math.Min(sv.queue, math.Round(s*s*sv.peak+2))
			vals[col(metrics.Column(metrics.MetricQueueMax, sv.name))] = qmax
			svc[i].QueueMax = max(svc[i].QueueMax, int64(qmax))
			busy[i] += rowBusy[i]
			area[i] += rowArea[i]
		}
		state := 0.0 // closed
		switch {
		case mid >= 24 && mid < 29, mid >= 31 && mid < 34:
			state = 1 // open
		case mid >= 29 && mid < 31, mid >= 34 && mid < 35:
			state = 2 // half-open
		}
		vals[col("breaker_state/gateway->orders")] = state
		vals[col("budget_level/gateway->orders")] = math.Max(0, 10*(1-1.2*s))
		ts.Rows[row] = vals
	}

	sum.GoodputRPS = float64(sum.Requests.Succeeded) / sum.WindowS
	sum.LatencyMs = metrics.LatencyOf(r.Latency)
	for i := range svc {
		v := &svc[i]
		v.Amplification = float64(v.Attempts) / float64(sum.Requests.Offered)
		sum.Amplification = max(sum.Amplification, v.Amplification)
		v.Utilization = float64(busy[i]) / 1e6 / (services[i].workers * sum.SimTimeS)
		v.QueueMean = float64(area[i]) / 1e6 / sum.SimTimeS
		v.LatencyMs = metrics.LatencyOf(r.ServiceLatency[v.Name])
	}
	svc[2].Succeeded = svc[2].Attempts
	svc[1].Succeeded = svc[1].Attempts - svc[1].Rejected
	edges[1].Succeeded = edges[1].Attempts
	sum.Services = svc
	sum.Edges = edges
	return r
}
