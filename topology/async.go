package topology

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of the asynchronous hops (issue 23).
const (
	DefaultOutboxInterval = 100 * time.Millisecond
	DefaultAckDeadline    = 30 * time.Second
	DefaultMaxDeliveries  = 5
	DefaultConcurrency    = 1
)

// Publish is a step of a service's work that publishes one event to a
// topic: one logical intent, whose effect the topic's consumer applies.
type Publish struct {
	// Topic names the topic; some service must consume it.
	Topic string `yaml:"topic"`
	// Via is how the event leaves the producer: dual_write (default: the
	// local commit, then a publish the producer may crash before) or outbox
	// (a row written in the commit's transaction, published later by a
	// publisher loop that may crash before marking it sent).
	Via string `yaml:"via,omitempty"`
	// OutboxInterval is the publisher loop's period (outbox only, default 100ms).
	OutboxInterval time.Duration `yaml:"outbox_interval,omitempty"`
	// Keys is the number of distinct ordering keys events are spread over
	// uniformly (an order's product, say); 0 means unkeyed, so no order is
	// measured or kept.
	Keys int `yaml:"keys,omitempty"`
}

// Consume makes a service the consumer group of a topic. Its deliveries
// are processed by their own Concurrency consumers, not by the service's
// workers, each taking the service's service_time (plus any fault's
// latency_add, plus slowdown_per_inflight per other delivery in process).
type Consume struct {
	Topic string `yaml:"topic"`
	// Concurrency is how many deliveries are processed at once (default 1).
	Concurrency int `yaml:"concurrency,omitempty"`
	// AckDeadline: a delivery not acked within it is redelivered (default 30s).
	AckDeadline time.Duration `yaml:"ack_deadline,omitempty"`
	// MaxDeliveries: a message delivered this many times without an ack is
	// dead-lettered (default 5).
	MaxDeliveries int `yaml:"max_deliveries,omitempty"`
	// Ack is when the consumer acks: after_effect (default), before_effect,
	// or transactional_dedup (the effect and a processed-event record in
	// one transaction, acked after).
	Ack string `yaml:"ack,omitempty"`
	// Ordered delivers one message per key at a time, in publish order.
	Ordered bool `yaml:"ordered,omitempty"`
	// VersionCheck rejects an event older than the last one applied for its
	// key (a stale event) instead of applying it.
	VersionCheck bool `yaml:"version_check,omitempty"`
}

// HasTopics reports whether any service publishes or consumes a topic:
// only then do summaries and time series carry the async accounting.
func (sc *Scenario) HasTopics() bool {
	for i := range sc.Services {
		if sc.Services[i].Consumes != nil {
			return true
		}
	}
	return false
}

// Consumer returns the index of the service consuming topic, or -1.
func (sc *Scenario) Consumer(topic string) int {
	for i := range sc.Services {
		if c := sc.Services[i].Consumes; c != nil && c.Topic == topic {
			return i
		}
	}
	return -1
}

// consumeDefaults fills the omitted keys of the consumes block at p; one
// written as 0 is left for validation to refuse.
func (v *validator) consumeDefaults(c *Consume, p string) {
	p += ".consumes"
	if c.Concurrency == 0 && !v.given(p+".concurrency") {
		c.Concurrency = DefaultConcurrency
	}
	if c.AckDeadline == 0 && !v.given(p+".ack_deadline") {
		c.AckDeadline = DefaultAckDeadline
	}
	if c.MaxDeliveries == 0 && !v.given(p+".max_deliveries") {
		c.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.Ack == "" {
		c.Ack = "after_effect"
	}
}

// publishDefaults fills the omitted keys of the publish step at path.
func (v *validator) publishDefaults(p *Publish, path string) {
	if p.Via == "" {
		p.Via = "dual_write"
	}
	if p.Via == "outbox" && p.OutboxInterval == 0 && !v.given(path+".publish.outbox_interval") {
		p.OutboxInterval = DefaultOutboxInterval
	}
}

// publish validates a publish step at p (a call whose only key is publish).
func (v *validator) publish(c *Call, p string) {
	if c.To != "" || len(c.Parallel) > 0 {
		v.add(p+".publish", "a call either publishes or calls (to, parallel), not both")
	}
	pb, pp := c.Publish, p+".publish"
	if strings.Contains(p, ".parallel[") {
		v.add(pp, "a publish step cannot be a member of a parallel group")
	}
	if pb.Topic == "" {
		v.add(pp+".topic", "required (the topic's name)")
	} else if v.sc.Consumer(pb.Topic) < 0 {
		v.add(pp+".topic", "no service consumes topic %q (add consumes: {topic: %s} to one)", pb.Topic, pb.Topic)
	}
	switch pb.Via {
	case "dual_write", "outbox":
	default:
		v.add(pp+".via", "must be dual_write or outbox, got %q", pb.Via)
	}
	if pb.Via == "outbox" {
		v.positive(pp+".outbox_interval", pb.OutboxInterval)
	} else if pb.OutboxInterval != 0 {
		v.add(pp+".outbox_interval", "applies only to via: outbox")
	}
	if pb.Keys < 0 {
		v.add(pp+".keys", "must be ≥ 0, got %d", pb.Keys)
	}
}

// consume validates a service's consumes block at p.
func (v *validator) consume(c *Consume, p string) {
	p += ".consumes"
	if c.Topic == "" {
		v.add(p+".topic", "required (the topic's name)")
	}
	if c.Concurrency < 1 {
		v.add(p+".concurrency", "must be ≥ 1, got %d", c.Concurrency)
	}
	v.positive(p+".ack_deadline", c.AckDeadline)
	if c.MaxDeliveries < 1 {
		v.add(p+".max_deliveries", "must be ≥ 1, got %d", c.MaxDeliveries)
	}
	switch c.Ack {
	case "after_effect", "before_effect", "transactional_dedup":
	default:
		v.add(p+".ack", "must be after_effect, before_effect or transactional_dedup, got %q", c.Ack)
	}
}

// topics checks what spans services: one consumer group per topic.
func (v *validator) topics() {
	first := map[string]int{}
	for i := range v.sc.Services {
		c := v.sc.Services[i].Consumes
		if c == nil || c.Topic == "" {
			continue
		}
		if j, dup := first[c.Topic]; dup {
			v.add(fmt.Sprintf("services[%d].consumes.topic", i), "topic %q is already consumed by services[%d] (one consumer group per topic)", c.Topic, j)
			continue
		}
		first[c.Topic] = i
	}
}

// crashFaults validates the crash probabilities of fault f at p.
func (v *validator) crashFaults(f *Fault, p string) {
	v.probability(p+".crash_between_commit_and_publish", f.CrashBetweenCommitAndPublish)
	v.probability(p+".crash_between_publish_and_mark", f.CrashBetweenPublishAndMark)
	v.probability(p+".crash_between_effect_and_ack", f.CrashBetweenEffectAndAck)
}
