package metrics

import "testing"

func TestConsumerSummaryAdd(t *testing.T) {
	a := &ConsumerSummary{Topic: "t", Intents: 1, Published: 2, Deliveries: 3, Redeliveries: 4, DeadLettered: 5,
		Effects: 6, LostEffects: 7, DuplicateEffects: 8, OutOfOrderEffects: 9, StaleRejected: 10}
	for _, tc := range []struct {
		name string
		x, y *ConsumerSummary
		want *ConsumerSummary
	}{
		{"nil+nil", nil, nil, nil},
		{"nil+a", nil, a, a},
		{"a+nil", a, nil, a},
		{"a+a", a, a, &ConsumerSummary{Topic: "t", Intents: 2, Published: 4, Deliveries: 6, Redeliveries: 8, DeadLettered: 10,
			Effects: 12, LostEffects: 14, DuplicateEffects: 16, OutOfOrderEffects: 18, StaleRejected: 20}},
	} {
		var x *ConsumerSummary
		if tc.x != nil {
			c := *tc.x
			x = &c
		}
		got := x.Add(tc.y)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
