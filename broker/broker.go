package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// Server is an embedded NATS server with JetStream.
type Server struct {
	s   *server.Server
	dir string
}

// Embedded starts a NATS server with JetStream in this process, listening
// on 127.0.0.1 on a free port, its store in a temporary directory.
func Embedded() (*Server, error) {
	cleanStale(os.TempDir())
	dir, err := os.MkdirTemp("", storePrefix)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	// The owner's pid, so that a later run can tell a store left by a
	// killed process (SIGKILL skips Close) from one in use.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("broker: %w", err)
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("broker: embedded NATS server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		os.RemoveAll(dir)
		return nil, errors.New("broker: embedded NATS server not ready after 10s")
	}
	return &Server{s: s, dir: dir}, nil
}

// An embedded server's store is a directory storePrefix* in the temporary
// directory, holding ownerFile, its process's pid.
const (
	storePrefix = "stormsim-jetstream-"
	ownerFile   = "stormsim.pid"
	// staleAge is how old a store without an owner file (written by an
	// older stormsim) must be to be taken as stale.
	staleAge = time.Hour
)

// cleanStale removes the stores in tmp that their process left behind:
// its pid no longer runs, or, with no pid written, it is over staleAge
// old. Errors are ignored: cleaning is a courtesy.
func cleanStale(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), storePrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAge {
				os.RemoveAll(dir)
			}
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && !running(pid) {
			os.RemoveAll(dir)
		}
	}
}

// running reports whether process pid exists (where that can be asked:
// elsewhere it is taken to, and its store is kept).
func running(pid int) bool {
	if runtime.GOOS == "windows" || pid == os.Getpid() {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM) // EPERM: it runs, as another user
}

// URL is the client URL of the server.
func (s *Server) URL() string { return s.s.ClientURL() }

// Close stops the server and removes its store.
func (s *Server) Close() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
	os.RemoveAll(s.dir)
}

// hop is one topic's producer and consumer, resolved from a scenario.
type hop struct {
	pub      *topology.Publish
	prodF    []*topology.Fault
	cons     *topology.Consume
	consF    []*topology.Fault
	st       dist.Sampler
	slow     time.Duration
	consName string
	// pubStream names the producer's stream: its service's first replica
	// and the publish step's index, as the simulator and serve name it.
	pubStream string
}

func resolveHop(sc *topology.Scenario, topic string) (*hop, error) {
	if err := Check(sc); err != nil {
		return nil, err
	}
	h := &hop{}
	for i := range sc.Services {
		s := &sc.Services[i]
		for j := range s.Calls {
			if p := s.Calls[j].Publish; p != nil && p.Topic == topic && h.pub == nil {
				h.pub, h.prodF, h.pubStream = p, model.ReplicaFaults(sc, s.Name, 0), model.PublishStream(s.Name, 0, j)
			}
		}
		if c := s.Consumes; c != nil && c.Topic == topic {
			h.cons, h.consF, h.consName, h.slow = c, model.ReplicaFaults(sc, s.Name, 0), s.Name, s.SlowdownPerInflight
			var err error
			if h.st, _, err = model.Delay(&s.ServiceTime, fmt.Sprintf("services[%d].service_time", i)); err != nil {
				return nil, err
			}
		}
	}
	if h.pub == nil || h.cons == nil {
		return nil, fmt.Errorf("broker: topic %q needs a publish step and a consumer", topic)
	}
	return h, nil
}

// Check reports what a real broker cannot run of sc's topics, each
// problem at its file and line. An ordered consumer runs as a JetStream
// consumer per key, each with one worker (Topic.Consume): it needs
// concurrency × replicas ≥ keys, so that every key has its worker as in
// the simulator's group, and ack after_effect or transactional_dedup
// (acking on receipt would let a key's next message start early).
func Check(sc *topology.Scenario) error {
	keys := Keys(sc)
	var probs topology.Problems
	for i := range sc.Services {
		s := &sc.Services[i]
		c := s.Consumes
		if c == nil || !c.Ordered || keys[c.Topic] == 0 {
			continue
		}
		at := fmt.Sprintf("services[%d].consumes.ordered", i)
		if c.Ack == "before_effect" {
			probs = append(probs, sc.ProblemAt(at, "an ordered consumer acking before_effect is simulator-only: a real broker (serve, load, broker) runs ordered ones with ack after_effect or transactional_dedup"))
		}
		if n := c.Concurrency * s.ReplicaCount(); n < keys[c.Topic] {
			probs = append(probs, sc.ProblemAt(at, "on a real broker (serve, load, broker) an ordered consumer runs a consumer per key: concurrency × replicas (%d) must be ≥ the topic's keys (%d)", n, keys[c.Topic]))
		}
	}
	if len(probs) > 0 {
		return probs
	}
	return nil
}

// Keys returns, per topic, the number of ordering keys its events spread
// over: the most any of its publish steps uses.
func Keys(sc *topology.Scenario) map[string]int {
	keys := map[string]int{}
	for i := range sc.Services {
		for _, c := range sc.Services[i].Calls {
			if pb := c.Publish; pb != nil {
				keys[pb.Topic] = max(keys[pb.Topic], pb.Keys)
			}
		}
	}
	return keys
}

// Walk publishes n intents of topic as sc's producer does and consumes
// them as its consumer does, through the JetStream server at url, and
// returns the consumer's summary once every intent has folded (each of its
// messages acked or dead-lettered, or ctx ends: then an error). Crash
// draws come from streams derived from seed, and fault windows are
// measured from Walk's start in real time.
func Walk(ctx context.Context, url string, sc *topology.Scenario, topic string, n int, seed uint64) (*metrics.ConsumerSummary, error) {
	h, err := resolveHop(sc, topic)
	if err != nil {
		return nil, err
	}
	conn, err := Connect(url)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	t, err := conn.NewTopic(ctx, topic, h.cons, Keys(sc)[topic])
	if err != nil {
		return nil, err
	}
	defer t.Close()
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	c, err := t.Consume(ctx, ConsumerConfig{Service: h.consName, Consume: h.cons, ServiceTime: h.st, SlowdownPerInflight: h.slow,
		Faults: h.consF, Rand: model.Stream(seed, model.ConsumerStream(h.consName, 0)), Now: now})
	if err != nil {
		return nil, err
	}
	defer c.Stop()

	// The producer: n commits, each published by dual write or through
	// the outbox, whose publisher loop runs every outbox_interval.
	p := t.NewProducer(h.pub, h.prodF, model.Stream(seed, h.pubStream), now)
	for range n {
		if err := p.Commit(ctx, true); err != nil {
			return nil, err
		}
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	go p.Run(pctx)
	if err := t.Wait(ctx); err != nil {
		return nil, fmt.Errorf("broker: %d of %d intents still in flight: %w", t.InFlight(), n, conn.g.explain(err))
	}
	c.Stop()
	s := t.Summary()
	return &s, nil
}
