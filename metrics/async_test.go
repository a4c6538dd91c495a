package metrics

import (
	"strings"
	"testing"
)

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

func TestFormatTextConsumer(t *testing.T) {
	s := &Summary{Scenario: "x", Services: []ServiceSummary{{Name: "order"}, {Name: "inventory",
		Consumer: &ConsumerSummary{Topic: "order-created", Intents: 10, Published: 11, Deliveries: 12, Redeliveries: 1,
			Effects: 11, LostEffects: 0, DuplicateEffects: 1, OutOfOrderEffects: 2}}}}
	var b strings.Builder
	if err := FormatText(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "inventory consumes order-created: 10 intents, 11 published, 12 deliveries (1 redeliveries, 0 dead-lettered); effects 11: lost 0, duplicate 1, out of order 2\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("text ends\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	s.Services[1].Consumer = nil
	if err := FormatText(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "consumes") {
		t.Errorf("no topics, yet a consumer line:\n%s", b.String())
	}
}
