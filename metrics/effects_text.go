package metrics

import (
	"fmt"
	"strconv"
)

// TotalEffects returns the sum of the services' external effects, nil
// when no service has one: what compare puts in one column per variant.
func (s *Summary) TotalEffects() *Effects {
	var e *Effects
	for _, v := range s.Services {
		e = e.Add(v.Effects)
	}
	return e
}

// TotalVersionedWrites returns the sum of the services' versioned writes
// with the conflict rate of the sum, nil when no service has any.
func (s *Summary) TotalVersionedWrites() *VersionedWrites {
	var w *VersionedWrites
	for _, v := range s.Services {
		w = w.Add(v.VersionedWrites)
	}
	return w
}

// writeEffects writes the effects block of FormatText: the intents that
// passed an irrevocable step, then per service what its external effect
// sent and what its versioned writes did. Each line only when its object
// is there, so summaries of scenarios without effects read as before.
func writeEffects(ew *ErrWriter, s *Summary) {
	var lines []string
	if ir := s.Irrevocable; ir != nil {
		lines = append(lines, fmt.Sprintf("irrevocable step passed by %d intents, %d of them unknown to their caller (%s): only a confirmation settles those",
			ir.Sent, ir.Unknown, pct(ir.Unknown, ir.Sent)))
	}
	for _, v := range s.Services {
		if e := v.Effects; e != nil {
			lines = append(lines, fmt.Sprintf("%s external effect sent %d  delivered %d  duplicates %d (deliveries beyond an intent's first)  absorbed %d",
				v.Name, e.Sent, e.Delivered, e.Duplicates, e.Absorbed))
		}
		if w := v.VersionedWrites; w != nil {
			lines = append(lines, fmt.Sprintf("%s versioned writes %d  conflicts %d (%s)  redone %d  lost updates %d  aborted %d",
				v.Name, w.Writes, w.Conflicts, strconv.FormatFloat(100*w.ConflictRate, 'f', 1, 64)+"%", w.Redone, w.LostUpdates, w.Aborted))
		}
	}
	for i, l := range lines {
		label := ""
		if i == 0 {
			label = "effects"
		}
		ew.Printf("%-10s %s\n", label, l)
	}
}

// mergeEffects completes Merge's out with the parts' effects, exactly:
// Summary.Irrevocable and each service's Effects and VersionedWrites are
// counts (the conflict rate recomputed from the summed counts), and shards
// partition the run's intents and entities.
func mergeEffects(parts []*Result, s *Summary) {
	idx := make(map[string]int, len(s.Services))
	for i, v := range s.Services {
		idx[v.Name] = i
		s.Services[i].Effects, s.Services[i].VersionedWrites = nil, nil
	}
	var ir *Irrevocable
	for _, p := range parts {
		ir = ir.Add(p.Summary.Irrevocable)
		for _, ps := range p.Summary.Services {
			if i, ok := idx[ps.Name]; ok {
				s.Services[i].Effects = s.Services[i].Effects.Add(ps.Effects)
				s.Services[i].VersionedWrites = s.Services[i].VersionedWrites.Add(ps.VersionedWrites)
			}
		}
	}
	s.Irrevocable = ir
}
