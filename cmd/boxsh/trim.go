package main

import (
	"context"
	"encoding/json"

	"github.com/boxsh/boxsh/rpc"
)

// trimming is a Backend that tells the front's memory trimmer when each
// call begins and ends, so that the front returns its memory once idle.
// It wraps the backend because rpc knows nothing of memory, over stdio,
// HTTP, the REST twin and tasks alike.
type trimming struct {
	rpc.Backend
	trimmer activity // an *idle.Trimmer
}

// activity is told when calls begin and end.
type activity interface {
	Begin()
	End()
}

func (b trimming) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	b.trimmer.Begin()
	err := b.Backend.Start(ctx, name, args, func(result json.RawMessage, err error) {
		defer b.trimmer.End() // once the answer is on its way
		done(result, err)
	})
	if err != nil {
		b.trimmer.End()
	}
	return err
}
