package topology

import "fmt"

// MaxNameLen bounds a service name.
const MaxNameLen = 128

// validName reports whether name can be carried unchanged by every mode: a
// URL path segment in load mode and serve (no escaping, no "." or ".."), a
// column of the time series ("queue/NAME"), a file name in plots and a
// Kubernetes label value: ASCII letters, digits, '-', '_', '.' and '~',
// starting with a letter or a digit. Names such as "a%zz", or ones holding
// tabs or control characters, simulated fine and failed every request in
// load mode.
func validName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.' || c == '~'):
		default:
			return false
		}
	}
	return true
}

// names checks the service names (an empty one is reported as required
// elsewhere).
func (v *validator) names() {
	for i, s := range v.sc.Services {
		if s.Name != "" && !validName(s.Name) {
			v.add(fmt.Sprintf("services[%d].name", i), "%q: want at most %d ASCII letters, digits, '-', '_', '.' or '~', starting with a letter or digit (the name is a URL path, a column and a file name)", Shorten(s.Name), MaxNameLen)
		}
	}
}
