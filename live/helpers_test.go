package live_test

import (
	"testing"

	"github.com/stormsim/stormsim/topology"
)

func parse(t *testing.T, yaml string) *topology.Scenario {
	t.Helper()
	sc, err := topology.Parse("live.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
