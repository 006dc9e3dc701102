// Package deploy holds snapq's container images (api.Dockerfile,
// worker.Dockerfile) and its Kubernetes manifests (k8s/, applied with
// kubectl apply -k). It has no Go code to import: its tests decode every
// manifest strictly into the Kubernetes API types, with no cluster, and check
// the invariants the manifests must keep against snapq's own constants
// (a worker's drain outlasts its longest job, no container runs as root,
// every SNAPQ_* variable is configured).
package deploy
