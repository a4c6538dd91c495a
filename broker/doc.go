// Package broker runs a scenario's topics through a real broker, NATS
// JetStream, on loopback: embedded in-process by default (Embedded), or
// an external server by URL. Walk publishes a topic's intents as the
// scenario's producer does (dual write or outbox, with its crash faults)
// and consumes them as its consumer does (ack before or after the effect,
// or dedup in the effect's transaction), counting effects per intent in
// the simulator's vocabulary (metrics.ConsumerSummary), so the
// simulator's at-least-once model can be checked against real redelivery.
//
// Crashes are modelled as in the simulator: a crashed producer skips its
// publish; a crashed outbox publisher leaves its row unmarked; a crashed
// consumer skips its ack (JetStream then redelivers after ack_wait) or,
// acking first, its effect. The process does not really die.
package broker
