package topology

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// ProblemAt returns a problem with the field at path (as validation names
// it, e.g. "services[1].consumes.ordered"), located at the file and line
// (or the --set) its value came from: for the checks that only one way of
// running a scenario makes (serve refusing what it cannot run), so that
// they point at the line as validation does. The scenario's source is
// decoded again; a scenario built in code gets its name and no line.
func (s *Scenario) ProblemAt(path, format string, args ...any) Problem {
	p := Problem{File: s.File, Path: path, Msg: fmt.Sprintf(format, args...)}
	if p.File == "" {
		p.File = "scenario"
	}
	if s.src == nil {
		return p
	}
	root, probs := parseYAML(p.File, s.src)
	if root == nil || len(probs) > 0 {
		return p
	}
	origin := make(map[*yaml.Node]string)
	for _, set := range s.sets {
		_ = applySet(root, set, origin) // applied once already, without error
	}
	d := newDecoder(p.File, origin)
	d.decode(root, reflect.ValueOf(&Scenario{}).Elem(), "", 0)
	at := d.lookup(path)
	p.File, p.Line = at.file, at.line
	return p
}
