// Package bench is apprun's load tool: it drives a real apprun server (one
// it starts as a child process in a temporary directory, or one already
// running) through five scenarios — create, read, stream, replay and run —
// and measures each next to the bare substrate it sits on (JetStream writes
// made directly, a minimal net/http handler), so the figures show apprun's
// own overhead. `apprun bench` is its command line; BENCHMARKS.md holds its
// output for the project's machine.
package bench
