package load

import (
	"strings"
	"testing"

	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/topology"
)

// serve refuses a scenario with topics with a clear error until it runs
// them through a real broker (package broker does, outside serve).
func TestServeRefusesTopics(t *testing.T) {
	data, _ := experiments.Lookup("outbox-order")
	sc, err := topology.Parse("outbox-order.yaml", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewService(sc, "order", ServiceConfig{})
	if err == nil || !strings.Contains(err.Error(), "serve does not run topics (publish, consumes) yet") {
		t.Errorf("NewService with topics: error %v", err)
	}
}
