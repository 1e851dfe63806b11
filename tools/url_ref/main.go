// url_ref answers how Go's net/url (what client-go and kubectl parse a kubeconfig server with)
// reads each URL of a JSON list on stdin: a JSON list on stdout, one answer per URL.
package main

import (
	"encoding/json"
	"net/url"
	"os"
)

type answer struct {
	Error    string `json:"error,omitempty"`
	Scheme   string `json:"scheme"`
	User     bool   `json:"user"`
	Host     string `json:"host"`
	Port     string `json:"port"`
	Path     string `json:"path"`
	Query    bool   `json:"query"`
	Fragment bool   `json:"fragment"`
	Opaque   bool   `json:"opaque"`
}

func main() {
	var urls []string
	if err := json.NewDecoder(os.Stdin).Decode(&urls); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	answers := make([]answer, 0, len(urls))
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			answers = append(answers, answer{Error: err.Error()})
			continue
		}
		answers = append(answers, answer{Scheme: u.Scheme, User: u.User != nil, Host: u.Hostname(), Port: u.Port(),
			Path: u.Path, Query: u.RawQuery != "" || u.ForceQuery, Fragment: u.Fragment != "" || u.RawFragment != "",
			Opaque: u.Opaque != ""})
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		os.Exit(3)
	}
}
