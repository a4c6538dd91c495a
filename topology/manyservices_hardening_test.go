package topology

import (
	"fmt"
	"strings"
	"testing"
)

// TestAttackManyServicesGiveTheNodeLimit: a scenario past the decoder's
// node limit (16,384 services) is refused with that limit alone, not with
// 10,000 "name: required" problems of the services never decoded.
func TestAttackManyServicesGiveTheNodeLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\nduration: 1s\nworkload: {entry: s0, rate: 1}\nservices:\n")
	for i := range 16384 {
		fmt.Fprintf(&b, "  - {name: s%d, workers: 1, service_time: {dist: constant, value: 1ms}}\n", i)
	}
	_, err := Parse("many.yaml", []byte(b.String()), nil)
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if n := strings.Count(msg, "\n") + 1; n != 1 || !strings.Contains(msg, fmt.Sprintf("past %d YAML nodes", maxDecodeNodes)) {
		t.Errorf("%d problems, want the node limit alone; the first: %.300s", n, msg)
	}
}

// TestAttackValidateJudgesVariantValues: a variant whose override sets
// an invalid value is a problem of the scenario (validate said ok, and
// compare then failed on it); valid variants stay valid.
func TestAttackValidateJudgesVariantValues(t *testing.T) {
	const y = `name: v
duration: 1s
workload: {entry: a, rate: 1}
services: [{name: a, workers: 1, service_time: {dist: constant, value: 1ms}}]
variants:
  - {name: fine, set: [services.a.workers=2]}
  - {name: bad, set: [services.a.workers=-3, workload.rate=-1]}
`
	_, err := Parse("v.yaml", []byte(y), nil)
	if err == nil {
		t.Fatal("a variant of invalid values accepted")
	}
	msg := err.Error()
	for _, want := range []string{"variants[1].set: variant bad: --set services.a.workers=-3: services[0].workers: must be > 0, got -3", "variant bad: --set workload.rate=-1: workload.rate: must be > 0"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "variant fine") {
		t.Errorf("the valid variant is blamed:\n%s", msg)
	}
	if _, err := Parse("v.yaml", []byte(strings.ReplaceAll(y, "workers=-3, workload.rate=-1", "workers=3")), nil); err != nil {
		t.Errorf("valid variants: %v", err)
	}
}
