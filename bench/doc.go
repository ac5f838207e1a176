// Package bench is apprun's load tool: it drives a real apprun server (one
// it starts as a child process in a temporary directory, or one already
// running) or a 3-node cluster of them through its scenarios — create,
// read, stream, replay, run, cluster and cluster-stream — and measures
// each next to the bare substrate it sits on (JetStream writes made
// directly, a minimal net/http handler), so the figures show apprun's own
// overhead. The cluster-stream scenario's clients are child processes too
// (StreamClients): a process may hold too few descriptors for 50,000
// streams. `apprun bench` is its command line; BENCHMARKS.md holds its
// output for the project's machine. The soak, run only when named, keeps
// a 3-node cluster under a steady load for a long time, killing and
// restarting its nodes, and samples what must stay flat (soak.go).
package bench
