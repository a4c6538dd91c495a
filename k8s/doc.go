// Package k8s renders the Kubernetes manifests that run one stormsim
// experiment on a cluster: a ConfigMap holding the scenario, an optional
// PersistentVolumeClaim for results, an Indexed Job whose pods each run one
// shard of the work, and a merge Job that joins the shards' outputs into the
// result a single run would have written.
//
// # Shape of a run
//
// Pod I of the work Job runs
//
//	stormsim MODE /etc/stormsim/scenario.yaml --shard-from-env \
//	    --out /results/NAME/shard-$(JOB_COMPLETION_INDEX) ARGS...
//
// Kubernetes sets JOB_COMPLETION_INDEX in every pod of an Indexed Job, the
// manifest sets STORMSIM_SHARDS to the completion count, and the kubelet
// expands $(JOB_COMPLETION_INDEX) in the arguments, so no shell is needed
// and the image can be distroless. The merge Job runs
//
//	stormsim merge --shards N --wait TIMEOUT /results/NAME --out /results/NAME/merged
//
// which waits until every shard directory is complete, then merges them.
//
// Render prints the whole run as one YAML stream (what 'stormsim k8s render'
// prints); Documents returns the objects one by one, which is how
// deploy/kubernetes/MODE/ is produced from DeployOptions and kept in step
// with the templates by the tests. The templates live in templates/ and are
// embedded with text/template; every string value goes through a quoting
// function and the scenario through a literal block that decodes to the
// file's exact bytes.
//
// # Determinism
//
// Render is a pure function of its Options: no clock, no randomness, no
// map iteration in the output. The same options give the same bytes, so
// rendered manifests can be kept under version control and diffed.
//
// # Zero values and concurrency
//
// Options' zero fields take the documented defaults (see Options). Render
// holds no state and is safe for concurrent use.
package k8s
