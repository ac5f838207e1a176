package apps

import (
	"context"
	"io"
)

// What a user's source costs to read is bounded three ways, so that a run
// that is canceled or times out gives its worker back at once, and a page
// built to be slow to parse cannot take the node's CPU or memory:
//
//   - in bytes, by the fetch (Env.SourceMaxBytes);
//   - in work, by the parse: linear time over the bytes, with caps on the
//     elements, text and depth that the superlinear part (readability's
//     scoring, htmldoc.go) is given, and ctx checked every few KiB;
//   - in CPU at once, by the parse slots (Env.Parses): at most that many
//     parses run on the node at a time, whoever asked for them.
//
// A run whose context ends while its parse runs does not wait for it: the
// parse goes on, bounded, in its slot, and ends soon after.

// bounded runs parse in one of env's parse slots and returns its result,
// or ctx's error as soon as ctx ends (waiting for a slot or parsing).
func bounded[T any](ctx context.Context, env *Env, parse func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	select {
	case env.parseSlots <- struct{}{}:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-env.parseSlots }()
		v, err := parse(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() != nil {
			return zero, ctx.Err() // the parse stopped because ctx ended
		}
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// ctxReader reads r in pieces of at most readChunk bytes, and fails with
// ctx's error once ctx has ended: a parser that reads from it (x/net/html,
// gofeed, encoding/xml) stops within a piece of a cancel.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

const readChunk = 4 << 10

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > readChunk {
		p = p[:readChunk]
	}
	return c.r.Read(p)
}
