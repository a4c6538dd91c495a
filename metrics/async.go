package metrics

// Time-series metrics of a topic's consumer group, one column each per
// consuming service (Column(metric, service)); present only when the
// scenario has topics.
const (
	MetricDeliveries        = "deliveries"
	MetricRedeliveries      = "redeliveries"
	MetricBacklog           = "backlog"
	MetricEffects           = "effects"
	MetricLostEffects       = "lost_effects"
	MetricDuplicateEffects  = "duplicate_effects"
	MetricOutOfOrderEffects = "out_of_order_effects"
)

// ConsumerSummary is a consuming service's view of its topic: what the
// broker delivered, and per logical intent (one committed event) how many
// times its effect happened. Intents and effects count those committed
// after warm-up.
type ConsumerSummary struct {
	Topic string `json:"topic"`
	// Intents is the number of logical intents (commits that publish).
	Intents int64 `json:"intents"`
	// Published counts messages put on the topic: more than Intents when
	// an outbox published a row twice, fewer when a dual write lost one.
	Published    int64 `json:"published"`
	Deliveries   int64 `json:"deliveries"`
	Redeliveries int64 `json:"redeliveries"`
	DeadLettered int64 `json:"dead_lettered"`
	Effects      int64 `json:"effects"`
	// LostEffects: intents whose effect never happened.
	LostEffects int64 `json:"lost_effects"`
	// DuplicateEffects: effects beyond the first of each intent.
	DuplicateEffects int64 `json:"duplicate_effects"`
	// OutOfOrderEffects: effects applied after a later event of their key.
	OutOfOrderEffects int64 `json:"out_of_order_effects"`
	// StaleRejected: events a version check refused as older than the
	// last applied of their key.
	StaleRejected int64 `json:"stale_rejected,omitempty"`
	// InFlight (load mode): intents, included in Intents, still in an
	// outbox, on the topic unsettled or in process when the run stopped
	// early (Ctrl-C, or the wait for the topics to drain ran out): they
	// are counted neither lost nor duplicate; their effects so far are in
	// Effects. The simulator always drains, so it has none.
	InFlight int64 `json:"in_flight,omitempty"`
	// PublishErrors (load mode): publishes the real broker refused; such
	// an event was not put on the topic.
	PublishErrors int64 `json:"publish_errors,omitempty"`
}

// Add returns the sum of c and o, for merging the shards of a run (nil
// when both are nil): every field is a count, so the sum is exact.
func (c *ConsumerSummary) Add(o *ConsumerSummary) *ConsumerSummary {
	if o == nil {
		return c
	}
	if c == nil {
		c = &ConsumerSummary{Topic: o.Topic}
	}
	c.Intents += o.Intents
	c.Published += o.Published
	c.Deliveries += o.Deliveries
	c.Redeliveries += o.Redeliveries
	c.DeadLettered += o.DeadLettered
	c.Effects += o.Effects
	c.LostEffects += o.LostEffects
	c.DuplicateEffects += o.DuplicateEffects
	c.OutOfOrderEffects += o.OutOfOrderEffects
	c.StaleRejected += o.StaleRejected
	c.InFlight += o.InFlight
	c.PublishErrors += o.PublishErrors
	return c
}

// writeConsumers adds a line per consuming service to the text summary:
// what its topic delivered and what happened to each intent's effect.
func writeConsumers(ew *ErrWriter, svcs []ServiceSummary) {
	first := true
	for _, v := range svcs {
		c := v.Consumer
		if c == nil {
			continue
		}
		if first {
			ew.Printf("\n")
			first = false
		}
		ew.Printf("%s consumes %s: %d intents, %d published, %d deliveries (%d redeliveries, %d dead-lettered); effects %d: lost %d, duplicate %d, out of order %d",
			v.Name, c.Topic, c.Intents, c.Published, c.Deliveries, c.Redeliveries, c.DeadLettered, c.Effects, c.LostEffects, c.DuplicateEffects, c.OutOfOrderEffects)
		if c.StaleRejected > 0 {
			ew.Printf(", stale rejected %d", c.StaleRejected)
		}
		if c.InFlight > 0 {
			ew.Printf("; %d intents still in flight at the stop (counted neither lost nor duplicate)", c.InFlight)
		}
		if c.PublishErrors > 0 {
			ew.Printf("; %d publishes refused by the broker", c.PublishErrors)
		}
		ew.Printf("\n")
	}
}
