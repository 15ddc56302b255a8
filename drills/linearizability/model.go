package main

// The sequential specification of one operation (docs/spec.md §4) as a nondeterministic
// Porcupine model. A state is what the ledger holds for one operation_id; a step is one
// client call as the client saw it. Lease expiry is not a call: the model lets any claim by
// another token meet either a live lease (in_progress) or a lapsed one (reclaimed), unless
// the holder released it, after which only a reclaim is possible. A call whose answer never
// came (Output.Unknown) may or may not have taken effect.

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Status of the state machine; Absent is the zero value.
const (
	Absent    = ""
	Claimed   = "CLAIMED"
	Completed = "COMPLETED"
	Failed    = "FAILED"
)

// State of one operation. Comparable: the checker compares states with ==.
type State struct {
	Status    string
	Hash      string // the request hash of the first claim: another hash conflicts
	Token     string // the holder's (or the completer's, or the failer's) token fingerprint
	Epoch     int
	Released  bool // the holder released: reclaimable at once until it heartbeats
	Result    string
	Retryable bool
}

// Input is one call: its kind, the token it carried and its payload.
type Input struct {
	Kind      string `json:"kind"`
	Token     string `json:"token"`
	Hash      string `json:"hash"`
	Result    string `json:"result"`
	Retryable bool   `json:"retryable"`
}

// Output is the answer the client read, or Unknown when none came.
type Output struct {
	Unknown bool   `json:"-"`
	Status  string `json:"status"`
	Epoch   int    `json:"epoch"`
	Result  string `json:"result"`
}

// branch is one answer the state allows and the state it leads to. Epoch and Result
// are checked only when the answer carries them (want* set).
type branch struct {
	status     string
	epoch      int
	result     string
	wantEpoch  bool
	wantResult bool
	next       State
}

func same(s State, status string) branch { return branch{status: status, next: s} }

func grant(s State, in Input, status string) []branch {
	next := State{Status: Claimed, Hash: in.Hash, Token: in.Token, Epoch: s.Epoch + 1}
	if s.Hash != "" {
		next.Hash = s.Hash
	}
	// "stale": the grant happened, and another claim superseded it before the answer was
	// read (the SDK refuses a grant it no longer holds).
	return []branch{
		{status: status, epoch: next.Epoch, wantEpoch: true, next: next},
		{status: "stale", next: next},
	}
}

func claim(s State, in Input) []branch {
	if s.Status != Absent && s.Hash != in.Hash {
		return []branch{same(s, "conflict")}
	}
	switch s.Status {
	case Absent:
		return grant(s, in, "claimed")
	case Claimed:
		if s.Token == in.Token {
			return []branch{{status: "claimed", epoch: s.Epoch, wantEpoch: true, next: s}}
		}
		out := grant(s, in, "reclaimed") // the lease lapsed (or was released)
		if !s.Released {
			out = append(out, branch{status: "in_progress", epoch: s.Epoch, wantEpoch: true, next: s})
		}
		return out
	case Completed:
		return []branch{{status: "replayed", epoch: s.Epoch, result: s.Result, wantEpoch: true,
			wantResult: true, next: s}}
	default: // Failed
		if s.Retryable {
			return grant(s, in, "reclaimed")
		}
		return []branch{same(s, "failed")}
	}
}

// byHolder answers a call that needs the holder's token: fenced for any other token,
// "an outcome naming the state" for the holder's token on a decided state.
func byHolder(s State, in Input, held func() []branch) []branch {
	if s.Token != in.Token || s.Status == Absent {
		return []branch{same(s, "stale")}
	}
	if s.Status == Claimed {
		return held()
	}
	return []branch{same(s, "state")}
}

func complete(s State, in Input) []branch {
	if s.Status == Completed && s.Token == in.Token {
		if s.Result == in.Result { // a duplicate complete answers the stored result
			return []branch{{status: "completed", epoch: s.Epoch, result: s.Result,
				wantEpoch: true, wantResult: true, next: s}}
		}
		return []branch{same(s, "conflict")}
	}
	return byHolder(s, in, func() []branch {
		next := State{Status: Completed, Hash: s.Hash, Token: s.Token, Epoch: s.Epoch, Result: in.Result}
		return []branch{{status: "completed", epoch: s.Epoch, result: in.Result, wantEpoch: true,
			wantResult: true, next: next}}
	})
}

func heartbeat(s State, in Input) []branch {
	return byHolder(s, in, func() []branch {
		next := s
		next.Released = false // a heartbeat takes back an earlier release
		return []branch{same(next, "ok")}
	})
}

func fail(s State, in Input) []branch {
	return byHolder(s, in, func() []branch {
		next := State{Status: Failed, Hash: s.Hash, Token: s.Token, Epoch: s.Epoch, Retryable: in.Retryable}
		return []branch{same(next, "failed")}
	})
}

func release(s State, in Input) []branch {
	return byHolder(s, in, func() []branch {
		next := s
		next.Released = true
		return []branch{same(next, "released")}
	})
}

func branches(s State, in Input) []branch {
	switch in.Kind {
	case "claim":
		return claim(s, in)
	case "complete":
		return complete(s, in)
	case "heartbeat":
		return heartbeat(s, in)
	case "fail":
		return fail(s, in)
	case "release":
		return release(s, in)
	}
	return nil // an unknown kind matches nothing: the history is refused
}

func (b branch) matches(out Output) bool {
	return b.status == out.Status && (!b.wantEpoch || b.epoch == out.Epoch) &&
		(!b.wantResult || b.result == out.Result)
}

// Step is the model's step: every state the call can lead to with the answer it had.
func Step(state, input, output interface{}) []interface{} {
	s, in, out := state.(State), input.(Input), output.(Output)
	var next []interface{}
	if out.Unknown {
		next = append(next, s) // it never took effect
	}
	for _, b := range branches(s, in) {
		if out.Unknown || b.matches(out) {
			next = append(next, b.next)
		}
	}
	return next
}

// Spec is the model, partitioned by operation (see main.go for the partitioning).
func Spec(partition func([]porcupine.Operation) [][]porcupine.Operation) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []interface{} { return []interface{}{State{}} },
		Step:      Step,
		Equal:     func(a, b interface{}) bool { return a.(State) == b.(State) },
		DescribeOperation: func(input, output interface{}) string {
			in, out := input.(Input), output.(Output)
			answer := "?"
			if !out.Unknown {
				answer = fmt.Sprintf("%s e%d %s", out.Status, out.Epoch, short(out.Result))
			}
			return fmt.Sprintf("%s(%s) -> %s", in.Kind, short(in.Token), answer)
		},
		DescribeState: func(state interface{}) string {
			s := state.(State)
			if s.Status == Absent {
				return "absent"
			}
			return fmt.Sprintf("%s %s e%d released=%t %s", s.Status, short(s.Token), s.Epoch,
				s.Released, short(s.Result))
		},
	}
	return nm.ToModel()
}

func short(text string) string {
	if len(text) > 12 {
		return text[:12]
	}
	return text
}
