package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stormsim/stormsim/shard"
)

// objects is a rendered stream decoded into the Kubernetes API's own Go
// types.
type objects struct {
	ConfigMaps []*corev1.ConfigMap
	PVCs       []*corev1.PersistentVolumeClaim
	Jobs       []*batchv1.Job
}

// decodeStrict decodes a YAML stream into typed API objects. Each document
// goes YAML → JSON → the k8s.io/api struct with unknown fields rejected, so
// a misspelled or misplaced field, or a value of the wrong type, is an
// error: this is the schema check kubeconform would make, with the schema
// taken from the API types rather than downloaded.
func decodeStrict(stream []byte) (*objects, error) {
	out := &objects{}
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	for i := 0; ; i++ {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if doc == nil {
			continue
		}
		js, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: to JSON: %w", i, err)
		}
		var meta struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var target any
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 ConfigMap":
			cm := &corev1.ConfigMap{}
			out.ConfigMaps, target = append(out.ConfigMaps, cm), cm
		case "v1 PersistentVolumeClaim":
			pvc := &corev1.PersistentVolumeClaim{}
			out.PVCs, target = append(out.PVCs, pvc), pvc
		case "batch/v1 Job":
			job := &batchv1.Job{}
			out.Jobs, target = append(out.Jobs, job), job
		default:
			return nil, fmt.Errorf("document %d: unexpected apiVersion %q kind %q", i, meta.APIVersion, meta.Kind)
		}
		jd := json.NewDecoder(bytes.NewReader(js))
		jd.DisallowUnknownFields()
		if err := jd.Decode(target); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, meta.Kind, err)
		}
	}
}

// checkRun applies the structural rules a stormsim run relies on and the
// API server would enforce, beyond field names and types. configMap is the
// name the work Job's scenario volume must reference (it differs from the
// rendered object's when kustomize adds a hash suffix).
func checkRun(o *objects, mode string, shards int) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.Jobs) != 2 {
		return fmt.Errorf("want 2 Jobs (work, merge), got %d", len(o.Jobs))
	}
	work, merge := o.Jobs[0], o.Jobs[1]
	if !strings.HasSuffix(merge.Name, "-merge") {
		work, merge = merge, work
	}
	cms := map[string]*corev1.ConfigMap{}
	for _, cm := range o.ConfigMaps {
		cms[cm.Name] = cm
	}

	ws := work.Spec
	if ws.CompletionMode == nil || *ws.CompletionMode != batchv1.IndexedCompletion {
		bad("work Job: completionMode must be Indexed")
	}
	if ws.Completions == nil || int(*ws.Completions) != shards {
		bad("work Job: completions %v, want shards = %d", ws.Completions, shards)
	}
	if ws.Parallelism == nil || *ws.Parallelism < 1 || ws.Completions == nil || *ws.Parallelism > *ws.Completions {
		bad("work Job: parallelism must be in [1, completions]")
	} else if mode == "load" && *ws.Parallelism != *ws.Completions {
		bad("load Job: parallelism %d must equal completions %d", *ws.Parallelism, *ws.Completions)
	}
	if ws.BackoffLimitPerIndex == nil || *ws.BackoffLimitPerIndex < 0 {
		bad("work Job: backoffLimitPerIndex must be set and ≥ 0")
	}
	if ws.PodFailurePolicy != nil {
		for i, r := range ws.PodFailurePolicy.Rules {
			if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
				bad("work Job: podFailurePolicy.rules[%d]: exactly one of onExitCodes, onPodConditions", i)
			}
			if r.OnExitCodes != nil && r.OnExitCodes.ContainerName != nil && *r.OnExitCodes.ContainerName != "stormsim" {
				bad("work Job: podFailurePolicy.rules[%d]: container %q does not exist", i, *r.OnExitCodes.ContainerName)
			}
		}
	}
	for _, job := range []*batchv1.Job{work, merge} {
		errs = append(errs, checkPod(job, cms)...)
	}
	c := work.Spec.Template.Spec.Containers
	if len(c) == 1 {
		args := c[0].Args
		if len(args) < 2 || args[0] != mode {
			bad("work Job: args %q must start with the mode %s", args, mode)
		} else if target := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--target") }); target != (args[1] != ScenarioDir+"/"+ScenarioKey) {
			bad("work Job: args %q: the scenario argument must be given unless load drives a --target", args)
		}
		if !slices.Contains(args, "--shard-from-env") {
			bad("work Job: args must include --shard-from-env")
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c[0].Env {
			env[e.Name] = e
		}
		if e, ok := env[shard.CountEnv]; !ok || e.Value != fmt.Sprint(shards) {
			bad("work Job: env %s must be %d, got %q", shard.CountEnv, shards, e.Value)
		}
		if e, ok := env[shard.IndexEnv]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
			e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			bad("work Job: env %s must come from the completion-index annotation", shard.IndexEnv)
		}
		// Every $(VAR) in args must be declared in env, or the kubelet
		// leaves it unexpanded.
		for _, a := range args {
			for rest := a; strings.Contains(rest, "$("); {
				_, after, _ := strings.Cut(rest, "$(")
				name, tail, ok := strings.Cut(after, ")")
				if !ok {
					break
				}
				if _, ok := env[name]; !ok {
					bad("work Job: arg %q uses $(%s), which env does not declare", a, name)
				}
				rest = tail
			}
		}
		if mode == "load" && shards > 1 && !slices.Contains(args, "--start-at") {
			bad("load Job with %d shards: args must include --start-at", shards)
		}
	}
	mc := merge.Spec.Template.Spec.Containers
	if len(mc) == 1 {
		args := mc[0].Args
		i := slices.Index(args, "--shards")
		if len(args) == 0 || args[0] != "merge" || i < 0 || i+1 >= len(args) || args[i+1] != fmt.Sprint(shards) {
			bad("merge Job: args %q must be merge --shards %d ...", args, shards)
		}
	}
	if merge.Spec.CompletionMode != nil && *merge.Spec.CompletionMode == batchv1.IndexedCompletion {
		bad("merge Job must not be Indexed")
	}
	return errors.Join(errs...)
}

// checkPod checks a Job's pod template: restartPolicy, the one container's
// resources, and that mounts, volumes and the ConfigMaps they name agree.
func checkPod(job *batchv1.Job, cms map[string]*corev1.ConfigMap) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("Job %s: "+format, append([]any{job.Name}, args...)...))
	}
	if len(job.Name) == 0 || len(job.Name) > 63 {
		bad("name must be 1..63 characters")
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		bad("restartPolicy %q, want Never (required by backoffLimitPerIndex and podFailurePolicy)", pod.RestartPolicy)
	}
	for k, v := range job.Labels {
		if job.Spec.Template.Labels[k] != v {
			bad("pod template lacks the Job's label %s=%s", k, v)
		}
	}
	if len(pod.Containers) != 1 {
		bad("want one container, got %d", len(pod.Containers))
		return errs
	}
	c := pod.Containers[0]
	if c.Name != "stormsim" || c.Image == "" {
		bad("container must be named stormsim and have an image")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := c.Resources.Requests[r]
		if !ok || q.Sign() <= 0 {
			bad("container requests no %s", r)
		}
		if l, ok := c.Resources.Limits[r]; ok && l.Cmp(q) < 0 {
			bad("%s limit %v below request %v", r, l.String(), q.String())
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		bad("container has no memory limit")
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		if _, dup := vols[v.Name]; dup {
			bad("volume %s declared twice", v.Name)
		}
		vols[v.Name] = v
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			bad("mount %s at %s has no volume", m.Name, m.MountPath)
		}
		if !strings.HasPrefix(m.MountPath, "/") {
			bad("mount %s: path %q is not absolute", m.Name, m.MountPath)
		}
		mounted[m.Name] = true
	}
	for name, v := range vols {
		if !mounted[name] {
			bad("volume %s is never mounted", name)
		}
		if v.ConfigMap != nil {
			cm, ok := cms[v.ConfigMap.Name]
			if !ok {
				bad("volume %s names ConfigMap %s, which is not rendered", name, v.ConfigMap.Name)
			} else if _, ok := cm.Data[ScenarioKey]; !ok {
				bad("ConfigMap %s has no %s", cm.Name, ScenarioKey)
			}
		}
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "" {
			bad("volume %s names no claim", name)
		}
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		bad("pod must run as non-root (the distroless image's nonroot user)")
	}
	return errs
}
