package k8s

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/stormsim/stormsim/shard"
)

//go:embed templates/*.yaml.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"quote":   quote,
	"literal": literal,
}).ParseFS(templateFS, "templates/*.yaml.tmpl"))

// Modes are the stormsim commands a work Job can run, in the order
// documentation lists them.
var Modes = []string{"sweep", "capacity", "load"}

// Paths inside the pods.
const (
	// ScenarioDir is where the scenario ConfigMap is mounted.
	ScenarioDir = "/etc/stormsim"
	// ScenarioKey is the ConfigMap key, and so the file name, of the
	// scenario.
	ScenarioKey = "scenario.yaml"
	// ResultsDir is where the results volume is mounted. Each run writes
	// under ResultsDir/NAME: shard-I for shard I and merged for the merge.
	ResultsDir = "/results"
)

// Resources are a container's requests; limits are set from them (memory
// limit = request, CPU limit = request for simulation so that Go's
// GOMAXPROCS, which follows the CPU limit, matches what was requested).
type Resources struct {
	// CPU and Memory are Kubernetes quantities, e.g. "2", "500m", "256Mi".
	CPU    string
	Memory string
}

// DefaultResources are the per-pod requests of each mode and of the merge,
// sized from measurements on a 2-core machine (docs/scale-out.md has the
// figures): a simulation run peaked at 17–20 MiB RSS and a 2-worker sweep
// at 29 MiB, whatever the simulated duration, since results are streamed
// into histograms; a load driver at 5,000 req/s used 0.2 CPU and 49 MiB
// with 512 senders; merging 8 shards took 37 MiB.
var DefaultResources = map[string]Resources{
	"sweep":    {CPU: "2", Memory: "256Mi"},
	"capacity": {CPU: "2", Memory: "256Mi"},
	"load":     {CPU: "1", Memory: "256Mi"},
	"merge":    {CPU: "500m", Memory: "256Mi"},
}

// Options say what to render. Scenario, ScenarioName, Shards and Image are
// required; every other zero field takes the default its doc gives.
type Options struct {
	// Mode is sweep, capacity or load.
	Mode string
	// ScenarioName is the scenario's name; the default Name derives from
	// it.
	ScenarioName string
	// Scenario is the scenario file's content, stored verbatim in the
	// ConfigMap.
	Scenario []byte
	// Shards is the number of shards: the work Job's completions.
	Shards int
	// Parallelism is how many shards run at once; 0 means Shards. Load
	// requires every shard at once (Parallelism = Shards): its shards
	// together make up one schedule.
	Parallelism int
	// Image is the container image, e.g. ghcr.io/org/stormsim:v1.2.0.
	Image string
	// Args are passed to the command after the ones the manifest sets
	// (e.g. --param workload.rate --values 100,200 for a sweep).
	Args []string
	// Name names the Jobs and the results directory: NAME and NAME-merge.
	// Default "stormsim-MODE-SCENARIO", cut to fit a DNS label.
	Name string
	// Namespace, when set, is written into every object.
	Namespace string
	// StartAt is the shared start of a load run (RFC 3339); required for
	// load with more than one shard.
	StartAt string
	// PVC is the results claim. Default "stormsim-results".
	PVC string
	// PVCSize, when set, renders the claim itself (ReadWriteMany, this
	// size); when empty the claim must already exist.
	PVCSize string
	// StorageClass of a rendered claim; empty uses the cluster's default.
	StorageClass string
	// Resources per work pod; zero fields take DefaultResources[Mode].
	Resources Resources
	// BackoffLimitPerIndex is how often one shard is retried before the
	// Job fails. Default 1; -1 means 0 (no retries).
	BackoffLimitPerIndex int
	// MergeWait bounds how long the merge Job waits for the shards.
	// Default 6h.
	MergeWait time.Duration
	// Run, when set, labels the run (shard.Run): every shard is given
	// --run Run and the merge Job waits for the shards of that run only,
	// not for a previous run's left in the same results directory. Give
	// each apply of the same Name its own label.
	Run string
	// Files are the files the scenario reads (empirical sample files),
	// shipped in the ConfigMap beside it at the same relative paths.
	Files []File
}

// File is a file the scenario refers to by a path relative to itself.
type File struct {
	// Path is relative to the scenario's directory, inside it.
	Path string
	Data []byte
}

// dnsLabel is an RFC 1123 label, what Kubernetes requires of Job names.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// maxNameLen leaves room for "-merge" within the 63 characters of a label.
const maxNameLen = 63 - len("-merge")

// DefaultName returns "stormsim-MODE-SCENARIO" with the scenario name
// lower-cased, runs of other characters turned into "-", cut to fit.
func DefaultName(mode, scenario string) string {
	var b strings.Builder
	b.WriteString("stormsim-" + mode + "-")
	dash := true // the prefix already ends in "-"
	for _, r := range strings.ToLower(scenario) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := b.String()
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	return strings.TrimRight(name, "-")
}

// withDefaults returns o with defaults filled in, or the first problem.
func (o Options) withDefaults() (Options, error) {
	if !slices.Contains(Modes, o.Mode) {
		return o, fmt.Errorf("k8s: mode %q: want one of %s", o.Mode, strings.Join(Modes, ", "))
	}
	if len(o.Scenario) == 0 {
		return o, errors.New("k8s: scenario: empty")
	}
	if !utf8.Valid(o.Scenario) {
		return o, errors.New("k8s: scenario: not UTF-8 text, which a ConfigMap's data must be")
	}
	if o.Shards < 1 || o.Shards > shard.MaxCount {
		return o, fmt.Errorf("k8s: shards must be in [1, %d], got %d", shard.MaxCount, o.Shards)
	}
	if o.Parallelism == 0 {
		o.Parallelism = o.Shards
	}
	if o.Parallelism < 1 || o.Parallelism > o.Shards {
		return o, fmt.Errorf("k8s: parallelism must be in [1, shards=%d], got %d", o.Shards, o.Parallelism)
	}
	if strings.TrimSpace(o.Image) == "" || strings.ContainsAny(o.Image, " \t\n") {
		return o, fmt.Errorf("k8s: image %q: want a container image reference", o.Image)
	}
	if o.Mode == "load" {
		if o.Parallelism != o.Shards {
			return o, fmt.Errorf("k8s: load: parallelism %d must equal shards %d: the shards together make up one schedule", o.Parallelism, o.Shards)
		}
		if o.Shards > 1 && o.StartAt == "" {
			return o, errors.New("k8s: load with several shards needs --start-at (RFC 3339), a shared start a few minutes ahead, so the shards do not drift apart")
		}
	}
	if o.StartAt != "" {
		if o.Mode != "load" {
			return o, fmt.Errorf("k8s: --start-at is for load, not %s", o.Mode)
		}
		a, err := shard.ParseStartAt(o.StartAt)
		if err != nil {
			return o, fmt.Errorf("k8s: %w", err)
		}
		o.StartAt = a.String()
	}
	if o.Name == "" {
		if o.ScenarioName == "" {
			return o, errors.New("k8s: need a scenario name or an explicit name")
		}
		o.Name = DefaultName(o.Mode, o.ScenarioName)
	}
	if len(o.Name) > maxNameLen || !dnsLabel.MatchString(o.Name) {
		return o, fmt.Errorf("k8s: name %q: want lower-case letters, digits and '-', at most %d characters", o.Name, maxNameLen)
	}
	if o.Namespace != "" && !dnsLabel.MatchString(o.Namespace) {
		return o, fmt.Errorf("k8s: namespace %q is not a DNS label", o.Namespace)
	}
	if o.PVC == "" {
		o.PVC = "stormsim-results"
	}
	if !dnsLabel.MatchString(o.PVC) {
		return o, fmt.Errorf("k8s: pvc %q is not a DNS label", o.PVC)
	}
	def := DefaultResources[o.Mode]
	if o.Resources.CPU == "" {
		o.Resources.CPU = def.CPU
	}
	if o.Resources.Memory == "" {
		o.Resources.Memory = def.Memory
	}
	for _, q := range []string{o.Resources.CPU, o.Resources.Memory, o.PVCSize} {
		if q != "" && !quantity.MatchString(q) {
			return o, fmt.Errorf("k8s: resource quantity %q: want e.g. 2, 500m, 256Mi, 10Gi", q)
		}
	}
	switch {
	case o.BackoffLimitPerIndex == 0:
		o.BackoffLimitPerIndex = 1
	case o.BackoffLimitPerIndex < 0:
		o.BackoffLimitPerIndex = 0
	}
	if o.MergeWait == 0 {
		o.MergeWait = 6 * time.Hour
	}
	if o.MergeWait < 0 {
		return o, fmt.Errorf("k8s: merge wait must be > 0, got %v", o.MergeWait)
	}
	seen := map[string]bool{ScenarioKey: true}
	for _, f := range o.Files {
		if !filepath.IsLocal(f.Path) || filepath.ToSlash(filepath.Clean(f.Path)) != f.Path || seen[f.Path] {
			return o, fmt.Errorf("k8s: file %q: want a path inside the scenario's directory, relative, clean and given once", f.Path)
		}
		if !utf8.Valid(f.Data) {
			return o, fmt.Errorf("k8s: file %s: not UTF-8 text, which a ConfigMap's data must be", f.Path)
		}
		seen[f.Path] = true
	}
	if o.Run != "" {
		if _, err := shard.ParseRun(o.Run); err != nil {
			return o, fmt.Errorf("k8s: %w", err)
		}
	}
	for _, a := range o.Args {
		if !utf8.ValidString(a) {
			return o, fmt.Errorf("k8s: args: %q is not UTF-8 text", a)
		}
		for _, fixed := range []string{"--shard", "--shard-from-env", "--out", "--start-at", "--run"} {
			if a == fixed || strings.HasPrefix(a, fixed+"=") {
				return o, fmt.Errorf("k8s: args: %s is set by the manifest; remove it", fixed)
			}
		}
	}
	return o, nil
}

// quantity is the textual form of a Kubernetes resource quantity (a
// decimal number with an optional SI or binary suffix).
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

// view is what the templates see.
type view struct {
	Options
	Scenario     string
	ConfigMap    string
	RunDir       string
	WorkArgs     []string
	MergeArgs    []string
	MergeRes     Resources
	CPULimit     bool
	ScenarioPath string
	ScenarioDir  string
	ResultsDir   string
	// Shipped are the Files as ConfigMap keys (file-0, file-1, …) and
	// the paths the volume gives them.
	Shipped []shippedFile
}

type shippedFile struct {
	Key, Path, Data string
}

// Document is one rendered Kubernetes object: the file name it is kept
// under in deploy/kubernetes and its YAML.
type Document struct {
	File string
	YAML []byte
}

// Documents renders each object of the run on its own: the scenario
// ConfigMap, the results claim (when Options.PVCSize is set), the work Job
// and the merge Job, in that order.
func Documents(o Options) ([]Document, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	v := view{
		Options:      o,
		Scenario:     string(o.Scenario),
		ConfigMap:    o.Name + "-scenario",
		RunDir:       ResultsDir + "/" + o.Name,
		MergeRes:     DefaultResources["merge"],
		CPULimit:     o.Mode != "load",
		ScenarioPath: ScenarioDir + "/" + ScenarioKey,
		ScenarioDir:  ScenarioDir,
		ResultsDir:   ResultsDir,
	}
	for i, f := range o.Files {
		v.Shipped = append(v.Shipped, shippedFile{Key: fmt.Sprintf("file-%d", i), Path: f.Path, Data: string(f.Data)})
	}
	v.WorkArgs = []string{o.Mode}
	if !drivesTarget(o) {
		v.WorkArgs = append(v.WorkArgs, v.ScenarioPath)
	}
	v.WorkArgs = append(v.WorkArgs, "--shard-from-env", "--out", v.RunDir+"/"+shard.DirPrefix+"$("+shard.IndexEnv+")")
	if o.StartAt != "" {
		v.WorkArgs = append(v.WorkArgs, "--start-at", o.StartAt)
	}
	if o.Run != "" {
		v.WorkArgs = append(v.WorkArgs, "--run", o.Run)
	}
	v.WorkArgs = append(v.WorkArgs, o.Args...)
	v.MergeArgs = []string{"merge", "--shards", strconv.Itoa(o.Shards), "--wait", o.MergeWait.String()}
	if o.Run != "" {
		v.MergeArgs = append(v.MergeArgs, "--run", o.Run)
	}
	v.MergeArgs = append(v.MergeArgs, v.RunDir, "--out", v.RunDir+"/merged")

	var docs []Document
	for _, t := range []struct{ file, tmpl string }{
		{"scenario-configmap.yaml", "configmap.yaml.tmpl"},
		{"pvc.yaml", "pvc.yaml.tmpl"},
		{"job.yaml", "job.yaml.tmpl"},
		{"merge-job.yaml", "merge.yaml.tmpl"},
	} {
		if t.file == "pvc.yaml" && o.PVCSize == "" {
			continue
		}
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, t.tmpl, v); err != nil {
			return nil, fmt.Errorf("k8s: render %s: %w", t.tmpl, err)
		}
		docs = append(docs, Document{File: t.file, YAML: b.Bytes()})
	}
	return docs, nil
}

// DrivesTarget reports whether o is a load run against a URL (--target in
// Args) rather than against the scenario's own services served by
// 'stormsim serve'.
func (o Options) DrivesTarget() bool { return drivesTarget(o) }

// drivesTarget reports a load run against a URL (--target in Args): 'stormsim
// load' then takes its workload from flags, not from a scenario argument,
// and the ConfigMap only records the scenario the run was rendered from.
func drivesTarget(o Options) bool {
	if o.Mode != "load" {
		return false
	}
	for _, a := range o.Args {
		if a == "--target" || strings.HasPrefix(a, "--target=") {
			return true
		}
	}
	return false
}

// Render writes every object of the run as one YAML stream, documents
// separated by "---", ready for kubectl apply -f -.
func Render(w io.Writer, o Options) error {
	docs, err := Documents(o)
	if err != nil {
		return err
	}
	for i, d := range docs {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(d.YAML); err != nil {
			return err
		}
	}
	return nil
}

// quote returns s as a double-quoted YAML scalar, escaping every character
// YAML does not allow raw. Quoting every value keeps "yes", "1e3" or ": "
// from being read as anything but a string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case printable(r):
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// printable reports whether r may appear raw in a YAML scalar: YAML's
// printable set, less the byte-order mark and the Unicode line and paragraph
// separators, which some parsers take as line breaks.
func printable(r rune) bool {
	switch {
	case r >= 0x20 && r < 0x7f:
		return true
	case r == 0xfeff || r == 0x2028 || r == 0x2029:
		return false
	case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}

// literal returns s as a YAML literal block scalar for a mapping value: the
// header ("|" to keep one final newline, "|-" for none, "|+" for several)
// and s's lines indented by n spaces, so a scenario stays readable in its
// ConfigMap and decodes to exactly the same bytes. Text a block scalar
// cannot carry exactly (non-printable characters, a first line starting
// with white space, which would change the detected indentation) is
// written double-quoted instead.
func literal(n int, s string) string {
	if !blockSafe(s) {
		return quote(s)
	}
	header, body := "|", strings.TrimSuffix(s, "\n")
	switch {
	case !strings.HasSuffix(s, "\n"):
		header, body = "|-", s
	case strings.HasSuffix(s, "\n\n"):
		header = "|+"
	}
	pad := strings.Repeat(" ", n)
	var b strings.Builder
	b.WriteString(header)
	for _, line := range strings.Split(body, "\n") {
		b.WriteByte('\n')
		if line != "" {
			b.WriteString(pad + line)
		}
	}
	return b.String()
}

// blockSafe reports whether s can be a literal block scalar unchanged.
func blockSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	// The first non-empty line fixes the block's indentation: it must not
	// start with white space, and no white-space-only line may precede it.
	first := strings.TrimLeft(s, "\n")
	if first == "" || first[0] == ' ' || first[0] == '\t' {
		return false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && !printable(r) {
			return false
		}
	}
	return true
}

// DeployOptions are the options deploy/kubernetes/MODE/ is rendered with:
// the kustomize bases that docs/scale-out.md builds on. Each mode's Job is
// named stormsim-MODE and reads the ConfigMap stormsim-MODE-scenario that
// the base's configMapGenerator makes from its scenario.yaml.
func DeployOptions() []Options {
	out := make([]Options, 0, len(Modes))
	for _, m := range Modes {
		o := Options{
			Mode:     m,
			Name:     "stormsim-" + m,
			Scenario: []byte("# replaced by kustomize's configMapGenerator\n"),
			Shards:   4,
			Image:    "stormsim:latest",
			PVCSize:  "10Gi",
		}
		switch m {
		case "sweep":
			o.Args = []string{"--param", "workload.rate", "--range", "100:1000:50", "--replicas", "5"}
		case "capacity":
			o.Args = []string{"--slo", "p99<300ms,success>=99.9%", "--range", "100:2000", "--replicas", "10"}
		case "load":
			// Patch these in an overlay: the target, rate and start.
			o.StartAt = "2030-01-01T00:00:00Z"
			o.Args = []string{"--target", "http://target.example.svc.cluster.local:8080/", "--allow-remote", "--rate", "1000", "--duration", "5m"}
		}
		out = append(out, o)
	}
	return out
}
