package model

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
)

// Stream returns the random stream of one named component of a run. Each
// component (the arrivals, each service, each call edge, each policy) draws
// from its own stream derived from the run's seed and the component's name,
// so adding a service does not reshuffle the draws of any other.
func Stream(seed uint64, name string) *rand.Rand {
	return rand.New(StreamSource(seed, name))
}

// StreamSource returns the source of Stream(seed, name), for drivers that
// must reseed a stream in place (the simulator's branching trajectories).
func StreamSource(seed uint64, name string) *rand.PCG {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.NewPCG(seed, h.Sum64())
}

// ArrivalsStream names the stream of the open-loop arrival process
// (Arrivals): every arrival time and write draw of a run, in the simulator
// and for the load driver alike.
const ArrivalsStream = "arrivals"

// ConsumerStream names the stream of replica rep of service name as a
// member of its consumer group: its crash draws at the consumer's
// boundaries. The first replica's is "consumer/NAME", replica R's
// "consumer/NAME#rR" (ReplicaTag).
func ConsumerStream(name string, rep int) string { return "consumer/" + name + ReplicaTag(rep) }

// PublishStream names the stream of the publish step at index step of
// the calls of replica rep of service name: its ordering keys and crash
// draws. Each replica publishes through its own outbox, with its own
// stream: "publish/NAME/STEP", or "publish/NAME#rR/STEP".
func PublishStream(name string, rep, step int) string {
	return fmt.Sprintf("publish/%s%s/%d", name, ReplicaTag(rep), step)
}

// Client is the caller name of the external client's edge toward the
// workload's entry, in stream names and edge summaries.
const Client = "client"

// ClientStream names the stream of client instance k's edge toward entry:
// "edge/client->ENTRY" for the first, "edge/client@K->ENTRY" for instance
// K (InstanceTag), as EdgeStreams names them.
func ClientStream(entry string, k int) string {
	return EdgeStreams{}.Name(Client+InstanceTag(k), entry)
}

// ServiceStream names the stream of service name: its service times,
// injected errors and dropped replies.
func ServiceStream(name string) string { return "service/" + name }

// EdgeStreams names the streams of call edges. The n-th edge (0-based)
// from one caller to one callee is "edge/from->to", then "edge/from->to#n":
// two calls to the same callee draw from separate streams.
type EdgeStreams map[string]int

// Name returns the stream name of the next edge from -> to.
func (u EdgeStreams) Name(from, to string) string {
	name := "edge/" + from + "->" + to
	n := u[name]
	u[name]++
	if n > 0 {
		return fmt.Sprintf("%s#%d", name, n)
	}
	return name
}

// ReplicaStream names the stream of replica rep of service name: the
// first replica's is the service's own (ServiceStream), so a scenario
// without replicas draws as before; replica r > 0 draws from
// "service/NAME#rR".
func ReplicaStream(name string, rep int) string {
	if rep == 0 {
		return ServiceStream(name)
	}
	return fmt.Sprintf("%s#r%d", ServiceStream(name), rep)
}

// ReplicaTag names replica rep of a caller in the names of its edges'
// streams (EdgeStreams.Name(from+tag, to)): "" for the first replica, whose
// edges draw from the streams a service without replicas has, "#rR" for
// replica R; a client instance K > 0 is tagged "@K" alike (InstanceTag).
func ReplicaTag(rep int) string {
	if rep == 0 {
		return ""
	}
	return fmt.Sprintf("#r%d", rep)
}

// InstanceOf is the client instance of a fleet of instances that sends
// request n (0-based, in arrival order): requests go round the instances,
// spread evenly, in the simulator and in load mode alike.
func InstanceOf(n uint64, instances int) int { return int(n % uint64(instances)) }

// InstanceTag names client instance k of a fleet in its edge's stream.
func InstanceTag(k int) string {
	if k == 0 {
		return ""
	}
	return fmt.Sprintf("@%d", k)
}

// BalanceStream names the stream of the balancer of the edge whose own
// stream is edge: its random picks never shift the edge's policy draws.
func BalanceStream(edge string) string { return "balance/" + edge }
