// The Go peer of bench/http/authorize.ts: the stack Consul's agent uses (net/http, encoding/json)
// answering the authorize decision from a map of the same 10,000 intentions' exact sources (a
// wildcard-only caller gets the default), with the agent's body bytes. Run on one core:
// GOMAXPROCS=1 authorize-go <port>
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
)

type request struct{ Target, Namespace, ClientCertURI, ClientCertSerial string }

type result struct {
	Authorized bool
	Reason     string
}

func main() {
	allow := map[string]bool{} // "srcNS/src => dstNS/dst": allowed; src-0..7 per destination, actions alternating
	for d := 0; d < 1000; d++ {
		ns := fmt.Sprintf("ns-%d", d%10)
		for s := 0; s < 8; s++ {
			allow[fmt.Sprintf("%s/src-%d => %s/svc-%d", ns, s, ns, d)] = s%2 == 0
		}
	}
	actions := map[bool]string{true: "ALLOW", false: "DENY"}
	http.HandleFunc("/v1/agent/connect/authorize", func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		uri := strings.Split(req.ClientCertURI, "/") // spiffe://<domain>/ns/<ns>/dc/<dc>/svc/<name>
		if len(uri) != 9 || uri[3] != "ns" || uri[7] != "svc" {
			http.Error(w, "ClientCertURI not a valid Service identifier", http.StatusBadRequest)
			return
		}
		key := uri[4] + "/" + uri[8] + " => " + req.Namespace + "/" + req.Target
		res := result{true, "Default behavior configured by ACLs"}
		if ok, found := allow[key]; found {
			res = result{ok, fmt.Sprintf("Matched L4 intention: %s (Precedence: 9, Action: %s)", key, actions[ok])}
		}
		body, _ := json.Marshal(res)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Svc-Default-ACL-Policy", "allow")
		w.Write(body)
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
