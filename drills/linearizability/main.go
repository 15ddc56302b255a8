// Command oncelog-linearizability checks a history of ledger client calls, per operation,
// against the model of docs/spec.md §4 with Porcupine.
//
//	oncelog-linearizability [-html out.html] [-timeout 60s] history.json
//
// It prints one JSON object: operations checked, unknown ones, and whether the history is
// linearizable. Exit status 0 when it is, 1 when it is not (the visualization is written to
// -html), 2 when the input cannot be read or the check timed out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// record is one call as the recorder wrote it (drills/history/record.py).
type record struct {
	Client int     `json:"client"`
	Op     string  `json:"op"`
	Input  Input   `json:"input"`
	Output *Output `json:"output"` // null: the answer never came
	Call   int64   `json:"call"`
	Return *int64  `json:"return"`
}

type history struct {
	Operations []record `json:"operations"`
}

type verdict struct {
	Operations   int    `json:"operations"`
	Unknown      int    `json:"unknown"`
	Partitions   int    `json:"partitions"`
	Linearizable *bool  `json:"linearizable"`
	Result       string `json:"result"`
	Visual       string `json:"visualization,omitempty"`
}

func load(path string) ([]porcupine.Operation, map[string]int, int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, 0, err
	}
	var h history
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, nil, 0, err
	}
	keys := map[string]int{}
	ops := make([]porcupine.Operation, 0, len(h.Operations))
	unknown := 0
	for _, r := range h.Operations {
		if _, ok := keys[r.Op]; !ok {
			keys[r.Op] = len(keys)
		}
		out, ret := Output{Unknown: true}, int64(math.MaxInt64)
		if r.Output != nil && r.Return != nil {
			out, ret = *r.Output, *r.Return
		} else {
			unknown++
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client, Input: r.Input, Call: r.Call,
			Output: out, Return: ret, Metadata: r.Op})
	}
	return ops, keys, unknown, nil
}

func byOperation(ops []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		key := op.Metadata.(string)
		i, ok := index[key]
		if !ok {
			i = len(parts)
			index[key] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

func main() {
	html := flag.String("html", "", "where to write the visualization of a failing history")
	timeout := flag.Duration("timeout", 60*time.Second, "give up (exit 2) after this long")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: oncelog-linearizability [-html out.html] history.json")
		os.Exit(2)
	}
	ops, keys, unknown, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot read %s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	model := Spec(byOperation)
	result, info := porcupine.CheckOperationsVerbose(model, ops, *timeout)
	v := verdict{Operations: len(ops), Unknown: unknown, Partitions: len(keys), Result: string(result)}
	code := 0
	switch result {
	case porcupine.Ok:
		yes := true
		v.Linearizable = &yes
	case porcupine.Illegal:
		no := false
		v.Linearizable, code = &no, 1
		if *html != "" {
			if err := porcupine.VisualizePath(model, info, *html); err == nil {
				v.Visual = *html
			}
		}
	default:
		code = 2
	}
	line, _ := json.Marshal(v)
	fmt.Println(string(line))
	os.Exit(code)
}
