package serve

import (
	"sort"
	"time"

	"github.com/stormsim/stormsim/load/driver"
)

// The services' live columns: the sampler as a driver.RowSource beside a
// scenario run's rows, and Cluster.Watch for stormsim serve.

// liveServices is the sampler as a RowSource when the run has a live
// feed, nil otherwise.
func liveServices(sm *sampler, onRow func(time.Duration, []string, []float64)) driver.RowSource {
	if onRow == nil {
		return nil
	}
	return sm
}

// ticked counts a sample and wakes whoever waits for it. sm.mu is held.
func (sm *sampler) ticked() {
	sm.n++
	close(sm.tick)
	sm.tick = make(chan struct{})
}

// Row, Rows and Finish make the sampler a driver.RowSource.
func (sm *sampler) Row(i int, wait time.Duration) ([]string, []float64) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	sm.mu.Lock()
	for sm.n <= i {
		tick := sm.tick
		sm.mu.Unlock()
		select {
		case <-tick:
		case <-sm.done:
		case <-deadline.C:
		}
		sm.mu.Lock()
		if tick == sm.tick { // stopped or timed out: no sample i
			break
		}
	}
	defer sm.mu.Unlock()
	names := make([]string, 0, len(sm.cols))
	for k := range sm.cols {
		names = append(names, k)
	}
	sort.Strings(names) // the order of sampler.series
	vals := make([]float64, len(names))
	for j, k := range names {
		if i < len(sm.cols[k]) {
			vals[j] = sm.cols[k][i]
		}
	}
	return names, vals
}

func (sm *sampler) Rows() int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.n
}

func (sm *sampler) Finish() { sm.stop() }

// Watch calls onRow at the end of every interval, from one goroutine,
// with the services' columns of the time series a scenario run records
// (attempts, queue, utilization, breaker and budget state per service
// and edge), until stop: the live view of 'stormsim serve'.
func (cl *Cluster) Watch(interval time.Duration, onRow func(start time.Duration, columns []string, row []float64)) (stop func()) {
	if interval <= 0 {
		interval = driver.DefaultInterval
	}
	var sm sampler
	sm.start(cl, interval)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if sm.waitFor(i) {
				return
			}
			cols, vals := sm.Row(i, 0)
			onRow(time.Duration(i)*interval, cols, vals)
		}
	}()
	return func() { sm.stop(); <-done }
}

// waitFor waits until sample i is taken and reports whether the sampler
// stopped first.
func (sm *sampler) waitFor(i int) (stopped bool) {
	for {
		sm.mu.Lock()
		n, tick := sm.n, sm.tick
		sm.mu.Unlock()
		if n > i {
			return false
		}
		select {
		case <-tick:
		case <-sm.done:
			return true
		}
	}
}
