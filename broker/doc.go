// Package broker runs a scenario's topics through a real broker, NATS
// JetStream, on loopback: embedded in-process by default (Embedded), or
// an external server by URL (Connect). A Topic is one topic's stream and
// the effect accounting of its intents in the simulator's vocabulary
// (metrics.ConsumerSummary, model.Group's rules); a Producer is a publish
// step (dual write, or an outbox with its publisher loop, with its crash
// faults); a Consumer is the topic's consumer group (a durable pull
// consumer with the scenario's concurrency, ack deadline, max deliveries
// and ack mode). Serve (package load) runs them for every topic of a
// scenario; Walk runs one topic's hop alone, for stormsim broker. So the
// simulator's at-least-once model can be checked against real redelivery.
//
// Crashes are modelled as in the simulator: a crashed producer skips its
// publish; a crashed outbox publisher leaves its row unmarked; a crashed
// consumer skips its ack (JetStream then redelivers after ack_wait) or,
// acking first, its effect. The process does not really die.
package broker
