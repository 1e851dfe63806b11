// Command jsonpath_ref answers jsonpath cases with client-go's own engine, for
// tests/unit/test_jsonpath_differential.py. It reads a JSON array of cases on
// stdin and writes a JSON array of answers on stdout, one per case.
//
// Each case is executed as kubectl's JSONPath printer does it for the objects
// `kubectl get` handles (unstructured content): the document is decoded with
// apimachinery's JSON decoder, so integers are int64 and other numbers
// float64, then a fresh jsonpath.JSONPath is parsed and executed on it.
//
// Go randomises map iteration, and `*` and `..` walk maps in that order, so a
// case is run `runs` times and every distinct outcome is reported.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/jsonpath"
)

type request struct {
	Template     string          `json:"template"`
	Doc          json.RawMessage `json:"doc"`
	AllowMissing bool            `json:"allowMissing"`
	Mode         string          `json:"mode"` // "print" (kubectl -o jsonpath) or "columns" (custom-columns cell)
	Runs         int             `json:"runs"`
}

type outcome struct {
	Out   *string `json:"out,omitempty"`
	Bytes []byte  `json:"bytes,omitempty"` // the output exactly, base64: it may hold bytes that are not UTF-8
	Error *string `json:"error,omitempty"`
	Panic bool    `json:"panic,omitempty"`
}

// printed runs the template the way kubectl's JSONPathPrinter does.
func printed(template string, doc interface{}, allowMissing bool) (string, error) {
	j := jsonpath.New("out")
	if err := j.Parse(template); err != nil {
		return "", err
	}
	j.AllowMissingKeys(allowMissing)
	var buf bytes.Buffer
	if err := j.Execute(&buf, doc); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// column runs the template the way kubectl's custom-columns printer fills one cell.
func column(template string, doc interface{}) (string, error) {
	j := jsonpath.New("column0").AllowMissingKeys(true)
	if err := j.Parse(template); err != nil {
		return "", err
	}
	values, err := j.FindResults(doc)
	if err != nil {
		return "", err
	}
	cells := []string{}
	if len(values) == 0 || len(values[0]) == 0 {
		cells = append(cells, "<none>")
	}
	for _, row := range values {
		for _, v := range row {
			cells = append(cells, fmt.Sprint(v.Interface()))
		}
	}
	return strings.Join(cells, ","), nil
}

func run(req request) (res outcome) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			res = outcome{Error: &msg, Panic: true}
		}
	}()
	var doc interface{}
	if len(req.Doc) > 0 {
		if err := utiljson.Unmarshal(req.Doc, &doc); err != nil {
			msg := "bad document: " + err.Error()
			return outcome{Error: &msg}
		}
	}
	var out string
	var err error
	if req.Mode == "columns" {
		out, err = column(req.Template, doc)
	} else {
		out, err = printed(req.Template, doc, req.AllowMissing)
	}
	if err != nil {
		msg := err.Error()
		return outcome{Error: &msg}
	}
	return outcome{Out: &out, Bytes: []byte(out)}
}

func key(o outcome) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func main() {
	var reqs []request
	if err := json.NewDecoder(os.Stdin).Decode(&reqs); err != nil {
		fmt.Fprintln(os.Stderr, "jsonpath_ref: cannot read the cases:", err)
		os.Exit(2)
	}
	answers := make([][]outcome, len(reqs))
	for i, req := range reqs {
		runs := req.Runs
		if runs < 1 {
			runs = 1
		}
		seen := map[string]bool{}
		for n := 0; n < runs; n++ {
			o := run(req)
			if k := key(o); !seen[k] {
				seen[k] = true
				answers[i] = append(answers[i], o)
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(answers); err != nil {
		fmt.Fprintln(os.Stderr, "jsonpath_ref:", err)
		os.Exit(1)
	}
}
