// Package bench is apprun's load tool: it drives a real apprun server (one
// it starts as a child process in a temporary directory, or one already
// running) through its scenarios — create, read, stream, replay, run and
// cluster — and measures each next to the bare substrate it sits on
// (JetStream writes made directly, a minimal net/http handler), so the
// figures show apprun's own overhead. The soak, run only when named, keeps
// a 3-node cluster under a steady load for a long time, killing and
// restarting its nodes, and samples what must stay flat (soak.go).
// `apprun bench` is its command line; BENCHMARKS.md holds its output for
// the project's machine.
package bench
