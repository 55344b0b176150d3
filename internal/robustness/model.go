package robustness

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// A Kind is what an operation asks of the server.
type Kind uint8

// The operations clients send.
const (
	Create Kind = iota + 1 // POST /plants
	Delete                 // DELETE /plants/{id}
	Read                   // GET /plants/{id}
)

func (k Kind) String() string {
	switch k {
	case Create:
		return "create"
	case Delete:
		return "delete"
	case Read:
		return "read"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// A Plant is what the store holds under one id: nothing, or a name and a
// tag. It is comparable, so that states can be compared with ==.
type Plant struct {
	Present bool
	Name    string
	Tag     string
	HasTag  bool // an absent tag differs from "tag": ""
}

func (p Plant) String() string {
	switch {
	case !p.Present:
		return "absent"
	case p.HasTag:
		return fmt.Sprintf("%q tag %q", p.Name, p.Tag)
	}
	return fmt.Sprintf("%q", p.Name)
}

// An Input is one operation as a client sent it. Name, Tag and HasTag are
// those of the plant a Create sends.
type Input struct {
	Kind    Kind
	ID      int64
	Name    string
	Tag     string
	HasTag  bool
	Address string // the instance it was sent to, for the visualization
}

// plant is the plant a Create asks to store.
func (in Input) plant() Plant {
	return Plant{Present: true, Name: in.Name, Tag: in.Tag, HasTag: in.HasTag}
}

// A Result classifies an answer.
type Result uint8

// The answers the model knows.
const (
	// OK is a 200 to a create or a read, a 204 to a delete.
	OK Result = iota + 1
	// Conflict is error 409 to a create: the id was taken.
	Conflict
	// NotFound is error 404 to a delete or a read: the id was free.
	NotFound
	// Unavailable is error 503: nothing of the request was kept.
	Unavailable
	// Unknown is an answer that does not say whether a change took
	// effect: error 504 or 500, a broken connection, a timeout.
	Unknown
)

func (r Result) String() string {
	switch r {
	case OK:
		return "ok"
	case Conflict:
		return "conflict"
	case NotFound:
		return "not found"
	case Unavailable:
		return "unavailable"
	case Unknown:
		return "unknown"
	}
	return "Result(" + strconv.Itoa(int(r)) + ")"
}

// An Output is what an operation got back. Plant is what a Read answered
// OK returned; Detail says more for the visualization (the error code, the
// transport error).
type Output struct {
	Result Result
	Plant  Plant
	Detail string
}

// Model is the sequential specification of the store, one plant per id:
// the state of a partition is the [Plant] stored under its id, absent at
// first.
//
//   - A create answered OK needs the id free and stores the plant; one
//     answered Conflict needs it taken and changes nothing.
//   - A delete answered OK needs the id taken and frees it; one answered
//     NotFound needs it free.
//   - A read answered OK needs exactly the plant it returned stored; one
//     answered NotFound needs the id free.
//   - Unavailable (error 503) changes nothing, whatever the state.
//   - Unknown may have taken effect or not: both next states are possible.
//     A create of unknown outcome on a taken id changes nothing either way
//     (it would have been refused), and so does a delete on a free id.
//
// The model is nondeterministic, made deterministic by porcupine's power
// set construction, so that an operation of unknown outcome costs the
// checker one more possible state rather than a search over where it took
// effect.
var Model = (&porcupine.NondeterministicModel{
	Partition: partitionByID,
	Init:      func() []any { return []any{Plant{}} },
	Step:      step,
	Hash: func(state any) uint64 {
		p := state.(Plant)
		if !p.Present {
			return 0
		}
		h := fnv.New64a()
		h.Write([]byte(p.Name))
		h.Write([]byte{0})
		h.Write([]byte(p.Tag))
		if p.HasTag {
			h.Write([]byte{1})
		}
		return h.Sum64()
	},
	DescribeOperation: describeOperation,
	DescribeState:     func(state any) string { return state.(Plant).String() },
}).ToModel()

func step(state, input, output any) []any {
	s, in, out := state.(Plant), input.(Input), output.(Output)
	if out.Result == Unavailable {
		return []any{s}
	}
	switch in.Kind {
	case Create:
		switch out.Result {
		case OK:
			if !s.Present {
				return []any{in.plant()}
			}
		case Conflict:
			if s.Present {
				return []any{s}
			}
		case Unknown:
			if s.Present {
				return []any{s}
			}
			return []any{s, in.plant()}
		}
	case Delete:
		switch out.Result {
		case OK:
			if s.Present {
				return []any{Plant{}}
			}
		case NotFound:
			if !s.Present {
				return []any{s}
			}
		case Unknown:
			if s.Present {
				return []any{s, Plant{}}
			}
			return []any{s}
		}
	case Read:
		switch out.Result {
		case OK:
			if s == out.Plant {
				return []any{s}
			}
		case NotFound:
			if !s.Present {
				return []any{s}
			}
		case Unknown:
			return []any{s}
		}
	}
	return nil
}

// partitionByID splits a history into one history per id: operations on
// different ids never affect each other, so the whole is linearizable if
// and only if every part is.
func partitionByID(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[int64]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		id := op.Input.(Input).ID
		i, ok := index[id]
		if !ok {
			i = len(parts)
			index[id] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

func (in Input) String() string {
	if in.Kind == Create {
		return fmt.Sprintf("create(%d, %s)", in.ID, in.plant())
	}
	return fmt.Sprintf("%s(%d)", in.Kind, in.ID)
}

func describeOperation(input, output any) string {
	in, out := input.(Input), output.(Output)
	s := in.String()
	switch {
	case in.Kind == Read && out.Result == OK:
		s += " → " + out.Plant.String()
	default:
		s += " → " + out.Result.String()
	}
	if out.Detail != "" {
		s += " (" + out.Detail + ")"
	}
	if in.Address != "" {
		s += " @" + in.Address
	}
	return s
}
